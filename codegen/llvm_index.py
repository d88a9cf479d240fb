"""Index expressions (sympy, over loop variables and shape symbols) as i64 LLVM IR.

Every variable and every intermediate value of an index is non-negative (sizes, loop
counters, offsets into a buffer), so floor division and Mod are unsigned division and
remainder, which LLVM turns into shifts and masks for powers of two. Adds and
multiplies carry `nsw`: an index never overflows 64 bits, and saying so lets LLVM see
that consecutive iterations touch consecutive elements.

A variable may be bound to a vector of lanes (codegen/llvm_lanes.py): the expression
is then computed lane by lane, scalars splatted where they meet it.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import reduce

import sympy
from llvmlite import ir

from strata.codegen.errors import CodegenError
from strata.codegen.llvm_dtypes import I64
from strata.codegen.llvm_lanes import const_like, unify

NSW = ("nsw",)


def lower_index(b: ir.IRBuilder, expr: sympy.Expr, env: Mapping[str, ir.Value]) -> ir.Value:
    """The i64 value of `expr`, whose symbols are looked up by name in `env`."""
    if expr.is_Integer:
        return ir.Constant(I64, int(expr))
    if expr.is_Symbol:
        return env[expr.name]
    if isinstance(expr, sympy.Add):
        return reduce(lambda x, y: b.add(x, y, flags=NSW), _lower_all(b, expr.args, env))
    if isinstance(expr, sympy.Mul):
        return reduce(lambda x, y: b.mul(x, y, flags=NSW), _lower_all(b, expr.args, env))
    if isinstance(expr, sympy.Pow) and expr.exp.is_Integer and expr.exp > 0:
        base = lower_index(b, expr.base, env)
        return reduce(lambda x, y: b.mul(x, y, flags=NSW), [base] * int(expr.exp))
    if isinstance(expr, sympy.floor):
        numerator, denominator = _fraction(b, expr.args[0], env)
        return b.udiv(numerator, denominator)
    if isinstance(expr, sympy.ceiling):
        numerator, denominator = _fraction(b, expr.args[0], env)
        rounded_up = b.add(numerator, b.sub(denominator, const_like(denominator, 1)), flags=NSW)
        return b.udiv(rounded_up, denominator)
    if isinstance(expr, sympy.Mod):
        return b.urem(*_lower_all(b, expr.args, env))
    if isinstance(expr, (sympy.Max, sympy.Min)):
        pick = ">" if isinstance(expr, sympy.Max) else "<"
        return reduce(lambda x, y: b.select(b.icmp_signed(pick, x, y), x, y), _lower_all(b, expr.args, env))
    raise CodegenError(
        f"index expression {expr} ({type(expr).__name__}) is not supported by the LLVM CPU code generator"
    )


def _lower_all(b: ir.IRBuilder, exprs: tuple[sympy.Expr, ...], env: Mapping[str, ir.Value]) -> list[ir.Value]:
    return unify(b, [lower_index(b, e, env) for e in exprs])


def _fraction(b: ir.IRBuilder, expr: sympy.Expr, env: Mapping[str, ir.Value]) -> tuple[ir.Value, ir.Value]:
    """`expr` (e.g. s0/3 + x0/6) as integer numerator and denominator ((2*s0 + x0, 6))."""
    numerator, denominator = sympy.fraction(sympy.together(expr))
    n, d = unify(b, [lower_index(b, numerator, env), lower_index(b, denominator, env)])
    return n, d
