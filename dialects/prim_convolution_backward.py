"""prim's convolution gradients: library calls, like prim.convolution.

`prim.convolution_backward_input` is the gradient of a convolution's input (a
transposed convolution of the output's gradient with the weight), and
`prim.convolution_backward_weight` that of its weight (a correlation of the input with
the output's gradient). `prim.convolution_backward` is both at once, from one library
call: what a backward graph needs where the input and the weight both take gradients
(a layer past the first), at half the calls' host cost. Besides these a convolution's
backward needs only a sum (the bias's gradient). Like prim.convolution they run as
library calls (oneDNN or cuDNN, through torch's convolution_backward), never in
generated kernels, and take the forward convolution's stride, padding, dilation and
groups (not transposed).

Imported by dialects/prim.py, which registers these ops in the prim dialect.
"""

from __future__ import annotations

from collections.abc import Sequence

from strata.dialects.lazy_torch import torch
from xdsl.dialects.builtin import ArrayAttr, DenseArrayBase, IntegerAttr, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from strata.dialects.prim import TensorOp, _convolution_dims, dims_attr, dims_of, ints_attr, ints_of, same_dims
from strata.dialects.prim_linalg import check_result_types
from strata.dialects.types import Dim, TensorType, concrete, sym


def _params_attrs(stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int], groups: int) -> dict:
    return {
        "stride": ints_attr(stride),
        "padding": ints_attr(padding),
        "dilation": ints_attr(dilation),
        "groups": IntegerAttr(groups, i64),
    }


class ConvolutionGradientOp(TensorOp):
    """A gradient of the convolution of x [n, c, *spatial] with w [c_out, c / groups,
    *kernel], from the gradient of its output; the forward's parameters."""

    stride = prop_def(DenseArrayBase)
    padding = prop_def(DenseArrayBase)
    dilation = prop_def(DenseArrayBase)
    groups = prop_def(IntegerAttr)

    def params(self) -> tuple[list[int], list[int], list[int], int]:
        """stride, padding, dilation, groups: torch.ops.aten.convolution_backward's."""
        return (
            list(ints_of(self.stride)), list(ints_of(self.padding)), list(ints_of(self.dilation)),
            self.groups.value.data,
        )

    def check_convolution(self, g: TensorType, x: Sequence[Dim], w: Sequence[Dim]) -> None:
        """That g can be the gradient of the output of convolving dims x with w."""
        spatial = len(x) - 2
        *params, groups = self.params()
        if (
            spatial < 1
            or len(w) != len(x)
            or g.rank != len(x)
            or any(len(p) != spatial for p in params)
            or groups < 1
            or not same_dims([x[1]], [sym(w[1]) * groups])
        ):
            raise VerifyException(f"{self.name}: no convolution of {list(x)} with {list(w)} in {groups} groups gives {g}")
        expected = _convolution_dims(x, w, *params)
        if not same_dims(g.dims, expected):
            raise VerifyException(f"{self.name}: the output's gradient is {g}, the convolution's output has dims {expected}")

    def _backward(self, grad: torch.Tensor, x: torch.Tensor, w: torch.Tensor, mask: list[bool]):
        stride, padding, dilation, groups = self.params()
        return torch.ops.aten.convolution_backward(
            grad, x, w, None, stride, padding, dilation, False, [0] * len(stride), groups, mask,
        )


class OneGradientOp(ConvolutionGradientOp):
    """One gradient; `shape` is the dims of the tensor whose gradient it is, `other`
    the other of x and w."""

    grad = operand_def()
    other = operand_def()
    result = result_def()
    shape = prop_def(ArrayAttr)

    def __init__(
        self, grad: SSAValue, other: SSAValue, shape: Sequence[Dim],
        stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int], groups: int,
    ):
        props = {"shape": dims_attr(shape), **_params_attrs(stride, padding, dilation, groups)}
        super().__init__(operands=[grad, other], result_types=[grad.type.with_dims(shape)], properties=props)

    def infer_type(self) -> Attribute:
        return self.tensor(self.grad).with_dims(dims_of(self.shape))

    def forward_dims(self) -> tuple[tuple[Dim, ...], tuple[Dim, ...]]:
        """The dims of the forward convolution's x and w."""
        raise NotImplementedError

    def verify_(self) -> None:
        g, o = self.tensor(self.grad), self.tensor(self.other)
        x, w = self.forward_dims()
        if g.dtype != o.dtype:
            raise VerifyException(f"{self.name}: the output's gradient is {g}, the other operand {o}")
        self.check_convolution(g, x, w)
        super().verify_()


@irdl_op_definition
class ConvolutionBackwardInputOp(OneGradientOp):
    """The gradient of x (dims `shape`) from the output's gradient and w (`other`)."""

    name = "prim.convolution_backward_input"

    def forward_dims(self) -> tuple[tuple[Dim, ...], tuple[Dim, ...]]:
        return dims_of(self.shape), self.tensor(self.other).dims

    def reference(self, grad: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        # Only x's sizes matter: an expanded element stands in for it.
        x = grad.new_zeros(()).expand(concrete(dims_of(self.shape)))
        return self._backward(grad, x, w, [True, False, False])[0]


@irdl_op_definition
class ConvolutionBackwardWeightOp(OneGradientOp):
    """The gradient of w (dims `shape`) from the output's gradient and x (`other`)."""

    name = "prim.convolution_backward_weight"

    def forward_dims(self) -> tuple[tuple[Dim, ...], tuple[Dim, ...]]:
        return self.tensor(self.other).dims, dims_of(self.shape)

    def reference(self, grad: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        w = grad.new_zeros(()).expand(concrete(dims_of(self.shape)))
        return self._backward(grad, x, w, [False, True, False])[1]


@irdl_op_definition
class ConvolutionBackwardOp(ConvolutionGradientOp):
    """The gradients of x and of w (results `grad_x`, `grad_w`, typed as x and w) from
    the output's gradient, x and w, in one call."""

    name = "prim.convolution_backward"
    grad = operand_def()
    x = operand_def()
    w = operand_def()
    grad_x = result_def()
    grad_w = result_def()

    def __init__(
        self, grad: SSAValue, x: SSAValue, w: SSAValue,
        stride: Sequence[int], padding: Sequence[int], dilation: Sequence[int], groups: int,
    ):
        props = _params_attrs(stride, padding, dilation, groups)
        super().__init__(operands=[grad, x, w], result_types=[x.type, w.type], properties=props)

    def expected_types(self) -> list[TensorType]:
        return [self.tensor(self.x), self.tensor(self.w)]

    def infer_type(self) -> Attribute:
        return self.expected_types()[0]

    def verify_(self) -> None:
        g, x, w = self.tensor(self.grad), self.tensor(self.x), self.tensor(self.w)
        if not g.dtype == x.dtype == w.dtype:
            raise VerifyException(f"{self.name}: operands of one dtype, got {g}, {x} and {w}")
        self.check_convolution(g, x.dims, w.dims)
        check_result_types(self, self.expected_types())

    def reference(self, grad: torch.Tensor, x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        grad_x, grad_w, _ = self._backward(grad, x, w, [True, True, False])
        return grad_x, grad_w


CONVOLUTION_BACKWARD_OPS = (ConvolutionBackwardInputOp, ConvolutionBackwardWeightOp, ConvolutionBackwardOp)
