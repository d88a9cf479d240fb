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
- `prim.check_index`: an index a user gave, checked against the size of the dim it
  indexes as eager checks it, and wrapped (negative indices count from the end where
  eager allows them). The decompositions put one on every user index a gather reads
  (advanced indexing, index_select, embedding, gather, embedding_bag, and index_put's
  scatter), so that an index out of range raises `IndexOutOfBounds` as in eager.

Bounds. A gather index must lie in [0, size of the dim). The gather itself clamps its
index into the dim (it never reads outside the tensor): positions computed by the
decompositions (padding, flips, pooling windows) may fall outside it where a mask hides
them. A user's index goes through `prim.check_index` first, which raises where eager
does (fusion turns it into a check in the kernel, passes/fusion/gather.py; the option
`index_bounds_checks` leaves only the wrap). `prim.scatter` runs torch's kernel, which
raises on an out-of-range index (on a GPU: a device-side assert).
"""

from __future__ import annotations

from strata.dialects.lazy_torch import torch
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, StringAttr, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import MemoryWriteEffect
from xdsl.utils.exceptions import VerifyException

from strata.errors import IndexOutOfBounds, out_of_bounds_message  # noqa: F401  (re-exported)
from strata.dialects.prim import PrimOp, TensorOp, dims_attr, dims_of, element_dtype, same_dims, types_match
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
    element of the dim: a user's index is checked before (prim.check_index)."""

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


@irdl_op_definition
class CheckIndexOp(PrimOp):
    """`index` checked against `size` (the size of dim `dim` of the tensor it indexes,
    one value per element, of index's type), as eager checks it: with `wraps`, valid
    indices lie in [-size, size) and a negative one counts from the end; else in
    [0, size). The result is the index wrapped into [0, size); an index out of range
    raises IndexOutOfBounds naming it, the dim, the size and `indexing_op` (the aten op
    that indexed). On scalars inside a kernel body the same: a back end checks every
    element it computes, and its result stays within [0, size) where the index is out
    of range (the kernel's loads stay inside the tensor; its results are never seen,
    since the launch raises)."""

    name = "prim.check_index"
    # An effect, as prim.assert_scalar has: an unused check still raises, so dead-code
    # elimination keeps it (and the fuse pass gives it a kernel of its own where no
    # gather computes each of its elements: passes/fusion/checked_indices.py).
    traits = traits_def(MemoryWriteEffect())
    index = operand_def()
    size = operand_def()
    result = result_def()
    dim = prop_def(IntegerAttr)
    wraps = prop_def(IntegerAttr)
    indexing_op = prop_def(StringAttr)

    def __init__(self, index: SSAValue, size: SSAValue, dim: int, wraps: bool, indexing_op: str):
        super().__init__(
            operands=[index, size],
            result_types=[index.type],
            properties={
                "dim": IntegerAttr(dim, i64),
                "wraps": IntegerAttr(int(wraps), i64),
                "indexing_op": StringAttr(indexing_op),
            },
        )

    @property
    def wraps_negative(self) -> bool:
        return bool(self.wraps.value.data)

    def infer_type(self) -> Attribute:
        return self.index.type

    def verify_(self) -> None:
        if not types_match(self.index.type, self.size.type) or element_dtype(self.index.type) != "i64":
            raise VerifyException(f"prim.check_index: index and size are i64 of one type, got {self.index.type}, {self.size.type}")
        if self.wraps.value.data not in (0, 1):
            raise VerifyException(f"prim.check_index: wraps is 0 or 1, got {self.wraps.value.data}")
        super().verify_()

    def message(self, index: int | None, size: int) -> str:
        return out_of_bounds_message(index, self.dim.value.data, size, self.indexing_op.data)

    def reference(self, index, size):
        index, size = torch.broadcast_tensors(index, size)
        low = -size if self.wraps_negative else torch.zeros_like(size)
        bad = (index < low) | (index >= size)
        if bool(bad.any()):
            raise IndexOutOfBounds(self.message(int(index[bad][0]), int(size[bad][0])))
        return torch.where(index < 0, index + size, index) if self.wraps_negative else index.clone()


INDEXING_OPS = (GatherOp, ScatterOp, IndexReduceOp, PutOp, NonzeroStaticOp, CheckIndexOp)
