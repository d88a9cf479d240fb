"""Whether a mask, as aten ops compute it, is exactly sdpa's causal one.

A causal mask reaches the aten level decomposed: `ones(L, S, dtype=bool).tril()` is a
`full`, two `arange`s, a `sub`, an `le` and a `logical_and` (the ops differ between
torch versions), and `masked_fill(~m, -inf)` a `bitwise_not` and a `where`. Rather than
match one spelling, this module computes what the ops compute at element [..., i, j],
symbolically in i and j (sympy, integer symbols), and compares that with `j > i`, the
positions sdpa's `is_causal=True` masks (`ones(L, S).tril(diagonal=0)`, complemented).
The comparison is a proof, not a sample: it holds for every size, symbolic ones too.

Only ops that are functions of the element's position are read (creation ops,
broadcasting, arithmetic, comparisons, logic, tril/triu); a mask that depends on a graph
input, or on any op outside that set, is not causal as far as this module knows.
"""

from __future__ import annotations

import sympy
from xdsl.ir import SSAValue

from strata.dialects.aten import AtenOp
from strata.dialects.types import TensorType, sym

Expr = sympy.Basic
ROW, COL = sympy.Symbol("i", integer=True), sympy.Symbol("j", integer=True)

_COMPARISONS = {"eq": sympy.Eq, "ne": sympy.Ne, "lt": sympy.Lt, "le": sympy.Le, "gt": sympy.Gt, "ge": sympy.Ge}
_ARITHMETIC = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b}
_LOGIC = {"logical_and": sympy.And, "bitwise_and": sympy.And, "logical_or": sympy.Or, "bitwise_or": sympy.Or}
_SAME_ELEMENTS = ("aten.alias.default", "aten.clone.default", "aten.lift_fresh_copy.default")
_RESHAPES = ("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default", "aten.expand.default")


def is_causal(mask: SSAValue) -> bool:
    """Whether `mask` is True exactly where j > i in its last two dims (i, j), at every
    index of any leading dims."""
    if not isinstance(mask.type, TensorType) or mask.type.rank < 2 or mask.type.dtype != "i1":
        return False
    leading = [sympy.Symbol(f"b{k}", integer=True) for k in range(mask.type.rank - 2)]
    value = element(mask, (*leading, ROW, COL))
    return value is not None and _same_relation(value, sympy.Gt(COL, ROW))


def element(v: SSAValue, index: tuple[Expr, ...]) -> Expr | None:
    """v's element at `index` (one expression per dim of v) as a sympy expression (a
    boolean one for a bool tensor), or None where an op is outside what is read."""
    op = v.owner
    if not isinstance(op, AtenOp) or not isinstance(v.type, TensorType) or len(index) != v.type.rank:
        return None
    name = op.signature.op_name
    family, _, overload = name.removeprefix("aten.").partition(".")
    args = op.bind()
    try:
        if name in ("aten.full.default", "aten.scalar_tensor.default"):
            return _number(op.constant("fill_value" if family == "full" else "s"), v.type.dtype)
        if family == "arange" and overload in ("default", "start", "start_step"):
            start = op.constant("start") if overload != "default" else 0
            step = op.constant("step") if overload == "start_step" else 1
            if not all(isinstance(x, int) and not isinstance(x, bool) for x in (start, step)):
                return None
            return start + step * index[0]
        if name in _SAME_ELEMENTS:
            return element(args["self"], index)
        if name in _RESHAPES:
            return _reshaped(args["self"], v.type, index)
        if name == "aten.unsqueeze.default":
            d = op.constant("dim") % v.type.rank
            return element(args["self"], index[:d] + index[d + 1 :])
        if name == "aten._to_copy.default":
            return _converted(element(args["self"], _broadcast(args["self"], v.type, index)), v.type.dtype)
        if name in ("aten.bitwise_not.default", "aten.logical_not.default"):
            x = element(args["self"], index)
            return sympy.Not(x) if x is not None and args["self"].type.dtype == "i1" else None
        if family in ("tril", "triu"):
            x = element(args["self"], index)
            if x is None:
                return None
            d, (i, j) = op.constant("diagonal"), index[-2:]
            keep = sympy.Le(j - i, d) if family == "tril" else sympy.Ge(j - i, d)
            return _where(keep, x, sympy.false if v.type.dtype == "i1" else sympy.Integer(0))
        if name == "aten.where.self":
            c, a, b = (_operand(args[k], v.type, index) for k in ("condition", "self", "other"))
            return None if None in (c, a, b) else _where(c, a, b)
        a = _operand(args["self"], v.type, index)
        if overload == "Scalar":
            b = _number(op.constant("other"), None)
        elif overload in ("Tensor", "default"):
            b = _operand(args["other"], v.type, index)
        else:
            return None
        if a is None or b is None:
            return None
        if family in _COMPARISONS:
            return _compare(_COMPARISONS[family], a, b)
        if family in _LOGIC:
            return _LOGIC[family](_truth(a), _truth(b))
        if family in _ARITHMETIC and args.get("alpha") is None:
            return _ARITHMETIC[family](a, b)
    except (TypeError, ValueError, KeyError, IndexError):
        return None
    return None


def _operand(x: SSAValue, out: TensorType, index: tuple[Expr, ...]) -> Expr | None:
    return element(x, _broadcast(x, out, index))


def _broadcast(x: SSAValue, out: TensorType, index: tuple[Expr, ...]) -> tuple[Expr, ...]:
    """The index into x (broadcast to `out`, dims aligned at the right) that `index` reads."""
    return _broadcast_dims([sym(d) for d in x.type.dims], [sym(o) for o in out.dims], index)


def _reshaped(x: SSAValue, out: TensorType, index: tuple[Expr, ...]) -> Expr | None:
    """A view or expand that only adds or drops leading dims of size 1, or broadcasts:
    the element read is x's at the same trailing positions."""
    inner = [sym(d) for d in x.type.dims]
    outer = [sym(d) for d in out.dims]
    while inner and inner[0] == 1 and len(inner) > len(outer):
        inner.pop(0)
    if len(inner) > len(outer) or any(a != b and a != 1 for a, b in zip(inner, outer[len(outer) - len(inner):])):
        return None
    dropped = x.type.rank - len(inner)
    return element(x, (sympy.Integer(0),) * dropped + _broadcast_dims(inner, outer, index))


def _broadcast_dims(inner: list, outer: list, index: tuple[Expr, ...]) -> tuple[Expr, ...]:
    """The index into dims `inner` (broadcast to `outer`, aligned at the right) that `index` reads."""
    tail = index[len(index) - len(inner):]
    return tuple(sympy.Integer(0) if a == 1 and b != 1 else i for a, b, i in zip(inner, outer[len(outer) - len(inner):], tail))


def _number(value, dtype: str | None) -> Expr:
    if isinstance(value, bool) or dtype == "i1":
        return sympy.true if value else sympy.false
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return sympy.oo if value > 0 else -sympy.oo
    return sympy.nsimplify(value) if isinstance(value, float) else sympy.Integer(value)


def _is_bool(x: Expr) -> bool:
    # a sympy Symbol is a Boolean too; the index symbols are integers
    return isinstance(x, sympy.logic.boolalg.Boolean) and not isinstance(x, sympy.Symbol)


def _truth(x: Expr) -> Expr:
    return x if _is_bool(x) else sympy.Ne(x, 0)


def _converted(x: Expr | None, dtype: str) -> Expr | None:
    if x is None:
        return None
    if dtype == "i1":
        return _truth(x)
    if _is_bool(x):
        return _where(x, sympy.Integer(1), sympy.Integer(0))
    return x if dtype.startswith("f") or dtype == "bf16" else None


def _where(c: Expr, a: Expr, b: Expr) -> Expr:
    if _is_bool(a) and _is_bool(b):
        return sympy.Or(sympy.And(c, a), sympy.And(sympy.Not(c), b))
    return sympy.Piecewise((a, c), (b, True))


def _compare(relation, a: Expr, b: Expr) -> Expr:
    """relation(a, b) with a Piecewise operand split into its cases."""
    for x, other, flip in ((a, b, False), (b, a, True)):
        if isinstance(x, sympy.Piecewise):
            taken, cases = sympy.false, []
            for value, cond in x.args:
                cases.append(sympy.And(cond, sympy.Not(taken), _compare(relation, other, value) if flip
                                       else _compare(relation, value, other)))
                taken = sympy.Or(taken, cond)
            return sympy.Or(*cases)
    if _is_bool(a) or _is_bool(b):
        return relation(*(_converted(x, "f32") for x in (a, b)))
    return relation(a, b)


def _same_relation(a: Expr, b: Expr) -> bool:
    """Whether two boolean expressions in integers are the same condition: each a
    single linear inequality, compared as `e >= 0` with e canonical."""
    ca, cb = _as_nonnegative(a), _as_nonnegative(b)
    return ca is not None and cb is not None and sympy.expand(ca - cb) == 0


def _as_nonnegative(r: Expr) -> Expr | None:
    """e where the relation r over integers is `e >= 0`, or None for anything else."""
    if isinstance(r, sympy.GreaterThan):
        return r.lhs - r.rhs
    if isinstance(r, sympy.StrictGreaterThan):
        return r.lhs - r.rhs - 1
    if isinstance(r, sympy.LessThan):
        return r.rhs - r.lhs
    if isinstance(r, sympy.StrictLessThan):
        return r.rhs - r.lhs - 1
    return None
