"""Evaluating sympy index expressions on integer torch tensors (or Python ints).

Index expressions contain `floor(p/q)` and `Mod(a, b)` over non-negative integers;
evaluating them with float division would round wrongly for large values, so floor
of a rational-coefficient expression is computed as an integer floor division.
"""

from __future__ import annotations

from functools import reduce
from math import lcm
from typing import Any

import sympy
import torch


def evaluate(expr: sympy.Expr, env: dict[str, Any]) -> Any:
    """expr with its symbols replaced by env's values (ints or int64 tensors)."""
    if expr.is_Integer:
        return int(expr)
    if expr.is_Symbol:
        return env[expr.name]
    if isinstance(expr, sympy.Add):
        return reduce(lambda a, b: a + b, (evaluate(a, env) for a in expr.args))
    if isinstance(expr, sympy.Mul):
        if any(a.is_Rational and not a.is_Integer for a in expr.args):
            raise ValueError(f"index expression {expr} is not integral")
        return reduce(lambda a, b: a * b, (evaluate(a, env) for a in expr.args))
    if isinstance(expr, sympy.floor):
        inner = expr.args[0]
        q = _denominator(inner)
        return _floordiv(evaluate(sympy.expand(inner * q), env), q)
    if isinstance(expr, sympy.Mod):
        a, b = (evaluate(x, env) for x in expr.args)
        return a % b
    if isinstance(expr, sympy.Pow) and expr.exp.is_Integer and expr.exp > 0:
        return evaluate(expr.base, env) ** int(expr.exp)
    if isinstance(expr, sympy.Max | sympy.Min):
        vals = [evaluate(a, env) for a in expr.args]
        pick = torch.maximum if isinstance(expr, sympy.Max) else torch.minimum
        if all(isinstance(v, int) for v in vals):
            return (max if isinstance(expr, sympy.Max) else min)(vals)
        return reduce(lambda a, b: pick(torch.as_tensor(a), torch.as_tensor(b)), vals)
    raise ValueError(f"cannot evaluate index expression {expr}")


def _denominator(expr: sympy.Expr) -> int:
    """The lcm of the denominators of expr's rational coefficients."""
    dens = [int(t.q) for t in expr.atoms(sympy.Rational) if not t.is_Integer]
    return lcm(*dens) if dens else 1


def _floordiv(a: Any, q: int) -> Any:
    if q == 1:
        return a
    if isinstance(a, torch.Tensor):
        return torch.div(a, q, rounding_mode="floor")
    return a // q
