"""Evaluating a kernel's index expressions exactly, in integers.

An index is a sympy expression over loop variables and shape symbols (integers; only
`n…` and `m…` symbols may be negative): sums, products, integer powers, Abs, Max and Min, and
`floor`, `ceiling` and `Mod` of any rational expression over them
(`floor(x0/s1 + x1/s1**2)` is one). A division outside `floor` is one torch proved
exact (`s0/4` after a guard `s0 % 4 == 0`): it is floor-divided too. Floating-point division would round large values wrongly, so the argument of
`floor` is written as one fraction p/q of integer expressions and floor-divided.
Values are Python ints or int64 tensors (one value per point of the domain).
"""

from __future__ import annotations

from functools import reduce
from typing import Any

import sympy
import torch


def evaluate(expr: sympy.Expr, env: dict[str, Any]) -> Any:
    """expr with its symbols replaced by env's values; an integer (or int64 tensor)."""
    if expr.is_Integer:
        return int(expr)
    if expr.is_Symbol:
        return env[expr.name]
    if sum_divides(expr):  # an exact division spread over a sum: one quotient of the whole
        return _floor(expr, env)
    if isinstance(expr, sympy.Add):
        return reduce(lambda a, b: a + b, (evaluate(a, env) for a in expr.args))
    if isinstance(expr, sympy.Mul):
        if any(_is_reciprocal(a) for a in expr.args):
            return _floor(expr, env)  # an exact division
        return reduce(lambda a, b: a * b, (evaluate(a, env) for a in expr.args))
    if isinstance(expr, sympy.Pow) and expr.exp.is_Integer and expr.exp > 0:
        return evaluate(expr.base, env) ** int(expr.exp)
    if isinstance(expr, sympy.floor):
        return _floor(expr.args[0], env)
    if isinstance(expr, sympy.ceiling):
        return -_floor(-expr.args[0], env)
    if isinstance(expr, sympy.Mod):
        a, b = (evaluate(x, env) for x in expr.args)
        return _mod(a, b)
    if isinstance(expr, sympy.Abs):
        value = evaluate(expr.args[0], env)
        return abs(value) if isinstance(value, int) else torch.abs(value)
    if isinstance(expr, sympy.Max | sympy.Min):
        values = [evaluate(a, env) for a in expr.args]
        if all(isinstance(v, int) for v in values):
            return (max if isinstance(expr, sympy.Max) else min)(values)
        pick = torch.maximum if isinstance(expr, sympy.Max) else torch.minimum
        return reduce(lambda a, b: pick(torch.as_tensor(a), torch.as_tensor(b)), values)
    raise ValueError(f"cannot evaluate index expression {expr}")


def _is_reciprocal(e: sympy.Expr) -> bool:
    return (e.is_Rational and not e.is_Integer) or (isinstance(e, sympy.Pow) and e.exp.is_negative)


def divides(term: sympy.Expr) -> bool:
    """Whether a term of a sum divides: a coefficient that is no integer (`s53*x0/2`) or
    a negative power (`s0/s1`)."""
    return any((f.is_Rational and not f.is_Integer) or (isinstance(f, sympy.Pow) and f.exp.is_negative)
               for f in sympy.Mul.make_args(term))


def sum_divides(expr: sympy.Expr) -> bool:
    """Whether `expr` is a sum with a term that divides. torch writes a division it
    proved exact so, spread over the sum (x0*(s53 + 1)/2 as s53*x0/2 + x0/2): only the
    whole sum is an integer, so it is evaluated whole, as one quotient, never term by
    term (each term floored alone loses the halves that make up the whole)."""
    return isinstance(expr, sympy.Add) and any(divides(t) for t in expr.args)


def exact_fraction(expr: sympy.Expr) -> tuple[sympy.Expr, sympy.Expr]:
    """`expr` as p/q, p and q polynomials of integer coefficients (q a positive integer
    where the divisions are by numbers)."""
    p, q = sympy.fraction(sympy.together(expr))
    if q == 1 and sum_divides(expr):  # together() left the sum spread out
        q = sympy.ilcm(*[sympy.fraction(t.as_coeff_Mul()[0])[1] for t in sympy.Add.make_args(expr)])
        p = expr * q
    return sympy.expand(p), sympy.expand(q)


def _floor(expr: sympy.Expr, env: dict[str, Any]) -> Any:
    """floor(expr), as p // q with p/q = expr over one denominator."""
    p, q = exact_fraction(expr)
    num, den = evaluate(sympy.expand(p), env), evaluate(sympy.expand(q), env)
    if isinstance(den, int) and den == 0 or isinstance(den, torch.Tensor) and bool((den == 0).any()):
        # a size of 0 makes the domain empty: no point reads this index
        den = torch.where(torch.as_tensor(den) == 0, 1, torch.as_tensor(den))
    if isinstance(num, int) and isinstance(den, int):
        return num // den
    return torch.div(torch.as_tensor(num), torch.as_tensor(den), rounding_mode="floor")


def _mod(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int):
        return a % b if b else 0
    b = torch.as_tensor(b)
    return torch.remainder(torch.as_tensor(a), torch.where(b == 0, 1, b))
