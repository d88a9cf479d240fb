"""Padding → prim.gather reads at computed coordinates (indexing.read_at).

Each padded dim reads x at j = p - low for output position p: constant padding
masks the positions where j falls outside x (`where(inside, x[j], value)`),
reflection reads (n-1) - |(n-1) - |j||, replication j clamped into [0, n). Negative
padding crops, by the same formula. The pads are the trailing dims' (low, high)
pairs, last dim first, as torch lists them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.ir import SSAValue

from strata.dialects.aten import AtenOp
from strata.dialects.types import Dim, sym
from strata.passes.decompositions.builder import Decline, PrimBuilder, tensor_of
from strata.passes.decompositions.indexing import clamp_index, positions, read_at
from strata.passes.decompositions.rules import decomposes


def _pairs(pad: Sequence, rank: int) -> dict[int, int]:
    """dim → its low pad, for the dims the pads name (last dim first)."""
    if any(not isinstance(p, int) for p in pad) or len(pad) % 2 or len(pad) // 2 > rank:
        raise Decline(f"padding {list(pad)}")
    return {rank - 1 - k: pad[2 * k] for k in range(len(pad) // 2)}


def _padded(b: PrimBuilder, x: SSAValue, low: dict[int, int], coordinate: Callable[[SSAValue, Dim], SSAValue]):
    """x read at coordinate(p - low, n) along each dim of `low`; also the i1 tensor
    of the positions whose p - low lies inside x (None when all do)."""
    out = b.out()
    coords, inside = {}, None
    for d, lo in low.items():
        j = positions(b, out.dims, d)
        if lo:
            j = b.ew("sub", j, b.constant_like(j, lo))
        n = tensor_of(x).dims[d]
        ok = b.ew("logical_and", b.ew("ge", j, b.constant_like(j, 0)), b.ew("lt", j, b.constant_like(j, n)))
        inside = ok if inside is None else b.ew("logical_and", inside, ok)
        coords[d] = coordinate(j, n)
    return read_at(b, x, coords, out.dims), inside


@decomposes("aten::constant_pad_nd")
def constant_pad_nd(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x = b.arg("self")
    t, out = tensor_of(x), b.out()
    low = {d: lo for d, lo in _pairs(b.arg("pad"), t.rank).items()}
    value = b.arg("value")
    value = 0 if value is None else value
    fill = b.full(out.dims, b.round_to(value, t.dtype), t.dtype)
    if any(sym(d) == 0 for d in out.dims):
        return fill
    if any(sym(t.dims[d]) == 0 for d in low):
        return fill  # nothing of x is left to read
    if all(t.dims[d] == out.dims[d] and lo == 0 for d, lo in low.items()):
        return x
    read, inside = _padded(b, x, low, lambda j, n: j)
    return b.where(inside, read, fill)


def _reflect(b: PrimBuilder, j: SSAValue, n: Dim) -> SSAValue:
    last = b.constant_like(j, sym(n) - 1)
    return b.ew("sub", last, b.ew("abs", b.ew("sub", last, b.ew("abs", j))))


@decomposes("aten::reflection_pad1d", "aten::reflection_pad2d", "aten::reflection_pad3d")
def reflection_pad(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x = b.arg("self")
    t = tensor_of(x)
    pad = b.arg("padding")
    low = _pairs(pad, t.rank)
    for d, k in zip(low, range(len(pad) // 2)):
        n = t.dims[d]
        if not isinstance(n, int) or max(abs(pad[2 * k]), abs(pad[2 * k + 1])) >= max(n, 1):
            raise Decline("reflection padding as wide as the dim is an error in eager")
    if any(sym(d) == 0 for d in b.out().dims):
        return b.full(b.out().dims, 0, t.dtype)
    return _padded(b, x, low, lambda j, n: _reflect(b, j, n))[0]


@decomposes("aten::replication_pad1d", "aten::replication_pad2d", "aten::replication_pad3d")
def replication_pad(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x = b.arg("self")
    t = tensor_of(x)
    low = _pairs(b.arg("padding"), t.rank)
    if any(sym(d) == 0 for d in b.out().dims):
        return b.full(b.out().dims, 0, t.dtype)
    if any(sym(t.dims[d]) == 0 for d in low):
        raise Decline("replication padding of an empty dim is an error in eager")
    return _padded(b, x, low, lambda j, n: clamp_index(b, j, n))[0]
