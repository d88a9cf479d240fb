"""prim's scans and sorts: ops whose every element depends on a whole line of the input.

They are library calls, run as torch's kernels through each op's reference (the path
prim.mm takes): a kernel-level scan or sort (a parallel prefix, a bitonic network)
is not within the kernel dialect's reach yet, and torch's kernels are the fast path
on both devices.

- `prim.cumsum`, `prim.cumprod`: inclusive scans along `dim`, in the operand's dtype
  (decompositions convert first, as eager does with `dtype=`).
- `prim.sort`: values and i64 indices along `dim` (`stable` as torch's).
- `prim.topk`: the `k` largest (or smallest) along `dim`, values and i64 indices.
"""

from __future__ import annotations

from typing import ClassVar

import torch
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
    FN: ClassVar = staticmethod(torch.cumsum)


@irdl_op_definition
class CumprodOp(ScanOp):
    """Running products along `dim`: torch.cumprod, in the operand's dtype."""

    name = "prim.cumprod"
    FN: ClassVar = staticmethod(torch.cumprod)


class TwoResultOp(TensorOp):
    """Values (the operand's dtype) and i64 indices, of one shape."""

    def expected_types(self) -> tuple[TensorType, TensorType]:
        raise NotImplementedError

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


SCAN_OPS = (CumsumOp, CumprodOp, SortOp, TopkOp)
