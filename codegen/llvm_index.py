"""Index expressions (sympy, over loop variables and shape symbols) as i64 LLVM IR.

Sizes, loop counters and offsets into a buffer are never negative, so floor division
and Mod are unsigned division and remainder, which LLVM turns into shifts and masks
for powers of two. One sympy cannot prove non-negative (over an `n…` or `m…` symbol:
`Mod(x0 + ns3, 5)` of a roll by a Python int; `floor(-s0/5)`) rounds as Python does instead: signed
division and remainder, corrected toward negative infinity. A division outside floor
is one torch proved exact (`s0/4`): it is a floor division too. Adds and
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
from strata.dialects.types import may_be_negative
from strata.runtime.index_values import exact_fraction, sum_divides

NSW = ("nsw",)


def lower_index(b: ir.IRBuilder, expr: sympy.Expr, env: Mapping[str, ir.Value]) -> ir.Value:
    """The i64 value of `expr`, whose symbols are looked up by name in `env`."""
    if expr.is_Integer:
        return ir.Constant(I64, int(expr))
    if expr.is_Symbol:
        return env[expr.name]
    if sum_divides(expr):  # an exact division spread over a sum (x0*(s + 1)/2): one quotient
        p, q = exact_fraction(expr)
        n, d = unify(b, [lower_index(b, p, env), lower_index(b, q, env)])
        return _floor_div(b, n, d) if may_be_negative(p) or may_be_negative(q) else b.udiv(n, d)
    if isinstance(expr, sympy.Add):
        return reduce(lambda x, y: b.add(x, y, flags=NSW), _lower_all(b, expr.args, env))
    if isinstance(expr, sympy.Mul):
        if any(a.is_Rational and not a.is_Integer for a in expr.args):
            return lower_index(b, sympy.floor(expr, evaluate=False), env)  # an exact division
        return reduce(lambda x, y: b.mul(x, y, flags=NSW), _lower_all(b, expr.args, env))
    if isinstance(expr, sympy.Pow) and expr.exp.is_Integer and expr.exp > 0:
        base = lower_index(b, expr.base, env)
        return reduce(lambda x, y: b.mul(x, y, flags=NSW), [base] * int(expr.exp))
    if isinstance(expr, sympy.floor):
        signed = _signed_fraction(expr.args[0])
        numerator, denominator = _fraction(b, expr.args[0], env)
        return _floor_div(b, numerator, denominator) if signed else b.udiv(numerator, denominator)
    if isinstance(expr, sympy.ceiling):
        if _signed_fraction(expr.args[0]):  # ceiling(a) = -floor(-a)
            return b.neg(lower_index(b, sympy.floor(-expr.args[0]), env))
        numerator, denominator = _fraction(b, expr.args[0], env)
        rounded_up = b.add(numerator, b.sub(denominator, const_like(denominator, 1)), flags=NSW)
        return b.udiv(rounded_up, denominator)
    if isinstance(expr, sympy.Mod):
        if may_be_negative(expr.args[0]) or may_be_negative(expr.args[1]):  # k % -4: the divisor's sign
            return _floor_mod(b, *_lower_all(b, expr.args, env))
        return b.urem(*_lower_all(b, expr.args, env))
    if isinstance(expr, sympy.Abs):
        value = lower_index(b, expr.args[0], env)
        return b.select(b.icmp_signed("<", value, const_like(value, 0)), b.neg(value), value)
    if isinstance(expr, (sympy.Max, sympy.Min)):
        pick = ">" if isinstance(expr, sympy.Max) else "<"
        return reduce(lambda x, y: b.select(b.icmp_signed(pick, x, y), x, y), _lower_all(b, expr.args, env))
    raise CodegenError(
        f"index expression {expr} ({type(expr).__name__}) is not supported by the LLVM CPU code generator"
    )


def _signed_fraction(expr: sympy.Expr) -> bool:
    """Whether the fraction p/q that `expr` is may have a negative p or q."""
    return any(may_be_negative(part) for part in exact_fraction(expr))


def _floor_div(b: ir.IRBuilder, n: ir.Value, d: ir.Value) -> ir.Value:
    """Python's n // d: the truncated quotient, one less where the remainder's sign
    differs from the divisor's."""
    q, r = b.sdiv(n, d), b.srem(n, d)
    return b.select(_rounds_down(b, r, d), b.sub(q, const_like(q, 1)), q)


def _floor_mod(b: ir.IRBuilder, n: ir.Value, d: ir.Value) -> ir.Value:
    """Python's n % d: the remainder with the divisor's sign."""
    r = b.srem(n, d)
    return b.select(_rounds_down(b, r, d), b.add(r, d), r)


def _rounds_down(b: ir.IRBuilder, r: ir.Value, d: ir.Value) -> ir.Value:
    zero = const_like(r, 0)
    return b.and_(b.icmp_signed("!=", r, zero), b.icmp_signed("!=", b.icmp_signed("<", r, zero), b.icmp_signed("<", d, zero)))


def _lower_all(b: ir.IRBuilder, exprs: tuple[sympy.Expr, ...], env: Mapping[str, ir.Value]) -> list[ir.Value]:
    return unify(b, [lower_index(b, e, env) for e in exprs])


def _fraction(b: ir.IRBuilder, expr: sympy.Expr, env: Mapping[str, ir.Value]) -> tuple[ir.Value, ir.Value]:
    """`expr` (e.g. s0/3 + x0/6) as integer numerator and denominator ((2*s0 + x0, 6))."""
    numerator, denominator = exact_fraction(expr)
    n, d = unify(b, [lower_index(b, numerator, env), lower_index(b, denominator, env)])
    return n, d
