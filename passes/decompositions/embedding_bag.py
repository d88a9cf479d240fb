"""nn.functional.embedding_bag (aten::_embedding_bag, _embedding_bag_forward_only) →
a gather of the weight's rows and masked reductions over a [bags, L, D] domain.

Bag b holds the indices j with offsets[b] <= j < offsets[b + 1] (the last bag ends at
L; with include_last_offset, where eager's paths differ: see _bag_bounds); an index equal to padding_idx
counts for nothing. Modes: 0 sum (times per_sample_weights), 1 mean (empty bag: 0),
2 max. The other results hold what eager's CPU kernel (ATen's EmbeddingBag.cpp)
writes, for the result shapes torch's meta function declares:
- offset2bag[j]: the bag of index j (the number of bag offsets <= j, minus 1), or
  nothing where the declared result is empty (eager's sum fast path);
- bag_size: the number of non-padding indices per bag (zeros in sum mode);
- max_indices: in max mode, per bag and column, the weight row holding the maximum
  (its first occurrence, as eager compares with `>`), 0 for an empty bag; in mean
  mode a copy of bag_size; zeros in sum mode.
Eager's max takes a bag's first value, and then any value greater: a NaN is kept when
it comes first and skipped after; this rule computes the same.
_embedding_bag_forward_only with include_last_offset gives bag_size and max_indices
other shapes than its meta function declares: its rule declines unless they are unused.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.ir import SSAValue

from strata.dialects import prim
from strata.dialects.aten import AtenOp
from strata.dialects.prim_indexing import GatherOp
from strata.dialects.types import is_float
from strata.passes.decompositions.builder import Decline, PrimBuilder, accumulator, tensor_of
from strata.passes.decompositions.indexing import checked
from strata.passes.decompositions.rules import decomposes


def _bag_bounds(b: PrimBuilder, offsets: SSAValue, length, bags, fast: bool) -> tuple[SSAValue, SSAValue]:
    """start and end of each bag, [bags] i64. With include_last_offset the last bag
    ends at the last offset on eager's fast path (index_select_add: sum or mean of
    f32/f16/bf16 rows, no padding_idx) and at L on its other paths, as without."""
    offsets = b.convert(offsets, "i64")
    start = b.add(prim.SliceOp(offsets, [0], [bags], [1]))
    if fast and b.arg("include_last_offset"):
        return start, b.add(prim.SliceOp(offsets, [1], [bags + 1], [1]))
    ext = b.add(prim.CatOp([start, b.full([1], length, "i64")], 0))  # the starts, then L
    return start, b.add(prim.SliceOp(ext, [1], [bags + 1], [1]))


@decomposes("aten::_embedding_bag", "aten::_embedding_bag_forward_only")
def embedding_bag(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    weight, indices, offsets = b.arg("weight"), b.arg("indices"), b.arg("offsets")
    psw, mode, pad = b.arg("per_sample_weights"), b.arg("mode"), b.arg("padding_idx")
    w, it, ot = tensor_of(weight), tensor_of(indices), tensor_of(offsets)
    if not is_float(w.dtype) or w.rank != 2 or it.rank != 1 or ot.rank != 1:
        raise Decline("embedding_bag of a float [N, D] weight with 1-d indices and offsets")
    if it.dtype not in ("i32", "i64") or ot.dtype not in ("i32", "i64") or mode not in (0, 1, 2):
        raise Decline("embedding_bag with these index dtypes or mode")
    if psw is not None and mode != 0:
        raise Decline("per_sample_weights in a mode other than sum")
    length, d = it.dims[0], w.dims[1]
    bags = b.out(0).dims[0]
    if length == 0 or bags == 0:
        raise Decline("embedding_bag with no indices or no bags")
    if op.overload_name.endswith("forward_only") and b.arg("include_last_offset"):
        if any(op.results[i].uses for i in (2, 3)):
            raise Decline("forward_only with include_last_offset: bag_size and max_indices differ from their meta shapes")
    compute = accumulator(w.dtype)
    fast = mode in (0, 1) and (pad is None or pad < 0) and w.dtype in ("f32", "f16", "bf16")
    wide = [bags, length]
    pos = b.add(prim.BroadcastInDimOp(b.add(prim.IotaOp(length, 0, 1, "i64")), wide, [1]))
    idx = b.convert(indices, "i64")
    real = None
    if pad is not None and pad >= 0:
        real = b.add(prim.BroadcastInDimOp(b.ew("ne", idx, b.full([length], pad, "i64")), wide, [1]))

    def members(fast_end: bool) -> tuple[SSAValue, SSAValue]:
        """start of each bag, and which positions of each bag count."""
        start, end = _bag_bounds(b, offsets, length, bags, fast_end)
        inside = b.ew(
            "logical_and",
            b.ew("ge", pos, b.add(prim.BroadcastInDimOp(start, wide, [0]))),
            b.ew("lt", pos, b.add(prim.BroadcastInDimOp(end, wide, [0]))),
        )
        return start, inside if real is None else b.ew("logical_and", inside, real)

    start, valid = members(fast)
    # eager's fast mean divides the sum (to the last offset) by bag_size (to L)
    counted = members(False)[1] if fast and mode == 1 else valid
    count = b.reduce("sum", b.convert(counted, "i64"), [1])  # [bags]
    rows_at = checked(b, idx, w.dims[0], 0, wraps=False)  # eager raises on an index out of range
    rows = b.add(GatherOp(weight, b.add(prim.BroadcastInDimOp(rows_at, [length, d], [0])), 0))  # [L, D]
    rows = b.convert(rows, compute)
    if psw is not None:
        rows = b.ew("mul", rows, b.add(prim.BroadcastInDimOp(b.convert(psw, compute), [length, d], [0])))
    cube = [bags, length, d]
    g = b.add(prim.BroadcastInDimOp(rows, cube, [1, 2]))
    valid3 = b.add(prim.BroadcastInDimOp(valid, cube, [0, 1]))
    max_indices = None
    if mode == 2:
        y, max_indices = _bag_max(b, g, valid, valid3, pos, idx, count, cube)
    else:
        y = b.reduce("sum", b.where(valid3, g, b.full(cube, 0.0, compute)), [1])
        if mode == 1:
            n = b.add(prim.BroadcastInDimOp(b.convert(count, compute), [bags, d], [0]))
            one = b.full([bags, d], 1.0, compute)
            y = b.ew("div", y, b.ew("maximum", n, one))  # an empty bag's sum is 0: 0 / 1
    results = [b.convert(y, b.out(0).dtype)]
    # offset2bag: the bag of each index, as eager's cumsum of the offsets' marks
    o2b = b.out(1)
    if o2b.dims == (0,):
        results.append(b.full(o2b.dims, 0, o2b.dtype))
    elif o2b.dims == (length,):
        at_or_before = b.ew("le", b.add(prim.BroadcastInDimOp(start, wide, [0])), pos)
        marks = b.reduce("sum", b.convert(at_or_before, "i64"), [0])
        results.append(b.convert(b.ew("sub", marks, b.full([length], 1, "i64")), o2b.dtype))
    else:
        raise Decline(f"embedding_bag's offset2bag of shape {list(o2b.dims)}")
    for i, value in ((2, count), (3, max_indices if mode == 2 else count)):
        out = b.out(i)
        if mode == 0 or tensor_of(value).dims != out.dims:
            if mode != 0 and op.results[i].uses:
                raise Decline(f"embedding_bag result {i} of shape {list(out.dims)}")
            results.append(b.full(out.dims, 0, out.dtype))
        else:
            results.append(b.convert(value, out.dtype))
    return results


def _bag_max(b: PrimBuilder, g, valid, valid3, pos, idx, count, cube) -> tuple[SSAValue, SSAValue]:
    """Eager's max: the first value, then any greater one (NaN first stays, NaN later
    is skipped), 0 for an empty bag; and the weight row of the first such value."""
    bags, length, d = cube
    compute = tensor_of(g).dtype
    big = b.full([bags, length], length, "i64")
    first = b.reduce("amin", b.where(valid, pos, big), [1])  # [bags]: L if empty
    is_first = b.ew("eq", pos, b.add(prim.BroadcastInDimOp(first, [bags, length], [0])))
    is_first3 = b.add(prim.BroadcastInDimOp(b.ew("logical_and", valid, is_first), cube, [0, 1]))
    nan = b.ew("isnan", g)
    first_nan = b.reduce("amax", b.convert(b.ew("logical_and", is_first3, nan), "i64"), [1])  # [bags, D]
    ordinary = b.ew("logical_and", valid3, b.ew("logical_not", nan))
    m = b.reduce("amax", b.where(ordinary, g, b.full(cube, -math.inf, compute)), [1])
    nonempty = b.add(prim.BroadcastInDimOp(b.ew("gt", count, b.full([bags], 0, "i64")), [bags, d], [0]))
    y = b.where(nonempty, m, b.full([bags, d], 0.0, compute))
    has_nan = b.ew("ne", first_nan, b.full([bags, d], 0, "i64"))
    y = b.where(has_nan, b.full([bags, d], math.nan, compute), y)
    # the position of the maximum: the first valid one equal to it, or the first if NaN
    hit = b.ew("logical_and", valid3, b.ew("eq", g, b.add(prim.BroadcastInDimOp(y, cube, [0, 2]))))
    pos3 = b.add(prim.BroadcastInDimOp(pos, cube, [0, 1]))
    at = b.reduce("amin", b.where(hit, pos3, b.full(cube, length, "i64")), [1])
    at = b.where(has_nan, b.add(prim.BroadcastInDimOp(first, [bags, d], [0])), at)
    row = b.add(GatherOp(b.add(prim.BroadcastInDimOp(idx, [bags, length], [1])), b.ew("minimum", at, b.full([bags, d], length - 1, "i64")), 1))
    row = b.where(nonempty, row, b.full([bags, d], 0, "i64"))
    return y, row
