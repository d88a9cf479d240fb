"""Bessel functions J0, J1, Y0, Y1, the spherical j0 and Airy Ai, as ATen computes them
(aten/src/ATen/native/Math.h, `*_forward`, from Cephes): a rational function on
[0, 5] (Airy: a power series on (-2.09, 2.09)) and Hankel's asymptotic form beyond,
each piece in prim elementwise ops, chosen by `where`, in ATen's order of operations.
See special.py for the conventions.
"""

from __future__ import annotations

import math

from xdsl.ir import SSAValue

from strata.passes.decompositions import special_tables as T
from strata.passes.decompositions.builder import PrimBuilder
from strata.passes.decompositions.formula import Formula
from strata.passes.decompositions.rules import decomposes
from strata.passes.decompositions.special import _unary

_SQRT_2_OVER_PI = 0.797884560802865355879892119868763737
_TWO_OVER_PI = 0.636619772367581343075535053490057448
_QUARTER_PI = 0.785398163397448309615660845819875721
_THREE_QUARTER_PI = 2.356194490192344928846982537459627163


def _hankel(f: Formula, x: SSAValue, w: SSAValue, tables, shift: float, kind: str) -> SSAValue:
    """(P cos(x - shift) - 5/x Q sin(x - shift)) sqrt(2/pi) / sqrt(x) for J, and
    (P sin + 5/x Q cos) for Y: P = PP(w)/PQ(w), Q = QP(w)/QQ(w), x > 5."""
    pp, pq, qp, qq = tables
    p = f.div(f.polevl(w, pp), f.polevl(w, pq))
    q = f.mul(f.div(5.0, x), f.div(f.polevl(w, qp), f.polevl(w, qq)))
    phase = f.sub(x, shift)
    if kind == "j":
        s = f.sub(f.mul(p, f.fn("cos", phase)), f.mul(q, f.fn("sin", phase)))
    else:
        s = f.add(f.mul(p, f.fn("sin", phase)), f.mul(q, f.fn("cos", phase)))
    return f.div(f.mul(s, _SQRT_2_OVER_PI), f.fn("sqrt", x))


_J0_TABLES = (T.J0_PP, T.J0_PQ, T.J0_QP, T.J0_QQ)
_J1_TABLES = (T.J1_PP, T.J1_PQ, T.J1_QP, T.J1_QQ)


def _j0_large(f: Formula, x: SSAValue, kind: str) -> SSAValue:
    return _hankel(f, x, f.div(25.0, f.mul(x, x)), _J0_TABLES, _QUARTER_PI, kind)


def _j1_large(f: Formula, x: SSAValue, kind: str) -> SSAValue:
    five_over_x = f.div(5.0, x)
    return _hankel(f, x, f.mul(five_over_x, five_over_x), _J1_TABLES, _THREE_QUARTER_PI, kind)


def _j0_small(f: Formula, x: SSAValue) -> SSAValue:
    """J0 for 0 <= x <= 5: (x^2 - r1^2)(x^2 - r2^2) RP(x^2)/RQ(x^2), 1 - x^2/4 near 0."""
    xx = f.mul(x, x)
    roots = f.mul(f.sub(xx, 5.78318596294678452118e+00), f.sub(xx, 3.04712623436620863991e+01))
    rational = f.div(f.mul(roots, f.polevl(xx, T.J0_RP)), f.polevl(xx, T.J0_RQ))
    return f.where(f.cmp("lt", x, 0.00001), f.sub(1.0, f.div(xx, 4.0)), rational)


def _j1_small(f: Formula, x: SSAValue) -> SSAValue:
    """J1 for |x| <= 5: RP(x^2)/RQ(x^2) x (x^2 - r1^2)(x^2 - r2^2), odd in x."""
    xx = f.mul(x, x)
    out = f.mul(f.div(f.polevl(xx, T.J1_RP), f.polevl(xx, T.J1_RQ)), x)
    out = f.mul(out, f.sub(xx, 1.46819706421238932572e+01))
    return f.mul(out, f.sub(xx, 4.92184563216946036703e+01))


def j0(f: Formula, x: SSAValue) -> SSAValue:
    """ATen's bessel_j0_forward."""
    ax = f.fn("abs", x)
    return f.where(f.cmp("le", ax, 5.0), _j0_small(f, ax), _j0_large(f, ax, "j"))


def j1(f: Formula, x: SSAValue) -> SSAValue:
    """ATen's bessel_j1_forward: -J1(-x) below 0."""
    ax = f.fn("abs", x)
    large = _j1_large(f, ax, "j")
    large = f.where(f.cmp("lt", x, 0.0), f.neg(large), large)
    return f.where(f.cmp("le", ax, 5.0), _j1_small(f, x), large)


def _y(f: Formula, x: SSAValue, small: SSAValue, large: SSAValue) -> SSAValue:
    """Y's cases: -inf at 0, NaN below 0, the rational form on (0, 5], Hankel's beyond."""
    out = f.where(f.cmp("le", x, 5.0), small, large)
    out = f.where(f.cmp("lt", x, 0.0), math.nan, out)
    return f.where(f.cmp("eq", x, 0.0), -math.inf, out)


def y0(f: Formula, x: SSAValue) -> SSAValue:
    """ATen's bessel_y0_forward: YP(x^2)/YQ(x^2) + 2/pi log(x) J0(x) on (0, 5]."""
    xx = f.mul(x, x)
    rational = f.div(f.polevl(xx, T.Y0_YP), f.polevl(xx, T.Y0_YQ))
    small = f.add(rational, f.mul(f.mul(_TWO_OVER_PI, f.fn("log", x)), _j0_small(f, x)))
    return _y(f, x, small, _j0_large(f, x, "y"))


def y1(f: Formula, x: SSAValue) -> SSAValue:
    """ATen's bessel_y1_forward: x YP(x^2)/YQ(x^2) + 2/pi (J1(x) log(x) - 1/x) on (0, 5]."""
    xx = f.mul(x, x)
    rational = f.mul(x, f.div(f.polevl(xx, T.Y1_YP), f.polevl(xx, T.Y1_YQ)))
    correction = f.sub(f.mul(_j1_small(f, x), f.fn("log", x)), f.div(1.0, x))
    small = f.add(rational, f.mul(_TWO_OVER_PI, correction))
    return _y(f, x, small, _j1_large(f, x, "y"))


def spherical_j0(f: Formula, x: SSAValue) -> SSAValue:
    """ATen's spherical_bessel_j0_forward: sin(x)/x, its Taylor series below 1/2."""
    xx = f.mul(x, x)
    terms = [f.folded(lambda a, b: a / b, s, d) for s, d in
             ((-1.0, 6.0), (1.0, 120.0), (-1.0, 5040.0), (1.0, 362880.0), (-1.0, 39916800.0), (1.0, 6227020800.0))]
    series = f.mul(xx, terms[-1])
    for c in reversed(terms[:-1]):
        series = f.mul(xx, f.add(c, series))
    series = f.add(1.0, series)
    out = f.where(f.cmp("lt", f.fn("abs", x), 0.5), series, f.div(f.fn("sin", x), x))
    return f.where(f.fn("isinf", x), 0.0, out)


# Steps of Ai's power series that ATen's loop (until a term is below epsilon) can take
# on (-2.09, 2.09): at most 10 in float and 14 in double; the terms after 16 are
# below 1e-45 of the sum.
_AIRY_SERIES_STEPS = 16
_AIRY_C1 = 0.355028053887817239260
_AIRY_C2 = 0.258819403792806798405
_INV_SQRT_PI = 5.64189583547756286948e-01


def _airy_series(f: Formula, x: SSAValue) -> SSAValue:
    """c1 f(x) - c2 g(x), the Maclaurin series of Ai, summed while the last term of
    f is above epsilon relative to f (ATen's loop), each lane stopping where it would."""
    eps = {"f64": 2.0**-52, "f32": 2.0**-23}[f.dtype]
    z = f.mul(f.mul(x, x), x)
    m, n, fs, gs, t = f.const(1.0), x, f.const(1.0), x, f.const(1.0)
    k = 1.0
    for _ in range(_AIRY_SERIES_STEPS):
        running = f.cmp("gt", t, eps)
        m = f.div(f.div(f.mul(m, z), k + 1), k + 2)
        n = f.div(f.div(f.mul(n, z), k + 2), k + 3)
        k += 3
        fs = f.where(running, f.add(fs, m), fs)
        gs = f.where(running, f.add(gs, n), gs)
        t = f.where(running, f.fn("abs", f.div(m, fs)), t)
    return f.sub(f.mul(_AIRY_C1, fs), f.mul(_AIRY_C2, gs))


def airy_ai(f: Formula, x: SSAValue) -> SSAValue:
    """ATen's airy_ai_forward: the series near 0, the asymptotic forms beyond +-2.09."""
    # x < -2.09: oscillating, in z = 1/zeta, zeta = 2/3 (-x)^(3/2)
    neg = f.neg(x)
    zeta = f.div(f.mul(f.mul(-2.0, x), f.fn("sqrt", neg)), 3.0)
    z = f.div(1.0, zeta)
    zz = f.mul(z, z)
    afn, afd = f.polevl(zz, T.AIRY_AFN), f.polevl(zz, T.AIRY_AFD)
    agn, agd = f.polevl(zz, T.AIRY_AGN), f.polevl(zz, T.AIRY_AGD)
    phase = f.add(zeta, f.folded(lambda q, p: q * p, 0.25, math.pi))
    amplitude = f.div(_INV_SQRT_PI, f.fn("sqrt", f.fn("sqrt", neg)))
    wave = f.sub(
        f.mul(f.fn("sin", phase), f.add(1.0, f.div(f.mul(zz, afn), afd))),
        f.mul(f.fn("cos", phase), f.div(f.mul(z, agn), agd)),
    )
    negative = f.mul(amplitude, wave)
    # x >= 2.09: decaying, in 1/zeta, zeta = 2/3 x^(3/2)
    zeta = f.div(f.mul(f.mul(2.0, x), f.fn("sqrt", x)), 3.0)
    inv = f.div(1.0, zeta)
    ratio = f.div(f.polevl(inv, T.AIRY_AN), f.polevl(inv, T.AIRY_AD))
    scale = f.mul(f.mul(2.0, f.fn("sqrt", f.fn("sqrt", x))), f.fn("exp", zeta))
    positive = f.div(f.mul(_INV_SQRT_PI, ratio), scale)

    out = f.where(f.cmp("ge", x, 2.09), positive, _airy_series(f, x))
    out = f.where(f.cmp("lt", x, -2.09), negative, out)
    out = f.where(f.cmp("gt", x, 103.892), 0.0, out)
    return f.where(f.fn("isinf", x), math.nan, out)


_RULES = {
    "aten::special_bessel_j0": ("self", j0),
    "aten::special_bessel_j1": ("self", j1),
    "aten::special_bessel_y0": ("self", y0),
    "aten::special_bessel_y1": ("self", y1),
    "aten::special_spherical_bessel_j0": ("x", spherical_j0),
    "aten::special_airy_ai": ("x", airy_ai),
}


def _rule(argument: str, body):
    def rule(op, b: PrimBuilder) -> SSAValue:
        return _unary(b, argument, body)

    return rule


for _name, (_argument, _body) in _RULES.items():
    decomposes(_name)(_rule(_argument, _body))
