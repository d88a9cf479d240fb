"""The range of an integer prim value, where its ops make it known at compile time:
what lets simplify drop the check of an index that cannot be out of range.

Known are fills, iotas (and slices of them: how a tensor holds a symbolic size), views,
widening conversions, where, the clamps minimum and maximum, sums and differences,
products of non-negative values, remainders by a positive constant, the positions sort
and topk return, and checked indices. Bounds are sympy expressions over shape symbols, or infinite
where unknown (a user's index is (-oo, oo); its clamp by maximum(i, 0) is [0, oo)).
"""

from __future__ import annotations

import sympy
from xdsl.dialects.builtin import ArrayAttr
from xdsl.ir import Operation, SSAValue

from strata.dialects import prim
from strata.dialects.prim_indexing import CheckIndexOp
from strata.dialects.prim_scan import SortOp, TopkOp
from strata.dialects.types import TensorType, sym

Range = tuple[sympy.Expr, sympy.Expr]  # the lowest and the highest value
UNKNOWN: Range = (-sympy.oo, sympy.oo)

_INTEGERS = ("i1", "u8", "i8", "i16", "i32", "i64")
_DEPTH = 24  # how far up the producers a range is followed


def value_range(v: SSAValue, depth: int = 0) -> Range:
    """The values `v` (an integer tensor) may hold: UNKNOWN where nothing is known."""
    found = _known_range(v, depth)
    if found is None or any(b is sympy.nan for b in found):
        return UNKNOWN
    return found


def _known_range(v: SSAValue, depth: int) -> Range | None:
    op = v.owner
    if depth > _DEPTH or not isinstance(op, Operation) or not _integer(v):
        return None
    up = depth + 1
    if isinstance(op, prim.FullOp):
        return (sym(int(op.scalar)),) * 2
    if isinstance(op, prim.IotaOp):
        return _iota_range(op, 0, None)
    if isinstance(op, prim.SliceOp) and isinstance(op.x.owner, prim.IotaOp):
        (start,), (limit,) = prim.dims_of(op.start), prim.dims_of(op.limit)
        return _iota_range(op.x.owner, sym(start), sym(limit) - 1)
    if isinstance(op, prim.VIEW_OPS):
        return value_range(op.operands[0], up)
    if isinstance(op, prim.ConvertElementTypeOp):
        same = v.type.dtype == op.x.type.dtype
        if not _integer(op.x) or not same and (v.type.dtype == "u8" or _bits(v) <= _bits(op.x)):
            return None  # from a float, or narrowed, or signed to unsigned: it may wrap
        return value_range(op.x, up)
    if isinstance(op, prim.WhereOp):
        a, b = value_range(op.a, up), value_range(op.b, up)
        return sympy.Min(a[0], b[0]), sympy.Max(a[1], b[1])
    if isinstance(op, CheckIndexOp):
        return sympy.Integer(0), value_range(op.size, up)[1] - 1
    if isinstance(op, SortOp | TopkOp) and v is op.results[1]:
        n = op.x.type.dims[op.dim.value.data] if op.x.type.rank else 1
        return sympy.Integer(0), sym(n) - 1
    if isinstance(op, prim.ElementwiseOp) and len(op.args) == 2:
        return _binary_range(op.name.removeprefix("prim."), *(value_range(a, up) for a in op.args))
    return None


def _binary_range(name: str, a: Range, b: Range) -> Range | None:
    if name == "remainder" and b[0] == b[1] and _holds(b[0] > 0):
        return sympy.Integer(0), b[0] - 1  # Python's remainder takes the divisor's sign
    if name == "add":
        return a[0] + b[0], a[1] + b[1]
    if name == "sub":
        return a[0] - b[1], a[1] - b[0]
    if name == "mul" and _holds(a[0] >= 0) and _holds(b[0] >= 0):
        return a[0] * b[0], a[1] * b[1]
    if name == "minimum":
        return sympy.Min(a[0], b[0]), sympy.Min(a[1], b[1])
    if name == "maximum":
        return sympy.Max(a[0], b[0]), sympy.Max(a[1], b[1])
    return None


def _iota_range(op: prim.IotaOp, first: sympy.Expr, last: sympy.Expr | None) -> Range | None:
    """The values of elements first…last of an iota (last: its end)."""
    length = sym(prim.dims_of(ArrayAttr([op.length]))[0])
    if last is None:
        last = length - 1
    if _holds(last < first):
        return None  # no element
    step = op.step.value.data
    ends = (op.first + step * first, op.first + step * last)
    return ends if step >= 0 else ends[::-1]


def _holds(claim: sympy.Basic) -> bool:
    """Whether a claim about shape symbols is true for every value they may take."""
    return bool(sympy.simplify(claim) == sympy.true)


def _integer(v: SSAValue) -> bool:
    return isinstance(v.type, TensorType) and v.type.dtype in _INTEGERS


def _bits(v: SSAValue) -> int:
    return {"i1": 1, "u8": 8, "i8": 8, "i16": 16, "i32": 32, "i64": 64}[v.type.dtype]


def provably_in_range(op: CheckIndexOp) -> bool:
    """Whether every index op checks lies in [0, size): the check can never fail, and
    wraps nothing."""
    index, size = value_range(op.index), value_range(op.size)
    return _holds(index[0] >= 0) and _holds(index[1] < size[0])
