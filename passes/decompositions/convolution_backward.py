"""A convolution's backward → its gradients: prim.convolution_backward where
output_mask asks for both the input's and the weight's (one library call for the
two), else prim.convolution_backward_input or prim.convolution_backward_weight
(dialects/prim_convolution_backward.py); for the bias, a sum of the output's gradient
over every dim but the channels, which fuses. A gradient that output_mask does not
ask for is a placeholder of no elements (frontend/capture/importer.py gives it that type), as
eager gives None there."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue

from strata.dialects.aten import AtenOp
from strata.dialects.prim_convolution_backward import (
    ConvolutionBackwardInputOp,
    ConvolutionBackwardOp,
    ConvolutionBackwardWeightOp,
)
from strata.dialects.types import is_float
from strata.passes.decompositions.builder import Decline, PrimBuilder, accumulator, tensor_of
from strata.passes.decompositions.convolution import _ints
from strata.passes.decompositions.rules import decomposes


@decomposes("aten::convolution_backward")
def convolution_backward(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    grad, x, w = b.arg("grad_output"), b.arg("input"), b.arg("weight")
    if b.arg("transposed"):
        raise Decline("the backward of a transposed convolution runs eagerly")
    t = tensor_of(grad)
    if not is_float(t.dtype) or not tensor_of(x).dtype == tensor_of(w).dtype == t.dtype or t.rank < 3:
        raise Decline("a convolution of floats of one dtype, [n, c, *spatial]")
    if any(_ints(b.arg("output_padding"), "output padding")):
        raise Decline("output padding")
    params = [_ints(b.arg(n), n) for n in ("stride", "padding", "dilation")]
    groups = _ints([b.arg("groups")], "groups")[0]
    wanted = list(b.arg("output_mask"))
    if wanted[0] and wanted[1]:
        both = b.add(ConvolutionBackwardOp(grad, x, w, *params, groups)).owner
        makes = (lambda: both.results[0], lambda: both.results[1])
    else:
        makes = (
            lambda: b.add(ConvolutionBackwardInputOp(grad, w, tensor_of(x).dims, *params, groups)),
            lambda: b.add(ConvolutionBackwardWeightOp(grad, x, tensor_of(w).dims, *params, groups)),
        )
    results: list[SSAValue] = []
    for i, make in enumerate((*makes, lambda: _bias_gradient(b, grad, b.out(2).dtype))):
        out = b.out(i)
        results.append(make() if wanted[i] else b.full(out.dims, 0, out.dtype))
    return results


def _bias_gradient(b: PrimBuilder, grad: SSAValue, dtype: str) -> SSAValue:
    """The sum of grad over every dim but dim 1, accumulated as eager does."""
    t = tensor_of(grad)
    total = b.reduce("sum", b.convert(grad, accumulator(t.dtype)), [0, *range(2, t.rank)])
    return b.convert(total, dtype)
