"""prim's scans and sorts: ops whose every element depends on a whole line of the input.

They are library calls, run as torch's kernels through each op's reference (the path
prim.mm takes): a kernel-level scan or sort (a parallel prefix, a bitonic network)
is not within the kernel dialect's reach yet, and torch's kernels are the fast path
on both devices.

- `prim.cumsum`, `prim.cumprod`: inclusive scans along `dim`, in the operand's dtype
  (decompositions convert first, as eager does with `dtype=`).
- `prim.sort`: values and i64 indices along `dim` (`stable` as torch's).
- `prim.topk`: the `k` largest (or smallest) along `dim`, values and i64 indices.
- `prim.cummax`, `prim.cummin`: running extremes and their i64 positions.
- `prim.kthvalue`, `prim.median`, `prim.mode`: one order statistic per line (dim kept,
  of size 1), values and i64 indices; the index among equal elements is torch's.
- `prim.searchsorted`: binary search of values in sorted lines (torch.searchsorted).
"""

from __future__ import annotations

from typing import ClassVar

from strata.dialects.lazy_torch import torch, torch_fn
from xdsl.dialects.builtin import IntegerAttr, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from strata.dialects.prim import TensorOp, dims_attr, dims_of, types_match
from strata.dialects.types import Dim, TensorType


def _check_dim(op: TensorOp, x: TensorType, d: int) -> None:
    if not 0 <= d < max(x.rank, 1):
        raise VerifyException(f"{op.name}: dim {d} is not a dim of {x}")


class ScanOp(TensorOp):
    """An inclusive scan along `dim`; the result has the operand's type."""

    x = operand_def()
    result = result_def()
    dim = prop_def(IntegerAttr)
    FN: ClassVar = None

    def __init__(self, x: SSAValue, dim: int):
        super().__init__(operands=[x], result_types=[x.type], properties={"dim": IntegerAttr(dim, i64)})

    def infer_type(self) -> Attribute:
        return self.tensor(self.x)

    def verify_(self) -> None:
        x = self.tensor(self.x)
        _check_dim(self, x, self.dim.value.data)
        if x.dtype == "i1":
            raise VerifyException(f"{self.name}: scans of bool are taken in an integer dtype")
        super().verify_()

    def reference(self, x):
        if x.dim() == 0:
            return x.clone()
        return type(self).FN(x, self.dim.value.data, dtype=x.dtype)


@irdl_op_definition
class CumsumOp(ScanOp):
    """Running sums along `dim`: torch.cumsum, in the operand's dtype."""

    name = "prim.cumsum"
    FN: ClassVar = staticmethod(torch_fn("cumsum"))


@irdl_op_definition
class CumprodOp(ScanOp):
    """Running products along `dim`: torch.cumprod, in the operand's dtype."""

    name = "prim.cumprod"
    FN: ClassVar = staticmethod(torch_fn("cumprod"))


class TwoResultOp(TensorOp):
    """Values (the operand's dtype) and i64 indices, of one shape."""

    def expected_types(self) -> tuple[TensorType, TensorType]:
        raise NotImplementedError(f"{self.name} does not define its result types")

    def infer_type(self) -> Attribute:
        return self.expected_types()[0]

    def verify_(self) -> None:
        expected = self.expected_types()
        for r, t in zip(self.results, expected):
            if not types_match(r.type, t):
                raise VerifyException(f"{self.name}: result type {r.type} does not match the inferred {t}")


@irdl_op_definition
class SortOp(TwoResultOp):
    """Sorts along `dim`: the values and the i64 positions they came from (torch.sort;
    NaN sorts above every number)."""

    name = "prim.sort"
    x = operand_def()
    values = result_def()
    indices = result_def()
    dim = prop_def(IntegerAttr)
    descending = prop_def(IntegerAttr)
    stable = prop_def(IntegerAttr)

    def __init__(self, x: SSAValue, dim: int, descending: bool, stable: bool):
        t = x.type
        super().__init__(
            operands=[x],
            result_types=[t, t.with_dtype("i64")],
            properties={
                "dim": IntegerAttr(dim, i64),
                "descending": IntegerAttr(int(descending), i64),
                "stable": IntegerAttr(int(stable), i64),
            },
        )

    def expected_types(self) -> tuple[TensorType, TensorType]:
        x = self.tensor(self.x)
        return x, x.with_dtype("i64")

    def verify_(self) -> None:
        _check_dim(self, self.tensor(self.x), self.dim.value.data)
        super().verify_()

    def reference(self, x):
        return torch.sort(x, dim=self.dim.value.data if x.dim() else 0, descending=bool(self.descending.value.data),
                          stable=bool(self.stable.value.data))


@irdl_op_definition
class TopkOp(TwoResultOp):
    """The `k` largest (`largest` = 1) or smallest elements along `dim`, in order
    when `sorted`, and their i64 positions: torch.topk."""

    name = "prim.topk"
    x = operand_def()
    values = result_def()
    indices = result_def()
    k = prop_def(Attribute)
    dim = prop_def(IntegerAttr)
    largest = prop_def(IntegerAttr)
    sorted = prop_def(IntegerAttr)

    def __init__(self, x: SSAValue, k: Dim, dim: int, largest: bool, sorted: bool):
        t = x.type
        dims = list(t.dims)
        if dims:
            dims[dim] = k
        out = t.with_dims(dims)
        super().__init__(
            operands=[x],
            result_types=[out, out.with_dtype("i64")],
            properties={
                "k": dims_attr([k]).data[0],
                "dim": IntegerAttr(dim, i64),
                "largest": IntegerAttr(int(largest), i64),
                "sorted": IntegerAttr(int(sorted), i64),
            },
        )

    @property
    def count(self) -> Dim:
        from xdsl.dialects.builtin import ArrayAttr

        return dims_of(ArrayAttr([self.k]))[0]

    def expected_types(self) -> tuple[TensorType, TensorType]:
        x = self.tensor(self.x)
        dims = list(x.dims)
        if dims:
            dims[self.dim.value.data] = self.count
        out = x.with_dims(dims)
        return out, out.with_dtype("i64")

    def verify_(self) -> None:
        _check_dim(self, self.tensor(self.x), self.dim.value.data)
        super().verify_()

    def reference(self, x):
        from strata.dialects.types import concrete

        (k,) = concrete([self.count])
        return torch.topk(x, k, dim=self.dim.value.data if x.dim() else 0, largest=bool(self.largest.value.data),
                          sorted=bool(self.sorted.value.data))



# ---------------------------------------------------------------- running extremes, order statistics, binary search
# Library calls like prim.sort: torch's kernels, through each op's reference, so that
# the index chosen among equal elements is eager's own.


class _PairOp(TwoResultOp):
    """Values (the operand's dtype) and i64 indices of torch's kernel along `dim`;
    `KEEPS_DIM`: the result keeps x's shape (a scan), else dim `dim` becomes 1."""

    KEEPS_DIM: ClassVar[bool] = False

    def __init__(self, x: SSAValue, dim: int, **props: Attribute):
        t = x.type
        dims = list(t.dims)
        if dims and not self.KEEPS_DIM:
            dims[dim] = 1
        out = t.with_dims(dims)
        super().__init__(operands=[x], result_types=[out, out.with_dtype("i64")],
                         properties={"dim": IntegerAttr(dim, i64), **props})

    @property
    def axis(self) -> int:
        return self.dim.value.data

    def expected_types(self) -> tuple[TensorType, TensorType]:
        x = self.tensor(self.operands[0])
        dims = list(x.dims)
        if dims and not self.KEEPS_DIM:
            dims[self.axis] = 1
        out = x.with_dims(dims)
        return out, out.with_dtype("i64")

    def verify_(self) -> None:
        _check_dim(self, self.tensor(self.operands[0]), self.axis)
        super().verify_()


@irdl_op_definition
class CummaxOp(_PairOp):
    """Running maxima along `dim` and the i64 position of each (torch.cummax: the
    latest of equal maxima; NaN, once seen, stays)."""

    name = "prim.cummax"
    x = operand_def()
    values = result_def()
    indices = result_def()
    dim = prop_def(IntegerAttr)
    KEEPS_DIM: ClassVar[bool] = True

    def reference(self, x):
        return torch.cummax(x, self.axis if x.dim() else 0)


@irdl_op_definition
class CumminOp(_PairOp):
    """Running minima along `dim` and the i64 position of each: torch.cummin."""

    name = "prim.cummin"
    x = operand_def()
    values = result_def()
    indices = result_def()
    dim = prop_def(IntegerAttr)
    KEEPS_DIM: ClassVar[bool] = True

    def reference(self, x):
        return torch.cummin(x, self.axis if x.dim() else 0)


@irdl_op_definition
class KthvalueOp(_PairOp):
    """The `k`-th smallest element (1-based) along `dim`, kept as a dim of size 1, and
    its i64 position: torch.kthvalue(keepdim=True). `k` may be symbolic."""

    name = "prim.kthvalue"
    x = operand_def()
    values = result_def()
    indices = result_def()
    k = prop_def(Attribute)
    dim = prop_def(IntegerAttr)

    def __init__(self, x: SSAValue, k: Dim, dim: int):
        super().__init__(x, dim, k=dims_attr([k]).data[0])

    @property
    def count(self) -> Dim:
        from xdsl.dialects.builtin import ArrayAttr

        return dims_of(ArrayAttr([self.k]))[0]

    def reference(self, x):
        from strata.dialects.types import concrete

        (k,) = concrete([self.count])
        return torch.kthvalue(x, k, self.axis if x.dim() else 0, keepdim=True)


@irdl_op_definition
class MedianOp(_PairOp):
    """The lower median along `dim`, kept as a dim of size 1, and its i64 position:
    torch.median (a NaN in the line is the median), or torch.nanmedian where
    `ignore_nan` (NaNs left out; all-NaN lines give NaN)."""

    name = "prim.median"
    x = operand_def()
    values = result_def()
    indices = result_def()
    dim = prop_def(IntegerAttr)
    ignore_nan = prop_def(IntegerAttr)

    def __init__(self, x: SSAValue, dim: int, ignore_nan: bool):
        super().__init__(x, dim, ignore_nan=IntegerAttr(int(ignore_nan), i64))

    def reference(self, x):
        fn = torch.nanmedian if self.ignore_nan.value.data else torch.median
        return fn(x, self.axis if x.dim() else 0, keepdim=True)


@irdl_op_definition
class ModeOp(_PairOp):
    """The most frequent value along `dim` (the smallest of equally frequent ones),
    kept as a dim of size 1, and an i64 position of it: torch.mode(keepdim=True)."""

    name = "prim.mode"
    x = operand_def()
    values = result_def()
    indices = result_def()
    dim = prop_def(IntegerAttr)

    def reference(self, x):
        return torch.mode(x, self.axis if x.dim() else 0, keepdim=True)


@irdl_op_definition
class SearchsortedOp(TensorOp):
    """For each element of `values`, the position where it would be inserted into the
    innermost dim of `sorted` to keep it sorted (the first such with `right` = 0, the
    last with 1): torch.searchsorted, i64 (or i32 with `out_int32`), of values' shape.
    `sorted` is 1-d, or has values' leading dims; both have one dtype."""

    name = "prim.searchsorted"
    sorted = operand_def()
    values = operand_def()
    result = result_def()
    right = prop_def(IntegerAttr)
    out_int32 = prop_def(IntegerAttr)

    def __init__(self, sorted: SSAValue, values: SSAValue, right: bool, out_int32: bool):
        super().__init__(
            operands=[sorted, values],
            result_types=[values.type.with_dtype("i32" if out_int32 else "i64")],
            properties={"right": IntegerAttr(int(right), i64), "out_int32": IntegerAttr(int(out_int32), i64)},
        )

    def infer_type(self) -> Attribute:
        return self.tensor(self.values).with_dtype("i32" if self.out_int32.value.data else "i64")

    def verify_(self) -> None:
        from strata.dialects.prim import same_dims

        s, v = self.tensor(self.sorted), self.tensor(self.values)
        if s.dtype != v.dtype or s.dtype == "i1":
            raise VerifyException(f"{self.name}: sorted {s} and values {v} need one dtype, not bool")
        if s.rank == 0 or (s.rank > 1 and (v.rank != s.rank or not same_dims(s.dims[:-1], v.dims[:-1]))):
            raise VerifyException(f"{self.name}: sorted {s} is 1-d or has the leading dims of values {v}")
        super().verify_()

    def reference(self, sorted, values):
        return torch.searchsorted(sorted, values, out_int32=bool(self.out_int32.value.data),
                                  right=bool(self.right.value.data))


SCAN_OPS = (CumsumOp, CumprodOp, SortOp, TopkOp, CummaxOp, CumminOp, KthvalueOp, MedianOp, ModeOp, SearchsortedOp)
