"""prim's indexing family: reads and writes at positions held in another tensor.

- `prim.gather` (torch.gather's meaning, one dim) is computed inside kernels: the
  kernel reads the index, clamps it into the dim and loads at it (a data-dependent
  `kernel.load`, passes/fusion/gather.py). index_select, embedding, advanced indexing
  (aten.index.Tensor), padding, flips and scatters of slices all decompose into it.
- `prim.scatter` (torch.scatter / scatter_reduce) writes at data-dependent positions,
  where several sources may meet one element: it stays a library call (torch's kernel,
  through the op's reference), the path prim.mm takes. scatter_add, index_put and the
  backward of embedding and of max pooling decompose into it.
- `prim.index_reduce`, `prim.put`, `prim.nonzero_static`: torch.index_reduce, torch.put
  and torch.nonzero_static, library calls likewise.

Bounds. A gather index must lie in [0, size of the dim): decompositions wrap negative
indices first, as eager does. An index outside that range is an error in eager; a
compiled gather reads the nearest element of the dim instead (it never reads outside
the tensor, and raises nothing). `prim.scatter` runs torch's kernel, which raises on an
out-of-range index (on a GPU: a device-side assert).
"""

from __future__ import annotations

import torch
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, StringAttr, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from strata.dialects.prim import TensorOp, dims_attr, dims_of, same_dims
from strata.dialects.types import Dim, TensorType

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


INDEX_REDUCE = ("prod", "mean", "amax", "amin")


@irdl_op_definition
class IndexReduceOp(TensorOp):
    """x with each slice `i` of src along `dim` combined (by `reduce`: "prod", "mean",
    "amax", "amin"; `include_self` as torch's) into slice index[i] of x:
    torch.index_reduce. index is 1-d, integer, one entry per slice of src; src has x's
    rank and dims but `dim`. A library call: torch's kernel."""

    name = "prim.index_reduce"
    x = operand_def()
    index = operand_def()
    src = operand_def()
    result = result_def()
    dim = prop_def(IntegerAttr)
    reduce = prop_def(StringAttr)
    include_self = prop_def(IntegerAttr)

    def __init__(self, x: SSAValue, index: SSAValue, src: SSAValue, dim: int, reduce: str, include_self: bool):
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
        if src.rank != x.rank or not 0 <= d < max(x.rank, 1) or index.rank > 1:
            raise VerifyException(f"prim.index_reduce: x {x}, 1-d index {index} and src {src}, dim {d} within x's rank")
        if index.dtype not in INDEX_DTYPES or src.dtype != x.dtype:
            raise VerifyException(f"prim.index_reduce: needs integer indices and src of x's dtype, got {index}, {src}")
        if self.reduce.data not in INDEX_REDUCE:
            raise VerifyException(f"prim.index_reduce: reduce is one of {INDEX_REDUCE}, got {self.reduce.data}")
        if x.rank and not same_dims([s for i, s in enumerate(src.dims) if i != d], [s for i, s in enumerate(x.dims) if i != d]):
            raise VerifyException(f"prim.index_reduce: src {src} must have the dims of x {x} outside dim {d}")
        super().verify_()

    def reference(self, x, index, src):
        return torch.index_reduce(x, self.dim.value.data, index, src, self.reduce.data,
                                  include_self=bool(self.include_self.value.data))


@irdl_op_definition
class PutOp(TensorOp):
    """x with src's elements written (added, with `accumulate`) at the flat positions in
    index (negative ones count from the end): torch.put. index and src have one number
    of elements. A library call: torch's kernel (which raises on an index out of range)."""

    name = "prim.put"
    x = operand_def()
    index = operand_def()
    src = operand_def()
    result = result_def()
    accumulate = prop_def(IntegerAttr)

    def __init__(self, x: SSAValue, index: SSAValue, src: SSAValue, accumulate: bool):
        super().__init__(operands=[x, index, src], result_types=[x.type],
                         properties={"accumulate": IntegerAttr(int(accumulate), i64)})

    def infer_type(self) -> Attribute:
        return self.tensor(self.x)

    def verify_(self) -> None:
        from strata.dialects.types import numel

        x, index, src = self.tensor(self.x), self.tensor(self.index), self.tensor(self.src)
        if index.dtype != "i64" or src.dtype != x.dtype:
            raise VerifyException(f"prim.put: needs i64 indices and src of x's dtype, got {index}, {src}")
        if not same_dims([numel(index.dims)], [numel(src.dims)]):
            raise VerifyException(f"prim.put: index {index} and src {src} need one number of elements")
        super().verify_()

    def reference(self, x, index, src):
        return torch.put(x, index, src, accumulate=bool(self.accumulate.value.data))


@irdl_op_definition
class NonzeroStaticOp(TensorOp):
    """The i64 coordinates of x's nonzero elements in row-major order, one row each,
    cut or padded (with `fill_value`) to `size` rows: torch.nonzero_static, of shape
    [size, rank of x]. `size` may be symbolic."""

    name = "prim.nonzero_static"
    x = operand_def()
    result = result_def()
    size = prop_def(Attribute)
    fill_value = prop_def(IntegerAttr)

    def __init__(self, x: SSAValue, size: Dim, fill_value: int):
        super().__init__(
            operands=[x],
            result_types=[TensorType([size, x.type.rank], "i64")],
            properties={"size": dims_attr([size]).data[0], "fill_value": IntegerAttr(fill_value, i64)},
        )

    @property
    def rows(self) -> Dim:
        return dims_of(ArrayAttr([self.size]))[0]

    def infer_type(self) -> Attribute:
        return TensorType([self.rows, self.tensor(self.x).rank], "i64")

    def reference(self, x):
        from strata.dialects.types import concrete

        (size,) = concrete([self.rows])
        return torch.nonzero_static(x, size=size, fill_value=self.fill_value.value.data)


INDEXING_OPS = (GatherOp, ScatterOp, IndexReduceOp, PutOp, NonzeroStaticOp)
