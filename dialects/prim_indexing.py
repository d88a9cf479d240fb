"""prim's indexing family: reads and writes at positions held in another tensor.

- `prim.gather` (torch.gather's meaning, one dim) is computed inside kernels: the
  kernel reads the index, clamps it into the dim and loads at it (a data-dependent
  `kernel.load`, passes/fusion/gather.py). index_select, embedding, advanced indexing
  (aten.index.Tensor), padding, flips and scatters of slices all decompose into it.
- `prim.scatter` (torch.scatter / scatter_reduce) writes at data-dependent positions,
  where several sources may meet one element: it stays a library call (torch's kernel,
  through the op's reference), the path prim.mm takes. scatter_add, index_put and the
  backward of embedding and of max pooling decompose into it.

Bounds. A gather index must lie in [0, size of the dim): decompositions wrap negative
indices first, as eager does. An index outside that range is an error in eager; a
compiled gather reads the nearest element of the dim instead (it never reads outside
the tensor, and raises nothing). `prim.scatter` runs torch's kernel, which raises on an
out-of-range index (on a GPU: a device-side assert).
"""

from __future__ import annotations

import torch
from xdsl.dialects.builtin import IntegerAttr, StringAttr, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from strata.dialects.prim import TensorOp, same_dims
from strata.dialects.types import TensorType

INDEX_DTYPES = ("i64", "i32")
SCATTER_REDUCE = ("none", "sum", "prod", "mean", "amax", "amin")


def _clamped(index: torch.Tensor, size: int) -> torch.Tensor:
    return index.to(torch.int64).clamp(0, max(size - 1, 0))


def _fits_under(index: TensorType, x: TensorType, dim: int) -> bool:
    """Whether every dim of `index` but `dim` is at most x's (torch.gather's rule);
    symbolic dims must be equal."""
    for i, (a, b) in enumerate(zip(index.dims, x.dims)):
        if i == dim:
            continue
        if isinstance(a, int) and isinstance(b, int):
            if a > b:
                return False
        elif not same_dims([a], [b]):
            return False
    return True


@irdl_op_definition
class GatherOp(TensorOp):
    """`result[p] = x[p with p[dim] replaced by index[p]]`: torch.gather. The result has
    index's shape, x's dtype; index has x's rank, an integer dtype, and in every dim
    but `dim` at most x's size. An index outside [0, x.shape[dim]) reads the nearest
    element of the dim (eager raises)."""

    name = "prim.gather"
    x = operand_def()
    index = operand_def()
    result = result_def()
    dim = prop_def(IntegerAttr)

    def __init__(self, x: SSAValue, index: SSAValue, dim: int):
        super().__init__(
            operands=[x, index],
            result_types=[index.type.with_dtype(x.type.dtype)],
            properties={"dim": IntegerAttr(dim, i64)},
        )

    @property
    def axis(self) -> int:
        return self.dim.value.data

    def infer_type(self) -> Attribute:
        return self.tensor(self.index).with_dtype(self.tensor(self.x).dtype)

    def verify_(self) -> None:
        x, index = self.tensor(self.x), self.tensor(self.index)
        d = self.axis
        if index.rank != x.rank or not 0 <= d < max(x.rank, 1):
            raise VerifyException(f"prim.gather: index {index} must have the rank of {x}, and dim {d} be one of its dims")
        if index.dtype not in INDEX_DTYPES:
            raise VerifyException(f"prim.gather: indices are i64 or i32, got {index.dtype}")
        if not _fits_under(index, x, d):
            raise VerifyException(f"prim.gather: index {index} is larger than {x} outside dim {d}")
        if x.rank and x.dims[d] == 0:
            raise VerifyException("prim.gather: no element to read in an empty dim")
        super().verify_()

    def reference(self, x, index):
        if x.dim() == 0:
            return x.clone()
        return torch.gather(x, self.axis, _clamped(index, x.shape[self.axis]))


@irdl_op_definition
class ScatterOp(TensorOp):
    """x with src's elements written (or, by `reduce`, combined) at dim `dim` of the
    positions in index: torch.scatter (reduce "none") and torch.scatter_reduce
    ("sum", "prod", "mean", "amax", "amin"; `include_self` as torch's). Index and src
    have x's rank, index is at most src's size in each dim, and at most x's outside
    `dim`. A library call: torch's kernel (which raises on an index out of range)."""

    name = "prim.scatter"
    x = operand_def()
    index = operand_def()
    src = operand_def()
    result = result_def()
    dim = prop_def(IntegerAttr)
    reduce = prop_def(StringAttr)
    include_self = prop_def(IntegerAttr)

    def __init__(self, x: SSAValue, index: SSAValue, src: SSAValue, dim: int, reduce: str = "none", include_self: bool = True):
        super().__init__(
            operands=[x, index, src],
            result_types=[x.type],
            properties={
                "dim": IntegerAttr(dim, i64),
                "reduce": StringAttr(reduce),
                "include_self": IntegerAttr(int(include_self), i64),
            },
        )

    def infer_type(self) -> Attribute:
        return self.tensor(self.x)

    def verify_(self) -> None:
        x, index, src = self.tensor(self.x), self.tensor(self.index), self.tensor(self.src)
        d = self.dim.value.data
        if not (index.rank == x.rank == src.rank) or not 0 <= d < max(x.rank, 1):
            raise VerifyException(f"prim.scatter: x {x}, index {index} and src {src} need one rank, dim {d} within it")
        if index.dtype not in INDEX_DTYPES or src.dtype != x.dtype:
            raise VerifyException(f"prim.scatter: needs integer indices and src of x's dtype, got {index}, {src}")
        if self.reduce.data not in SCATTER_REDUCE:
            raise VerifyException(f"prim.scatter: reduce is one of {SCATTER_REDUCE}, got {self.reduce.data}")
        if not _fits_under(index, x, d) or not _fits_under(index, src, -1):
            raise VerifyException(f"prim.scatter: index {index} is larger than x {x} or src {src}")
        super().verify_()

    def reference(self, x, index, src):
        d, reduce = self.dim.value.data, self.reduce.data
        index = index.to(torch.int64)
        if reduce == "none":
            return torch.scatter(x, d, index, src)
        return torch.scatter_reduce(x, d, index, src, reduce, include_self=bool(self.include_self.value.data))


INDEXING_OPS = (GatherOp, ScatterOp)
