"""prim.convolution: a forward convolution, plain or transposed, as a library call.

It runs as torch's own convolution routine (oneDNN or ATen's slow path on the CPU,
cuDNN on CUDA), which is also its reference. An optional bias is an operand of the
call, so that it is added before the result is rounded: eager's f16/bf16 kernels add
it inside the convolution, and a product rounded to f16 and then added to rounds
twice (as prim.addmm does for a linear layer). Integer convolutions (i64) run ATen's
slow path, as eager does.

Imported by dialects/prim.py, which registers the op in the prim dialect.
"""

from __future__ import annotations

from collections.abc import Sequence

import sympy
from strata.dialects.lazy_torch import torch
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, UnitAttr, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, opt_operand_def, opt_prop_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from strata.dialects.prim import TensorOp, ints_attr, ints_of, same_dims
from strata.dialects.types import Dim, sym


@irdl_op_definition
class ConvolutionOp(TensorOp):
    """A convolution of x [n, c, *spatial] with w [c_out, c / groups, *kernel], or
    with `transposed` one of x with w [c, c_out / groups, *kernel] (the gradient of a
    convolution with respect to its input, widened by `output_padding` at the end of
    each spatial dim), with torch.convolution's stride, padding and dilation per
    spatial dim, plus an optional bias [c_out] per output channel."""

    name = "prim.convolution"
    x = operand_def()
    w = operand_def()
    bias = opt_operand_def()
    result = result_def()
    stride = prop_def(DenseArrayBase)
    padding = prop_def(DenseArrayBase)
    dilation = prop_def(DenseArrayBase)
    groups = prop_def(IntegerAttr)
    transposed = opt_prop_def(UnitAttr)
    output_padding = opt_prop_def(DenseArrayBase)

    def __init__(
        self, x: SSAValue, w: SSAValue, stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int],
        groups: int, bias: SSAValue | None = None, transposed: bool = False, output_padding: Sequence[int] | None = None,
    ):
        props: dict[str, Attribute] = {
            "stride": ints_attr(stride),
            "padding": ints_attr(padding),
            "dilation": ints_attr(dilation),
            "groups": IntegerAttr(groups, i64),
        }
        if transposed:
            props["transposed"] = UnitAttr()
            props["output_padding"] = ints_attr(output_padding or [0] * len(stride))
        dims = convolution_dims(
            x.type.dims, w.type.dims, stride, padding, dilation, groups, transposed, output_padding or [0] * len(stride)
        )
        operands = [x, w, [bias] if bias is not None else []]
        super().__init__(operands=operands, result_types=[x.type.with_dims(dims)], properties=props)

    def is_transposed(self) -> bool:
        return self.transposed is not None

    def params(self) -> tuple[list[int], list[int], list[int], bool, list[int], int]:
        """stride, padding, dilation, transposed, output_padding, groups: torch.convolution's."""
        stride = list(ints_of(self.stride))
        out_pad = list(ints_of(self.output_padding)) if self.output_padding is not None else [0] * len(stride)
        return (
            stride, list(ints_of(self.padding)), list(ints_of(self.dilation)),
            self.is_transposed(), out_pad, self.groups.value.data,
        )

    def infer_type(self) -> Attribute:
        x, w = self.tensor(self.x), self.tensor(self.w)
        stride, padding, dilation, transposed, out_pad, groups = self.params()
        return x.with_dims(convolution_dims(x.dims, w.dims, stride, padding, dilation, groups, transposed, out_pad))

    def verify_(self) -> None:
        x, w = self.tensor(self.x), self.tensor(self.w)
        spatial = x.rank - 2
        stride, padding, dilation, transposed, out_pad, groups = self.params()
        channels = w.dims[0] if transposed else sym(w.dims[1]) * groups
        if (
            spatial < 1
            or w.rank != x.rank
            or x.dtype != w.dtype
            or any(len(a) != spatial for a in (stride, padding, dilation, out_pad))
            or groups < 1
            or not same_dims([x.dims[1]], [channels])
            or (self.output_padding is not None and not transposed)
        ):
            raise VerifyException(f"{self.name}: cannot convolve {x} with {w} in {groups} groups")
        if self.bias is not None:
            bias = self.tensor(self.bias)
            out_channels = self.infer_type().dims[1]
            if bias.dtype != x.dtype or bias.rank != 1 or not same_dims(bias.dims, [out_channels]):
                raise VerifyException(f"{self.name}: the bias {bias} is not one value per output channel of {x}")
        super().verify_()

    def reference(self, x, w, bias=None):
        stride, padding, dilation, transposed, out_pad, groups = self.params()
        return torch.convolution(x, w, bias, stride, padding, dilation, transposed, out_pad, groups)


def convolution_dims(
    x: Sequence[Dim], w: Sequence[Dim], stride, padding, dilation, groups: int = 1,
    transposed: bool = False, output_padding: Sequence[int] | None = None,
) -> list[Dim]:
    """[n, c_out, *spatial]: each spatial size (in + 2p - d(k - 1) - 1) // s + 1, or
    transposed (in - 1)·s - 2p + d(k - 1) + output_padding + 1 with c_out = w[1]·groups."""
    if not transposed:
        return _convolution_dims(x, w, stride, padding, dilation)
    out: list[Dim] = [x[0], _dim(sym(w[1]) * groups)]
    for size, k, s, p, d, op in zip(x[2:], w[2:], stride, padding, dilation, output_padding or [0] * len(stride)):
        out.append(_dim((sym(size) - 1) * s - 2 * p + d * (sym(k) - 1) + op + 1))
    return out


def _convolution_dims(x: Sequence[Dim], w: Sequence[Dim], stride, padding, dilation) -> list[Dim]:
    """[n, c_out, *spatial]: each spatial size (in + 2p - d(k - 1) - 1) // s + 1."""
    out: list[Dim] = [x[0], w[0]]
    for size, k, s, p, d in zip(x[2:], w[2:], stride, padding, dilation):
        out.append(_dim(sympy.floor((sym(size) + 2 * p - d * (sym(k) - 1) - 1) / s) + 1))
    return out


def _dim(e) -> Dim:
    e = sympy.sympify(e)
    return int(e) if e.is_Integer else e
