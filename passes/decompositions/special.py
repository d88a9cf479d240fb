"""Special functions that ATen computes with fixed Cephes formulas (Chebyshev series,
rational approximations, piecewise by |x|): modified Bessel functions of the first and
second kind, the inverse normal CDF, and polygamma of order 0 and 1. Each is written
in prim elementwise ops, every piece computed and the right one chosen by `where`, in
the order of aten/src/ATen/native/Math.h so that each step rounds as eager's does.

Promotion is the builder's `pointwise` with INT_TO_FLOAT: integer and bool inputs
compute in the default float, f16/bf16 in f32, as ATen's kernels upcast them.
Bessel functions of the first kind, Y and Airy Ai are in special_bessel.py.
"""

from __future__ import annotations

import math

from xdsl.ir import SSAValue

from strata.dialects.aten import AtenOp
from strata.passes.decompositions import special_tables as T
from strata.passes.decompositions.builder import Decline, PrimBuilder
from strata.passes.decompositions.formula import Formula
from strata.passes.decompositions.rules import decomposes


def _unary(b: PrimBuilder, name: str, body) -> SSAValue:
    """`body(Formula, x)` as an elementwise op of the aten op's one tensor argument."""
    return b.pointwise("INT_TO_FLOAT", [b.arg(name)], lambda x: body(Formula(b, x), x))


# ---------------------------------------------------------------- I0 and I1
def _i0_small(f: Formula, ax: SSAValue) -> SSAValue:
    """exp(-x) I0(x) for 0 <= x <= 8 (Cephes i0e)."""
    return f.chbevl(f.sub(f.div(ax, 2.0), 2.0), T.I0E_A)


def _large_argument(f: Formula, ax: SSAValue) -> SSAValue:
    """32/x - 2, the variable of the series over [8, inf)."""
    return f.sub(f.div(32.0, ax), 2.0)


def i0(f: Formula, x: SSAValue) -> SSAValue:
    """ATen's calc_i0 (and modified_bessel_i0_forward, the same steps)."""
    ax = f.fn("abs", x)
    e = f.fn("exp", ax)
    small = f.mul(e, _i0_small(f, ax))
    large = f.div(f.mul(e, f.chbevl(_large_argument(f, ax), T.I0E_B)), f.fn("sqrt", ax))
    return f.where(f.cmp("le", ax, 8.0), small, large)


def i0e(f: Formula, x: SSAValue) -> SSAValue:
    """ATen's calc_i0e."""
    ax = f.fn("abs", x)
    large = f.div(f.chbevl(_large_argument(f, ax), T.I0E_B), f.fn("sqrt", ax))
    return f.where(f.cmp("le", ax, 8.0), _i0_small(f, ax), large)


def _i1_tables(f: Formula) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """calc_i1 and calc_i1e take shorter tables in float than in double."""
    return (T.I1E_A, T.I1E_B) if f.dtype == "f64" else (T.I1E_A_FLOAT, T.I1E_B_FLOAT)


def _odd(f: Formula, x: SSAValue, out: SSAValue) -> SSAValue:
    """`(x < 0) ? -out : out`."""
    return f.where(f.cmp("lt", x, 0.0), f.neg(out), out)


def i1(f: Formula, x: SSAValue) -> SSAValue:
    """ATen's calc_i1."""
    a, b = _i1_tables(f)
    ax = f.fn("abs", x)
    e = f.fn("exp", ax)
    small = f.mul(f.mul(e, ax), f.chbevl(f.sub(f.div(ax, 2.0), 2.0), a))
    large = f.div(f.mul(e, f.chbevl(_large_argument(f, ax), b)), f.fn("sqrt", ax))
    return _odd(f, x, f.where(f.cmp("le", ax, 8.0), small, large))


def i1e(f: Formula, x: SSAValue) -> SSAValue:
    """ATen's calc_i1e."""
    a, b = _i1_tables(f)
    ax = f.fn("abs", x)
    small = f.mul(f.chbevl(f.sub(f.div(ax, 2.0), 2.0), a), ax)
    large = f.div(f.chbevl(_large_argument(f, ax), b), f.fn("sqrt", ax))
    return _odd(f, x, f.where(f.cmp("le", ax, 8.0), small, large))


def _modified_i1_small(f: Formula, ax: SSAValue) -> SSAValue:
    """modified_bessel_i1_forward for |x| <= 8, unsigned: 0.5 (a - p) |x| exp(|x|)."""
    return f.mul(f.mul(f.chbevl(f.sub(f.div(ax, 2.0), 2.0), T.I1E_A), ax), f.fn("exp", ax))


def modified_i1(f: Formula, x: SSAValue) -> SSAValue:
    """ATen's modified_bessel_i1_forward: all 29 (25) terms in every dtype."""
    ax = f.fn("abs", x)
    large = f.div(f.mul(f.fn("exp", ax), f.chbevl(_large_argument(f, ax), T.I1E_B)), f.fn("sqrt", ax))
    return _odd(f, x, f.where(f.cmp("le", ax, 8.0), _modified_i1_small(f, ax), large))


# ---------------------------------------------------------------- K0 and K1
def _k(f: Formula, x: SSAValue, small: SSAValue, large: SSAValue) -> SSAValue:
    """The K functions' cases: inf at 0, NaN below, the series on (0, 2] and beyond."""
    out = f.where(f.cmp("le", x, 2.0), small, large)
    out = f.where(f.cmp("lt", x, 0.0), math.nan, out)
    return f.where(f.cmp("eq", x, 0.0), math.inf, out)


def _k_large(f: Formula, x: SSAValue, table: tuple[float, ...]) -> SSAValue:
    """0.5 (b - p) / sqrt(x), the series in 8/x - 2 (times exp(x) sqrt(x) K(x))."""
    return f.div(f.chbevl(f.sub(f.div(8.0, x), 2.0), table), f.fn("sqrt", x))


def _log_half(f: Formula, x: SSAValue) -> SSAValue:
    return f.fn("log", f.mul(0.5, x))


def _k0_small(f: Formula, x: SSAValue) -> SSAValue:
    """chbevl(x^2 - 2, A) - log(x/2) I0(x), for 0 < x <= 2 (where I0 takes its A series)."""
    i0_small = f.mul(f.fn("exp", x), _i0_small(f, x))
    return f.sub(f.chbevl(f.sub(f.mul(x, x), 2.0), T.K0_A), f.mul(_log_half(f, x), i0_small))


def _k1_small(f: Formula, x: SSAValue) -> SSAValue:
    """log(x/2) I1(x) + chbevl(x^2 - 2, A) / x, for 0 < x <= 2."""
    series = f.div(f.chbevl(f.sub(f.mul(x, x), 2.0), T.K1_A), x)
    return f.add(f.mul(_log_half(f, x), _modified_i1_small(f, x)), series)


def modified_k0(f: Formula, x: SSAValue) -> SSAValue:
    """ATen's modified_bessel_k0_forward."""
    large = f.div(f.mul(f.fn("exp", f.neg(x)), f.chbevl(f.sub(f.div(8.0, x), 2.0), T.K0_B)), f.fn("sqrt", x))
    return _k(f, x, _k0_small(f, x), large)


def modified_k1(f: Formula, x: SSAValue) -> SSAValue:
    """ATen's modified_bessel_k1_forward."""
    large = f.div(f.mul(f.fn("exp", f.neg(x)), f.chbevl(f.sub(f.div(8.0, x), 2.0), T.K1_B)), f.fn("sqrt", x))
    return _k(f, x, _k1_small(f, x), large)


def scaled_k0(f: Formula, x: SSAValue) -> SSAValue:
    """ATen's scaled_modified_bessel_k0_forward: exp(x) K0(x)."""
    return _k(f, x, f.mul(_k0_small(f, x), f.fn("exp", x)), _k_large(f, x, T.K0_B))


def scaled_k1(f: Formula, x: SSAValue) -> SSAValue:
    """ATen's scaled_modified_bessel_k1_forward: exp(x) K1(x)."""
    return _k(f, x, f.mul(_k1_small(f, x), f.fn("exp", x)), _k_large(f, x, T.K1_B))


# ---------------------------------------------------------------- ndtri
_EXP_MINUS_2 = 0.13533528323661269189
_SQRT_2PI = 2.50662827463100050242


def ndtri(f: Formula, y0: SSAValue) -> SSAValue:
    """ATen's calc_ndtri: a rational function of y - 1/2 in the middle, and of
    1/sqrt(-2 log y) in each tail (two tables, split at exp(-32))."""
    upper = f.cmp("gt", y0, f.folded(lambda one, c: one - c, 1.0, _EXP_MINUS_2))
    y = f.where(upper, f.sub(1.0, y0), y0)
    # 0.135 < y < 0.865
    c = f.sub(y, 0.5)
    c2 = f.mul(c, c)
    ratio = f.div(f.mul(c2, f.polevl(c2, T.NDTRI_P0)), f.polevl(c2, T.NDTRI_Q0))
    central = f.mul(f.add(c, f.mul(c, ratio)), _SQRT_2PI)
    # the tails, in z = 1/x for x = sqrt(-2 log y)
    x = f.fn("sqrt", f.mul(-2.0, f.fn("log", y)))
    x0 = f.sub(x, f.div(f.fn("log", x), x))
    z = f.div(1.0, x)
    near = f.div(f.mul(z, f.polevl(z, T.NDTRI_P1)), f.polevl(z, T.NDTRI_Q1))
    far = f.div(f.mul(z, f.polevl(z, T.NDTRI_P2)), f.polevl(z, T.NDTRI_Q2))
    tail = f.sub(x0, f.where(f.cmp("lt", x, 8.0), near, far))
    tail = f.where(upper, tail, f.neg(tail))
    out = f.where(f.cmp("gt", y, _EXP_MINUS_2), central, tail)
    out = f.where(f.either(f.cmp("lt", y0, 0.0), f.cmp("gt", y0, 1.0)), math.nan, out)
    out = f.where(f.cmp("eq", y0, 1.0), math.inf, out)
    return f.where(f.cmp("eq", y0, 0.0), -math.inf, out)


# ---------------------------------------------------------------- polygamma
def trigamma(f: Formula, x: SSAValue) -> SSAValue:
    """ATen's trigamma (Math.h): reflection below 1/2, six steps of the recurrence
    psi1(x) = psi1(x + 1) + 1/x^2, then the asymptotic series. Loop-free, so usable
    wherever a formula needs psi1."""
    pi = f.rounded(math.pi)
    reflect = f.cmp("lt", x, 0.5)
    s = f.fn("sin", f.mul(pi, x))
    pi2 = f.folded(lambda p: p * p, pi)
    result = f.where(reflect, f.neg(f.div(pi2, f.mul(s, s))), 0.0)
    v = f.where(reflect, f.sub(1.0, x), x)
    for _ in range(6):
        result = f.add(result, f.div(1.0, f.mul(v, v)))
        v = f.add(v, 1.0)
    ixx = f.div(1.0, f.mul(v, v))
    sixth, thirtieth, fortysecond = (f.folded(lambda a, b: a / b, 1.0, d) for d in (6.0, 30.0, 42.0))
    series = f.sub(sixth, f.mul(ixx, f.sub(thirtieth, f.mul(ixx, fortysecond))))
    tail = f.add(f.add(1.0, f.div(1.0, f.mul(2.0, v))), f.mul(ixx, series))
    result = f.add(result, f.div(tail, v))
    return f.where(reflect, f.neg(result), result)


@decomposes("aten::polygamma")
def polygamma(op: AtenOp, b: PrimBuilder) -> SSAValue:
    """Orders 0 (digamma) and 1 (trigamma); higher orders need zeta's loop."""
    n = b.arg("n")
    if n == 0:
        return b.pointwise("INT_TO_FLOAT", [b.arg("self")], lambda x: b.ew("digamma", x))
    if n == 1:
        return _unary(b, "self", trigamma)
    if isinstance(n, int) and n >= 2:
        from strata.passes.decompositions.special_loops import polygamma_from_zeta

        return polygamma_from_zeta(op, b, n)
    raise Decline(f"polygamma of order {n} needs the zeta function")


@decomposes("aten::special_erfcx")
def erfcx(op: AtenOp, b: PrimBuilder) -> SSAValue:
    """prim.erfcx: ATen's table of 100 polynomials is code generation's to read."""
    return b.pointwise("INT_TO_FLOAT", [b.arg("self")], lambda x: b.ew("erfcx", x))


# ---------------------------------------------------------------- the rules
_RULES = {
    "aten::i0": ("self", i0),
    "aten::special_i0e": ("self", i0e),
    "aten::special_i1": ("self", i1),
    "aten::special_i1e": ("self", i1e),
    "aten::special_modified_bessel_i0": ("self", i0),
    "aten::special_modified_bessel_i1": ("self", modified_i1),
    "aten::special_modified_bessel_k0": ("self", modified_k0),
    "aten::special_modified_bessel_k1": ("self", modified_k1),
    "aten::special_scaled_modified_bessel_k0": ("x", scaled_k0),
    "aten::special_scaled_modified_bessel_k1": ("x", scaled_k1),
    "aten::special_ndtri": ("self", ndtri),
}


def _rule(argument: str, body):
    def rule(op: AtenOp, b: PrimBuilder) -> SSAValue:
        return _unary(b, argument, body)

    return rule


for _name, (_argument, _body) in _RULES.items():
    decomposes(_name)(_rule(_argument, _body))
