"""flip, roll, repeat and diagonal: elements rearranged, none computed.

repeat is a broadcast and a reshape (views); flip reads each element at n-1-p along
the flipped dims, roll at (p - shift) mod n, and diagonal at (i + off1, i + off2) of
its two dims, through prim.gather (indexing.read_at, indexing.take).
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from strata.dialects import prim
from strata.dialects.aten import AtenOp
from strata.dialects.prim_indexing import GatherOp
from strata.dialects.types import numel, sym
from strata.passes.decompositions.builder import Decline, PrimBuilder, tensor_of, wrap_dim
from strata.passes.decompositions.complex_values import complex_of, decomposes_complex, pairs
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


@decomposes("aten::roll")
def roll(op: AtenOp, b: PrimBuilder) -> SSAValue:
    """Kept whole through AOTAutograd (frontend/capture/roll_layout.py). A shift may be a
    symbolic int of either sign, or a value item() read."""
    return _roll(b, b.arg("self"))


@decomposes_complex("aten::roll")
def roll_complex(op: AtenOp, b: PrimBuilder) -> SSAValue:
    return complex_of(b, _roll(b, pairs(b, b.arg("self")), pair_dim=True))


def _roll(b: PrimBuilder, x: SSAValue, pair_dim: bool = False) -> SSAValue:
    """x rolled as the op says; with `pair_dim`, x's last dim holds complex values'
    (real, imag) pairs, which stay together."""
    t = tensor_of(x)
    tail = [2] if pair_dim else []
    rank = t.rank - len(tail)
    shifts, dims = list(b.arg("shifts")), list(b.arg("dims") or [])
    if not dims:  # the flattened tensor rolled
        if len(shifts) != 1:
            raise Decline("roll without dims takes one shift")
        flat = b.reshape(x, [numel(t.dims[:rank]), *tail])
        return b.reshape(_rolled(b, flat, {0: shifts[0]}), t.dims)
    if len(shifts) != len(dims):
        raise Decline("roll with other than one shift a dim is an error in eager")
    offsets: dict[int, object] = {}
    for shift, d in zip(shifts, dims):  # a dim named twice rolls by the sum
        d = wrap_dim(d, rank)
        offsets[d] = offsets.get(d, 0) + shift
    return _rolled(b, x, offsets)


def _rolled(b: PrimBuilder, x: SSAValue, offsets: dict[int, object]) -> SSAValue:
    """x with element p read at (p[d] - offsets[d]) mod n along each dim d of offsets:
    one gather along the last of them, over the rolled dims merged there. Only x's
    side is permuted and reshaped, so the gather's result is the roll itself, in the
    order of x's dims, whose layout the fuse pass chooses (a permute after it would
    pin the result to the gather's)."""
    t = tensor_of(x)
    if any(sym(n) == 0 for n in t.dims):
        return x
    shifts = {}
    for d, s in offsets.items():
        n = t.dims[d]
        s = s % n if isinstance(s, int) and isinstance(n, int) else s
        if sym(s) != 0:
            shifts[d] = s
    if not shifts:
        return x
    ks = sorted(shifts)
    j = ks[-1]
    before, after = [i for i in range(j) if i not in ks], list(range(j + 1, t.rank))
    merged = numel(t.dims[k] for k in ks)
    xv = b.reshape(b.permute(x, before + ks + after),
                   [1 if i in ks else t.dims[i] for i in range(j)] + [merged] + [t.dims[i] for i in after])
    xv = b.broadcast(xv, [*t.dims[:j], merged, *t.dims[j + 1 :]])
    linear = None
    for m, k in enumerate(ks):
        p = positions(b, t.dims, k)
        n = t.dims[k]
        c = b.ew("remainder", b.ew("sub", p, b.constant_like(p, shifts[k])), b.constant_like(p, n))
        inner = numel(t.dims[i] for i in ks[m + 1 :])
        c = c if sym(inner) == 1 else b.ew("mul", c, b.constant_like(c, inner))
        linear = c if linear is None else b.ew("add", linear, c)
    return b.add(GatherOp(xv, linear, j))


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
