"""Scans and sorts → prim.cumsum / cumprod / sort / topk, library calls (torch's kernels,
dialects/prim_scan.py). Scans convert first to the result dtype (eager's `dtype=`,
and integers and bools scanning in i64), as eager does."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue

from strata.dialects.aten import AtenOp
from strata.dialects.prim_scan import CumprodOp, CumsumOp, SortOp, TopkOp
from strata.passes.decompositions.builder import Decline, PrimBuilder, tensor_of, wrap_dim
from strata.passes.decompositions.rules import decomposes


@decomposes("aten::cumsum", "aten::cumprod")
def scan(op: AtenOp, b: PrimBuilder) -> SSAValue:
    out = b.out()
    x = b.convert(b.arg("self"), out.dtype)
    t = tensor_of(x)
    if out.dtype == "i1":
        raise Decline("a scan of bool into bool")
    if t.rank == 0:
        return x
    d = wrap_dim(b.arg("dim"), t.rank)
    cls = CumsumOp if op.overload_name == "aten::cumsum" else CumprodOp
    return b.add(cls(x, d))


@decomposes("aten::sort", "aten::sort.stable")
def sort(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    x = b.arg("self")
    t = tensor_of(x)
    d = wrap_dim(b.arg("dim") if b.arg("dim") is not None else -1, t.rank)
    descending = bool(b.arg("descending"))
    stable = bool(b.arg("stable")) if op.overload_name == "aten::sort.stable" else False
    s = b.add(SortOp(x, d, descending, stable))
    return [s, s.owner.results[1]]


@decomposes("aten::topk")
def topk(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    x = b.arg("self")
    t = tensor_of(x)
    d = wrap_dim(b.arg("dim"), t.rank)
    k = b.out(0).dims[d] if t.rank else 1
    largest = b.arg("largest")
    largest = True if largest is None else bool(largest)
    ordered = b.arg("sorted")
    ordered = True if ordered is None else bool(ordered)
    s = b.add(TopkOp(x, k, d, largest, ordered))
    return [s, s.owner.results[1]]
