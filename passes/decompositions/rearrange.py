"""flip, repeat and diagonal: elements rearranged, none computed.

repeat is a broadcast and a reshape (views); flip reads each element at n-1-p along
the flipped dims and diagonal at (i + off1, i + off2) of its two dims, through
prim.gather (indexing.read_at, indexing.take).
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from strata.dialects import prim
from strata.dialects.aten import AtenOp
from strata.dialects.types import numel, sym
from strata.passes.decompositions.builder import Decline, PrimBuilder, tensor_of, wrap_dim
from strata.passes.decompositions.indexing import positions, read_at, take
from strata.passes.decompositions.rules import decomposes


@decomposes("aten::flip")
def flip(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x = b.arg("self")
    t = tensor_of(x)
    dims = sorted({wrap_dim(d, t.rank) for d in b.arg("dims")}) if t.rank else []
    dims = [d for d in dims if t.dims[d] != 1]
    if not dims or any(sym(n) == 0 for n in t.dims):
        return x
    coords = {}
    for d in dims:
        p = positions(b, t.dims, d)
        coords[d] = b.ew("sub", b.constant_like(p, sym(t.dims[d]) - 1), p)
    return read_at(b, x, coords, t.dims)


@decomposes("aten::repeat")
def repeat(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x = b.arg("self")
    t, out = tensor_of(x), b.out()
    repeats = list(b.arg("repeats"))
    if len(repeats) < t.rank:
        raise Decline("repeat with fewer repeats than dims is an error in eager")
    dims = [1] * (len(repeats) - t.rank) + list(t.dims)
    x = b.reshape(x, dims)
    # [r0, d0, r1, d1, …] then merged pairwise.
    wide = [v for r, d in zip(repeats, dims) for v in (r, d)]
    spread = b.add(prim.BroadcastInDimOp(x, wide, [2 * i + 1 for i in range(len(dims))]))
    return b.reshape(spread, out.dims)


@decomposes("aten::diagonal")
def diagonal(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x = b.arg("self")
    t, out = tensor_of(x), b.out()
    if t.rank < 2:
        raise Decline("diagonal of a tensor of rank below 2 is an error in eager")
    d1, d2 = wrap_dim(b.arg("dim1") or 0, t.rank), wrap_dim(1 if b.arg("dim2") is None else b.arg("dim2"), t.rank)
    if d1 == d2:
        raise Decline("diagonal of one dim with itself is an error in eager")
    offset = b.arg("offset") or 0
    if not isinstance(offset, int):
        raise Decline(f"a symbolic diagonal offset {offset}")
    length = out.dims[-1]
    if sym(length) == 0 or any(sym(n) == 0 for n in out.dims):
        return b.full(out.dims, 0, out.dtype)
    others = [k for k in range(t.rank) if k not in (d1, d2)]
    n2 = t.dims[d2]
    merged = b.reshape(b.permute(x, others + [d1, d2]), [t.dims[k] for k in others] + [numel([t.dims[d1], n2])])
    i = b.add(prim.IotaOp(length, 0, 1, "i64"))
    first = max(-offset, 0) * sym(n2) + max(offset, 0)
    index = b.ew("add", b.ew("mul", i, b.constant_like(i, sym(n2) + 1)), b.constant_like(i, first))
    return take(b, merged, len(others), index)
