"""Running extremes, order statistics, binary search and data-dependent writes → library
calls (torch's kernels, dialects/prim_scan.py and prim_indexing.py), so that every
index chosen among equal elements is eager's own:

- cummax, cummin → prim.cummax / prim.cummin;
- kthvalue, median(.dim), nanmedian(.dim), mode → prim.kthvalue / prim.median /
  prim.mode, which keep the reduced dim (a reshape drops it without keepdim); the
  full medians take the line of all elements, as eager does;
- searchsorted.Tensor, bucketize.Tensor → prim.searchsorted, after eager's conversion
  of both operands to their common dtype; a `sorter` is applied first as a gather
  (the binary search then compares the same elements eager's does);
- index_reduce, put, nonzero_static → prim.index_reduce / prim.put / prim.nonzero_static.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue

from strata.dialects.aten import AtenOp
from strata.dialects.prim_indexing import GatherOp, IndexReduceOp, NonzeroStaticOp, PutOp
from strata.dialects.prim_scan import CumminOp, CummaxOp, KthvalueOp, MedianOp, ModeOp, SearchsortedOp
from strata.dialects.types import is_float, numel, sym
from strata.passes.decompositions.builder import Decline, PrimBuilder, promote, tensor_of, wrap_dim
from strata.passes.decompositions.rules import decomposes


def _pair(b: PrimBuilder, op) -> list[SSAValue]:
    """The (values, indices) of a keepdim library op, reshaped to the aten op's results."""
    v = b.add(op)
    i = op.results[1]
    out = [b.out(0), b.out(1)]
    return [b.reshape(v, out[0].dims), b.reshape(i, out[1].dims)]


@decomposes("aten::cummax", "aten::cummin")
def cumulative_extreme(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    x = b.arg("self")
    d = wrap_dim(b.arg("dim"), tensor_of(x).rank)
    cls = CummaxOp if op.overload_name == "aten::cummax" else CumminOp
    return _pair(b, cls(x, d))


def _line_dim(b: PrimBuilder, default: int | None = None) -> tuple[SSAValue, int]:
    x = b.arg("self")
    t = tensor_of(x)
    dim = b.arg("dim")
    d = wrap_dim(default if dim is None else dim, t.rank)
    if t.rank and sym(t.dims[d]) == 0:
        raise Decline("an order statistic of an empty dim is an error in eager")
    return x, d


@decomposes("aten::kthvalue")
def kthvalue(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    x, d = _line_dim(b, -1)
    return _pair(b, KthvalueOp(x, b.arg("k"), d))


@decomposes("aten::median.dim", "aten::nanmedian.dim")
def median_dim(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    x, d = _line_dim(b)
    return _pair(b, MedianOp(x, d, op.overload_name == "aten::nanmedian.dim"))


@decomposes("aten::mode")
def mode(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    x, d = _line_dim(b, -1)
    return _pair(b, ModeOp(x, d))


@decomposes("aten::median", "aten::nanmedian")
def median_all(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x = b.arg("self")
    t = tensor_of(x)
    n = numel(t.dims)
    if sym(n) == 0:
        if not is_float(t.dtype):
            raise Decline("the median of an empty integer tensor is an error in eager")
        return b.full([], float("nan"), t.dtype)  # eager's median of nothing
    line = b.reshape(x, [n]) if t.rank != 1 else x
    m = b.add(MedianOp(line, 0, op.overload_name == "aten::nanmedian"))
    return b.reshape(m, [])


def _searchsorted(b: PrimBuilder, seq: SSAValue, values: SSAValue, right: bool, out_int32: bool) -> SSAValue:
    common = promote("DEFAULT", seq, values)[1]  # eager's result_type of the two
    if common == "i1":
        raise Decline("searchsorted of bool")
    seq, values = b.convert(seq, common), b.convert(values, common)
    s, v = tensor_of(seq), tensor_of(values)
    if s.rank == 0:
        raise Decline("searchsorted in a 0-d sequence")
    return b.add(SearchsortedOp(seq, values, right, out_int32))


@decomposes("aten::searchsorted.Tensor")
def searchsorted(op: AtenOp, b: PrimBuilder) -> SSAValue:
    seq, values = b.arg("sorted_sequence"), b.arg("self")
    right, side = bool(b.arg("right")), b.arg("side")
    if side is not None:
        if side not in ("left", "right") or (side == "left" and right):
            raise Decline(f"searchsorted with side={side!r}, right={right}")
        right = side == "right"
    sorter = b.arg("sorter")
    if sorter is not None:
        s = tensor_of(seq)
        if tensor_of(sorter).dims != s.dims or s.rank == 0:
            raise Decline("a sorter not of the sequence's shape")
        if sym(s.dims[-1]) != 0:  # (an empty sequence is its own sorted order)
            seq = b.add(GatherOp(seq, sorter, s.rank - 1))
    return _searchsorted(b, seq, values, right, bool(b.arg("out_int32")))


@decomposes("aten::bucketize.Tensor")
def bucketize(op: AtenOp, b: PrimBuilder) -> SSAValue:
    boundaries = b.arg("boundaries")
    if tensor_of(boundaries).rank != 1:
        raise Decline("bucketize needs 1-d boundaries")
    return _searchsorted(b, boundaries, b.arg("self"), bool(b.arg("right")), bool(b.arg("out_int32")))


@decomposes("aten::index_reduce")
def index_reduce(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x, index, src = b.arg("self"), b.arg("index"), b.arg("source")
    t = tensor_of(x)
    d = wrap_dim(b.arg("dim"), t.rank)
    include_self = b.arg("include_self")
    include_self = True if include_self is None else bool(include_self)
    if tensor_of(src).dtype != t.dtype or tensor_of(index).dtype not in ("i64", "i32") or tensor_of(src).rank != t.rank:
        raise Decline("index_reduce with mixed dtypes or ranks (an error in eager)")
    return b.add(IndexReduceOp(x, index, src, d, b.arg("reduce"), include_self))


@decomposes("aten::put")
def put(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x, index, src = b.arg("self"), b.arg("index"), b.arg("source")
    if tensor_of(index).dtype != "i64" or tensor_of(src).dtype != tensor_of(x).dtype:
        raise Decline("put with non-i64 indices or a source of another dtype (an error in eager)")
    return b.add(PutOp(x, index, src, bool(b.arg("accumulate"))))


@decomposes("aten::nonzero_static")
def nonzero_static(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x = b.arg("self")
    fill = b.arg("fill_value")
    return b.add(NonzeroStaticOp(x, b.out().dims[0], -1 if fill is None else int(fill)))
