"""Running a convolution's gradients (dialects/prim_convolution_backward.py) in a
compiled graph: one torch.ops.aten.convolution_backward call per op, with its
arguments worked out at construction, and its results in the memory format the
kernels that read them were compiled for (a copy only where the library's differs).

prim.convolution_backward gives both gradients from the real x and w. The ops of one
gradient pass the library a stand-in for the tensor whose gradient they compute, of
which the library reads only the sizes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from xdsl.ir import Operation

from strata.dialects.prim import dims_of
from strata.dialects.prim_convolution_backward import ConvolutionBackwardInputOp, ConvolutionBackwardOp
from strata.dialects.types import DTYPES, Dim

Step = Callable[[list, dict], None]
SizeFn = Callable[[Sequence[Dim]], Callable[[dict[str, int]], Sequence[int]]]

_BACKWARD = torch.ops.aten.convolution_backward.default
_BOTH, _INPUT, _WEIGHT = [True, True, False], [True, False, False], [False, True, False]


def convolution_backward_step(
    op: Operation, slot: Callable[[Any], int], device: torch.device,
    memory_format: torch.memory_format, size_fn: SizeFn,
) -> Step:
    """The runtime step of one of the ops; `slot` gives an SSA value's register,
    `size_fn` a function from the shape symbols' values to concrete dims."""
    stride, padding, dilation, groups = op.params()
    no_padding = [0] * len(stride)
    results = [slot(v) for v in op.results]
    if isinstance(op, ConvolutionBackwardOp):
        grad, x, w = (slot(v) for v in op.operands)
        grad_x, grad_w = results

        def both(regs: list, env: dict) -> None:
            gx, gw, _ = _BACKWARD(
                regs[grad], regs[x], regs[w], None, stride, padding, dilation, False, no_padding, groups, _BOTH
            )
            regs[grad_x] = gx.contiguous(memory_format=memory_format)
            regs[grad_w] = gw.contiguous(memory_format=memory_format)

        return both

    grad, other = (slot(v) for v in op.operands)
    (result,) = results
    dims = dims_of(op.shape)
    stand_in = _stand_in(dims, size_fn(dims), DTYPES[op.grad.type.dtype], device)
    if isinstance(op, ConvolutionBackwardInputOp):

        def input_gradient(regs: list, env: dict) -> None:
            g = regs[grad]
            out = _BACKWARD(
                g, stand_in(g, env), regs[other], None, stride, padding, dilation, False, no_padding, groups, _INPUT
            )[0]
            regs[result] = out.contiguous(memory_format=memory_format)

        return input_gradient

    def weight_gradient(regs: list, env: dict) -> None:
        g = regs[grad]
        out = _BACKWARD(
            g, regs[other], stand_in(g, env), None, stride, padding, dilation, False, no_padding, groups, _WEIGHT
        )[1]
        regs[result] = out.contiguous(memory_format=memory_format)

    return weight_gradient


def _stand_in(
    dims: Sequence[Dim], sizes: Callable[[dict[str, int]], Sequence[int]], dtype: torch.dtype, device: torch.device
) -> Callable[[torch.Tensor, dict], torch.Tensor]:
    """A tensor of dims `dims` whose values the call never reads, on the device of the
    output's gradient. cuDNN reads only its sizes: one element expanded, made once.
    Everywhere else (oneDNN and ATen's own kernels on the CPU, a 1-d convolution
    anywhere) ATen makes it contiguous first, which would copy an expanded one in
    full: there an uninitialized tensor, an allocation that nothing writes."""
    if device.type != "cuda" or len(dims) < 4:
        return lambda g, env: torch.empty(sizes(env), dtype=dtype, device=g.device)
    static = all(isinstance(d, int) for d in dims)
    kept: list[torch.Tensor] = []

    def expanded(g: torch.Tensor, env: dict) -> torch.Tensor:
        if not kept:
            one = torch.empty((), dtype=dtype, device=g.device)
            kept.append(one.expand(sizes(env)) if static else one)
        return kept[0] if static else kept[0].expand(sizes(env))

    return expanded
