"""torch.segment_reduce (aten::segment_reduce) → masked reductions.

Along `axis`, data's L elements are cut into S consecutive segments, given by their
lengths ([*lead, S]) or their offsets ([*lead, S + 1]). Segment s of each lead
position reduces the elements j with start[s] <= j < end[s]: a reduction over all L
of data where j lies in the segment and the reduction's identity elsewhere, on a
[*lead, S, L, *trail] domain that fuses into one kernel (no scatter, no sort).

What eager's CPU kernel (ATen's SegmentReduce.cpp) gives, and this rule matches:
`initial` (or the reduction's identity: 0, 1, -inf, +inf) takes part in every segment;
max and min propagate NaN; mean is (initial + sum) / length, and an empty segment's
mean is `initial`, or NaN without one. The sums are taken in f32 for f16/bf16 data
(eager accumulates in the data's dtype: ours is the closer to the exact value).
"""

from __future__ import annotations

import math

from xdsl.ir import SSAValue

from strata.dialects import prim
from strata.dialects.prim_scan import CumsumOp
from strata.dialects.aten import AtenOp
from strata.dialects.types import is_float
from strata.passes.decompositions.builder import Decline, PrimBuilder, accumulator, tensor_of, wrap_dim
from strata.passes.decompositions.rules import decomposes

# reduction → (prim reduction, elementwise combiner with `initial`, identity)
_KINDS = {
    "sum": ("sum", "add", 0.0),
    "mean": ("sum", "add", 0.0),
    "prod": ("prod", "mul", 1.0),
    "max": ("amax", "maximum", -math.inf),
    "min": ("amin", "minimum", math.inf),
}


def _bounds(b: PrimBuilder, rank: int) -> tuple[SSAValue, SSAValue]:
    """start and end of each segment, [*lead, S], i64."""
    lengths, offsets = b.arg("lengths"), b.arg("offsets")
    if b.arg("indices") is not None or (lengths is None) == (offsets is None):
        raise Decline("segment_reduce takes exactly one of lengths and offsets")
    given = lengths if lengths is not None else offsets
    t = tensor_of(given)
    if t.dtype not in ("i64", "i32") or t.rank != rank:
        raise Decline("segment bounds of i32/i64, of rank axis + 1")
    given = b.convert(given, "i64")
    last = t.rank - 1
    if lengths is not None:
        end = b.add(CumsumOp(given, last))
        return b.ew("sub", end, given), end
    n = t.dims[last]
    lo, hi = [0] * t.rank, list(t.dims)
    start = b.add(prim.SliceOp(given, lo, [*hi[:last], n - 1], [1] * t.rank))
    end = b.add(prim.SliceOp(given, [*lo[:last], 1], hi, [1] * t.rank))
    return start, end


@decomposes("aten::segment_reduce")
def segment_reduce(op: AtenOp, b: PrimBuilder) -> SSAValue:
    data, reduce, initial = b.arg("data"), b.arg("reduce"), b.arg("initial")
    t = tensor_of(data)
    if not is_float(t.dtype) or reduce not in _KINDS:
        raise Decline(f"segment_reduce {reduce!r} of {t.dtype}")
    if t.rank == 0:
        raise Decline("segment_reduce of a 0-d tensor")
    axis = wrap_dim(b.arg("axis"), t.rank)
    length = t.dims[axis]
    if length == 0:
        raise Decline("segment_reduce over an empty axis")
    start, end = _bounds(b, axis + 1)
    segments = tensor_of(start).dims[axis]
    lead, trail = list(t.dims[:axis]), list(t.dims[axis + 1:])
    wide = [*lead, segments, length, *trail]  # the masked domain
    kind, combine, identity = _KINDS[reduce]
    compute = accumulator(t.dtype)
    # j in [start, end): positions along L against each segment's bounds
    pos = b.add(prim.BroadcastInDimOp(b.add(prim.IotaOp(length, 0, 1, "i64")), wide, [axis + 1]))
    seg_dims = list(range(axis + 1))  # lead and S
    inside = b.ew(
        "logical_and",
        b.ew("ge", pos, b.add(prim.BroadcastInDimOp(start, wide, seg_dims))),
        b.ew("lt", pos, b.add(prim.BroadcastInDimOp(end, wide, seg_dims))),
    )
    keep = [*range(axis), *range(axis + 1, len(wide))]  # every dim but S
    x = b.add(prim.BroadcastInDimOp(b.convert(data, compute), wide, keep))
    masked = b.where(inside, x, b.full(wide, identity, compute))
    out_dims = b.out().dims
    y = b.reduce(kind, masked, [axis + 1])
    if initial is not None:
        initial = b.round_to(float(initial), t.dtype)  # eager reads it as a data value
        y = b.ew(combine, y, b.full(out_dims, initial, compute))
    if reduce == "mean":
        count = b.convert(b.ew("sub", end, start), compute)
        count = b.add(prim.BroadcastInDimOp(count, out_dims, seg_dims))
        empty_value = math.nan if initial is None else initial
        mean = b.ew("div", y, count)
        y = b.where(b.ew("gt", count, b.full(out_dims, 0.0, compute)), mean, b.full(out_dims, empty_value, compute))
    return b.convert(y, b.out().dtype)
