"""argmax, argmin, max.dim and min.dim → two reductions over the same rows.

The extremum m = amax(x) (amin) first; the index is then the smallest position where
x equals m, or where x is NaN: eager's argmax and max.dim answer the first NaN of a
row that has one (amax propagates it, so m is NaN there and only NaNs match), else
the first occurrence of the extremum. Both reductions read the same rows, so fusion
makes them one kernel (softmax's shape: amax, then a reduction of what depends on it).
A reduction over an empty dim is an error in eager; the rules decline it.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue

from strata.dialects import prim
from strata.dialects.aten import AtenOp
from strata.dialects.types import is_float, sym
from strata.passes.decompositions.builder import Decline, PrimBuilder, tensor_of, wrap_dim
from strata.passes.decompositions.rules import decomposes


def _first_extremum(b: PrimBuilder, x: SSAValue, d: int, kind: str) -> tuple[SSAValue, SSAValue]:
    """(extremum, i64 index of its first occurrence) of x along dim d, dim d removed."""
    t = tensor_of(x)
    n = t.dims[d]
    if sym(n) == 0:
        raise Decline("an arg-reduction over an empty dim is an error in eager")
    m = b.reduce(kind, x, [d])
    match = b.ew("eq", x, b.unreduce(m, t.dims, [d]))
    if is_float(t.dtype):
        match = b.ew("logical_or", match, b.ew("isnan", x))
    iota = b.add(prim.IotaOp(n, 0, 1, "i64"))
    where = b.add(prim.BroadcastInDimOp(iota, t.dims, [d])) if t.rank > 1 else iota
    candidates = b.where(match, where, b.full(t.dims, n, "i64"))
    return m, b.reduce("amin", candidates, [d])


def _flat_or_dim(b: PrimBuilder, x: SSAValue, dim) -> tuple[SSAValue, int]:
    t = tensor_of(x)
    if dim is None or t.rank == 0:
        if t.rank == 0:
            x = b.reshape(x, [1])
        elif t.rank > 1:
            from strata.dialects.types import numel

            x = b.reshape(x, [numel(t.dims)])
        return x, 0
    return x, wrap_dim(dim, t.rank)


@decomposes("aten::argmax", "aten::argmin")
def argmax(op: AtenOp, b: PrimBuilder) -> SSAValue:
    kind = "amax" if op.overload_name == "aten::argmax" else "amin"
    x, d = _flat_or_dim(b, b.arg("self"), b.arg("dim"))
    if tensor_of(x).dtype == "i1":
        x = b.convert(x, "u8")
    _, index = _first_extremum(b, x, d, kind)
    return b.reshape(index, b.out().dims)


@decomposes("aten::max.dim", "aten::min.dim")
def extremum_with_index(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    kind = "amax" if op.overload_name == "aten::max.dim" else "amin"
    x, d = _flat_or_dim(b, b.arg("self"), b.arg("dim"))
    values_type = b.out(0)
    y = b.convert(x, "u8") if tensor_of(x).dtype == "i1" else x
    m, index = _first_extremum(b, y, d, kind)
    return [b.reshape(b.convert(m, values_type.dtype), values_type.dims), b.reshape(index, b.out(1).dims)]
