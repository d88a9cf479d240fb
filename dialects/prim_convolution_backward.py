"""prim's convolution gradients: library calls, like prim.convolution.

`prim.convolution_backward_input` is the gradient of a convolution's input (a
transposed convolution of the output's gradient with the weight), and
`prim.convolution_backward_weight` that of its weight (a correlation of the input with
the output's gradient). They are what the backward graph of a convolution needs
besides a sum (the bias's gradient); like prim.convolution, they run as library calls
(oneDNN, through torch's convolution_backward), never in generated kernels, and take
the forward convolution's stride, padding, dilation and groups (not transposed).

Imported by dialects/prim.py, which registers these ops in the prim dialect.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, IntegerAttr, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from strata.dialects.prim import TensorOp, _convolution_dims, dims_attr, dims_of, ints_attr, ints_of, same_dims
from strata.dialects.types import Dim, concrete, sym


class ConvolutionBackwardOp(TensorOp):
    """A gradient of the convolution of x [n, c, *spatial] with w [c_out, c / groups,
    *kernel]; `shape` is the dims of the tensor whose gradient it is."""

    grad = operand_def()
    other = operand_def()
    result = result_def()
    shape = prop_def(ArrayAttr)
    stride = prop_def(DenseArrayBase)
    padding = prop_def(DenseArrayBase)
    dilation = prop_def(DenseArrayBase)
    groups = prop_def(IntegerAttr)

    def __init__(
        self, grad: SSAValue, other: SSAValue, shape: Sequence[Dim],
        stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int], groups: int,
    ):
        props = {
            "shape": dims_attr(shape),
            "stride": ints_attr(stride),
            "padding": ints_attr(padding),
            "dilation": ints_attr(dilation),
            "groups": IntegerAttr(groups, i64),
        }
        super().__init__(operands=[grad, other], result_types=[grad.type.with_dims(shape)], properties=props)

    def infer_type(self) -> Attribute:
        return self.tensor(self.grad).with_dims(dims_of(self.shape))

    def forward_dims(self) -> tuple[tuple[Dim, ...], tuple[Dim, ...]]:
        """The dims of the forward convolution's x and w."""
        raise NotImplementedError

    def verify_(self) -> None:
        g, o = self.tensor(self.grad), self.tensor(self.other)
        x, w = self.forward_dims()
        spatial = len(x) - 2
        groups = self.groups.value.data
        params = [ints_of(a) for a in (self.stride, self.padding, self.dilation)]
        if (
            spatial < 1
            or len(w) != len(x)
            or g.rank != len(x)
            or g.dtype != o.dtype
            or any(len(p) != spatial for p in params)
            or groups < 1
            or not same_dims([x[1]], [sym(w[1]) * groups])
        ):
            raise VerifyException(f"{self.name}: no convolution of {list(x)} with {list(w)} in {groups} groups gives {g}")
        expected = _convolution_dims(x, w, *params)
        if not same_dims(g.dims, expected):
            raise VerifyException(f"{self.name}: the output's gradient is {g}, the convolution's output has dims {expected}")
        super().verify_()

    def _gradient(self, grad: torch.Tensor, x: torch.Tensor, w: torch.Tensor, which: int) -> torch.Tensor:
        spatial = grad.dim() - 2
        mask = [which == 0, which == 1, False]
        out = torch.ops.aten.convolution_backward(
            grad, x, w, None, list(ints_of(self.stride)), list(ints_of(self.padding)), list(ints_of(self.dilation)),
            False, [0] * spatial, self.groups.value.data, mask,
        )
        return out[which]


@irdl_op_definition
class ConvolutionBackwardInputOp(ConvolutionBackwardOp):
    """The gradient of x (dims `shape`) from the output's gradient and w (`other`)."""

    name = "prim.convolution_backward_input"

    def forward_dims(self) -> tuple[tuple[Dim, ...], tuple[Dim, ...]]:
        return dims_of(self.shape), self.tensor(self.other).dims

    def reference(self, grad: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        # Only x's sizes matter: an expanded element stands in for it.
        x = grad.new_zeros(()).expand(concrete(dims_of(self.shape)))
        return self._gradient(grad, x, w, 0)


@irdl_op_definition
class ConvolutionBackwardWeightOp(ConvolutionBackwardOp):
    """The gradient of w (dims `shape`) from the output's gradient and x (`other`)."""

    name = "prim.convolution_backward_weight"

    def forward_dims(self) -> tuple[tuple[Dim, ...], tuple[Dim, ...]]:
        return self.tensor(self.other).dims, dims_of(self.shape)

    def reference(self, grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        w = grad.new_zeros(()).expand(concrete(dims_of(self.shape)))
        return self._gradient(grad, x, w, 1)


CONVOLUTION_BACKWARD_OPS = (ConvolutionBackwardInputOp, ConvolutionBackwardWeightOp)
