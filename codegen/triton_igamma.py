"""@triton.jit helpers, as source text, for prim.igamma and prim.igammac: ATen's
calc_igamma and calc_igammac (aten/src/ATen/native/Math.h, torch 2.13), the same
steps as codegen/llvm_igamma.py in a block's lanes.

Every branch of ATen's scalar code becomes a mask: each helper (series, continued
fraction, asymptotic series) runs for the lanes its mask selects, its loop `while
any(active)` with each lane's state updated under tl.where while it is active, so that
a lane stops where ATen's loop stops. The operands' type T is f32 or f64 (f16/bf16
arrive as f32); the double literals of the C++ source promote to f64 where C++
promotes them. A NaN that no boundary rule catches gives NaN and runs no loop (ATen's
would run 2000 steps to the same NaN). Masked-off lanes load a = x = 0, a boundary.

`PORTABLE` texts run on both targets; `INTERPRETER` ones replace the libdevice calls
in Triton's interpreter (triton_math's f64 stand-ins, rounded to T).
"""

from __future__ import annotations

import struct

from strata.codegen.igamma_table import (
    BIG, BIGINV, EXP1, IGAMMA_D, LANCZOS_DENOM, LANCZOS_G, LANCZOS_NUM, MACHEP, MAXITER, MAXLOG, PI_FLOAT,
)

NAN = 'float("nan")'
INF = 'float("inf")'


def _f32(v: float) -> float:
    """v rounded to f32, as a `static float` holds it."""
    return struct.unpack("f", struct.pack("f", v))[0]


def _jit(signature: str, body: str) -> str:
    lines = "\n".join(f"    {line}" for line in body.strip().splitlines())
    return f"@triton.jit\ndef {signature}:\n{lines}\n"


def _per_type(name: str, values: tuple[float, float]) -> str:
    """`name = <double value>` or `<float value>`, by T (a constexpr branch)."""
    return f"if a.dtype == tl.float64:\n    {name} = {values[0]!r}\nelse:\n    {name} = {values[1]!r}"


_ANY = "tl.reduce({}.to(tl.int32), None, _ig_any) > 0"

_SUPPORT = {
    "ig_any": _jit("_ig_any(a, b)", "return a | b"),
    # IEEE division and square root in f32 (CUDA's `/` and tl.sqrt are approximate there)
    "ig_div": _jit("_ig_div(a, b)", """
if a.dtype == tl.float32:
    r = tl.div_rn(a, b)
else:
    r = a / b
return r
"""),
    "ig_sqrt": _jit("_ig_sqrt(a)", """
if a.dtype == tl.float32:
    r = tl.sqrt_rn(a)
else:
    r = tl.sqrt(a)
return r
"""),
}
_FUNCTIONS = ("log", "exp", "lgamma", "erfc", "log1p", "expm1")
_CUDA = {
    **{f"ig_{f}": _jit(f"_ig_{f}(x)", f"return libdevice.{f}(x)") for f in _FUNCTIONS},
    "ig_pow": _jit("_ig_pow(x, y)", "return libdevice.pow(x, y)"),
}
_INTERPRETED = {
    "ig_log": _jit("_ig_log(x)", "return tl.log(x.to(tl.float64)).to(x.dtype)"),
    "ig_exp": _jit("_ig_exp(x)", "return tl.exp(x.to(tl.float64)).to(x.dtype)"),
    **{f"ig_{f}": _jit(f"_ig_{f}(x)", f"return _{f}(x)") for f in ("lgamma", "erfc", "log1p", "expm1")},
    "ig_pow": _jit("_ig_pow(x, y)", "return _pow(x, y)"),
}


def _horner(var: str, coefficients) -> str:
    text = repr(coefficients[0])
    for c in coefficients[1:]:
        text = f"({text}) * {var} + {c!r}"
    return text


# _igam_helper_fac: x^a e^-x / Gamma(a), through Boost's Lanczos sum where a ~ x.
_FAC = _jit("_ig_fac(a, x)", f"""
{_per_type("maxlog", MAXLOG)}
wide = tl.abs(a - x).to(tl.float64) > 0.4 * tl.abs(a).to(tl.float64)
ax = a * _ig_log(x) - x - _ig_lgamma(a)
direct = tl.where(ax < -maxlog, 0.0, _ig_exp(ax))
big = tl.abs(a) > 1.0
y = tl.where(big, _ig_div(1.0 + a * 0.0, a), a)
num = tl.where(big, {_horner("y", LANCZOS_NUM[::-1])}, {_horner("y", LANCZOS_NUM)})
den = tl.where(big, {_horner("y", LANCZOS_DENOM[::-1])}, {_horner("y", LANCZOS_DENOM)})
fac = a + {LANCZOS_G!r} - 0.5
res = _ig_div(_ig_sqrt(_ig_div(fac, {EXP1!r} + a * 0.0)), _ig_div(num, den))
near = res * (_ig_exp(a - x) * _ig_pow(_ig_div(x, fac), a))
numfac = _ig_div(x - a - {LANCZOS_G!r} + 0.5, fac)
if a.dtype == tl.float64:
    exponent = a * (_ig_log1p(numfac) - numfac) + x * (0.5 - {LANCZOS_G!r}) / fac
else:
    exponent = (a * (_ig_log1p(numfac) - numfac)).to(tl.float64) + x.to(tl.float64) * (0.5 - {_f32(LANCZOS_G)!r}) / fac.to(tl.float64)
far = (res.to(tl.float64) * _ig_exp(exponent)).to(a.dtype)
return tl.where(wide, direct, tl.where((a < 200.0) & (x < 200.0), near, far))
""")

# _igam_helper_series (DLMF 8.11.4), for the lanes of `on`.
_SERIES = _jit("_ig_series(a, x, on)", f"""
{_per_type("machep", MACHEP)}
ax = _ig_fac(a, x)
r = a
c = a * 0.0 + 1.0
ans = c
i = 0
active = on & (ax != 0.0)
while {_ANY.format("active")}:
    r1 = r + 1.0
    c1 = c * _ig_div(x, r1)
    ans1 = ans + c1
    r = tl.where(active, r1, r)
    c = tl.where(active, c1, c)
    ans = tl.where(active, ans1, ans)
    i += 1
    active = active & ((c1 <= machep * ans1) == 0) & (i < {MAXITER})
return tl.where(ax == 0.0, 0.0, _ig_div(ans * ax, a))
""")

# _igamc_helper_series (DLMF 8.7.3), for the lanes of `on`.
_CSERIES = _jit("_ig_cseries(a, x, on)", f"""
{_per_type("machep", MACHEP)}
zero = a * 0.0
fac = zero + 1.0
total = zero
n = 1
active = on
while {_ANY.format("active")}:
    nf = zero + n
    fac1 = fac * _ig_div(-x, nf)
    term = _ig_div(fac1, a + nf)
    total1 = total + term
    fac = tl.where(active, fac1, fac)
    total = tl.where(active, total1, total)
    n += 1
    active = active & ((tl.abs(term) <= machep * tl.abs(total1)) == 0) & (n < {MAXITER})
logx = _ig_log(x)
term = -_ig_expm1(a * logx - _ig_lgamma(1.0 + a))
return term - _ig_exp(a * logx - _ig_lgamma(a)) * total
""")

# _igamc_helper_continued_fraction (DLMF 8.9.2), for the lanes of `on`.
_FRACTION = _jit("_ig_fraction(a, x, on)", f"""
{_per_type("machep", MACHEP)}
{_per_type("big", BIG)}
{_per_type("biginv", BIGINV)}
ax = _ig_fac(a, x)
y = 1.0 - a
z = x + y + 1.0
c = a * 0.0
pkm2 = c + 1.0
qkm2 = x
pkm1 = x + 1.0
qkm1 = z * x
ans = _ig_div(pkm1, qkm1)
i = 0
active = on & (ax != 0.0)
while {_ANY.format("active")}:
    c1 = c + 1.0
    y1 = y + 1.0
    z1 = z + 2.0
    yc = y1 * c1
    pk = tl.fma(pkm1, z1, -(pkm2 * yc))
    qk = tl.fma(qkm1, z1, -(qkm2 * yc))
    nonzero = qk != 0.0
    r = _ig_div(pk, qk)
    t = tl.where(nonzero, tl.abs(_ig_div(ans - r, r)), 1.0)
    scale = tl.where(tl.abs(pk) > big, biginv, 1.0)
    c = tl.where(active, c1, c)
    y = tl.where(active, y1, y)
    z = tl.where(active, z1, z)
    ans = tl.where(active & nonzero, r, ans)
    pkm2 = tl.where(active, pkm1 * scale, pkm2)
    qkm2 = tl.where(active, qkm1 * scale, qkm2)
    pkm1 = tl.where(active, pk * scale, pkm1)
    qkm1 = tl.where(active, qk * scale, qkm1)
    i += 1
    active = active & ((t <= machep) == 0) & (i < {MAXITER})
return tl.where(ax == 0.0, 0.0, ans * ax)
""")


def _asymptotic_rows() -> str:
    """The 25 x 25 steps of the asymptotic series' two loops, unrolled: row k's inner
    loop sums c_k = sum_n d[k][n] eta^n until a term is below MACHEP of the sum; the
    outer one adds c_k / a^k until a term grows or is below MACHEP of the sum."""
    lines = ["e0 = zero + 1.0", *(f"e{n} = eta * e{n - 1}" for n in range(1, 25))]
    for row in IGAMMA_D:
        lines += [f"ck = zero + {row[0]!r}", "on = live"]
        for n, d in enumerate(row[1:], 1):
            lines += [
                f"t = {d!r} * e{n}",
                "u = ck + t",
                "ck = tl.where(on, u, ck)",
                "on = on & ((tl.abs(t) < machep * tl.abs(u)) == 0)",
            ]
        lines += [
            "term = ck * afac",
            "absterm = tl.abs(term)",
            "grew = absterm > absold",
            "summed = total + term",
            "total = tl.where(live & (grew == 0), summed, total)",
            "stop = grew | (absterm < machep * tl.abs(summed))",
            "absold = tl.where(live, absterm, absold)",
            "afac = tl.where(live, _ig_div(afac, a), afac)",
            "live = live & (stop == 0)",
        ]
    return "\n".join("    " + line for line in lines)


# _igam_helper_asymptotic_series (DLMF 8.12.3 with sgn = -1, 8.12.4 with 1), for the
# lanes of `on`; the 625 steps run only in a block that has such lanes.
_ASYMPTOTIC = _jit("_ig_asymptotic(a, x, sgn, on)", f"""
{_per_type("machep", MACHEP)}
zero = a * 0.0
lam = _ig_div(x, a)
sigma = _ig_div(x - a, a)
root = _ig_sqrt(-2.0 * (_ig_log1p(sigma) - sigma))
eta = tl.where(lam > 1.0, root, tl.where(lam < 1.0, -root, 0.0))
res = 0.5 * _ig_erfc(sgn * eta * _ig_sqrt(_ig_div(a, 2.0 + zero)))
total = zero
if {_ANY.format("on")}:
    live = on
    afac = zero + 1.0
    absold = zero + {INF}
{_asymptotic_rows()}
# sgn * exp(-0.5*a*eta*eta) * sum / sqrt(2 * pi<float> * a), the first factors in double
wa = a.to(tl.float64)
weta = eta.to(tl.float64)
e = _ig_exp(-0.5 * wa * weta * weta)
correction = sgn * e * total.to(tl.float64) / _ig_sqrt(a * {2 * PI_FLOAT!r}).to(tl.float64)
return (res.to(tl.float64) + correction).to(a.dtype)
""")


def _calc(lower: bool) -> str:
    """calc_igamma (lower) or calc_igammac: the boundary rules, then the regime masks."""
    low, high = ("0.0", "1.0") if lower else ("1.0", "0.0")
    head = f"""
a, x = tl.broadcast(a0, x0)
nan = a * 0.0 + {NAN}
inf_a = tl.abs(a) == {INF}
inf_x = tl.abs(x) == {INF}
value = nan
value = tl.where(inf_x, {high}, value)
value = tl.where(inf_a, tl.where(inf_x, nan, {low}), value)
value = tl.where(x == 0.0, {low}, value)
value = tl.where(a == 0.0, tl.where(x > 0.0, {high}, nan), value)
value = tl.where((x < 0.0) | (a < 0.0), nan, value)
boundary = (x < 0.0) | (a < 0.0) | (a == 0.0) | (x == 0.0) | inf_a | inf_x | (a != a) | (x != x)
absxma_a = _ig_div(tl.abs(x - a), a)
asym = ((a > 20.0) & (a < 200.0) & (absxma_a < 0.3)) | ((a > 200.0) & (absxma_a < _ig_div(4.5 + a * 0.0, _ig_sqrt(a))))
asym = asym & (boundary == 0)
rest = (boundary == 0) & (asym == 0)
wx = x.to(tl.float64)
wa = a.to(tl.float64)
above = wx > 1.1
"""
    if lower:
        # 1 - calc_igammac(a, x) where x > 1 and x > a: there calc_igammac runs the
        # continued fraction if x > 1.1, else its series (x * 1.1 < a cannot hold)
        body = f"""
upper = rest & (x > 1.0) & (x > a)
fraction = upper & above
series_q = upper & (above == 0)
series_p = rest & (upper == 0)
r = tl.where(boundary, value, _ig_asymptotic(a, x, -1.0, asym))
r = tl.where(series_p, _ig_series(a, x, series_p), r)
r = tl.where(fraction, 1.0 - _ig_fraction(a, x, fraction), r)
r = tl.where(series_q, 1.0 - _ig_cseries(a, x, series_q), r)
"""
    else:
        body = """
below = x <= 0.5
lower_series = tl.where(above, x < a, tl.where(below, -0.4 / _ig_log(x).to(tl.float64) < wa, wx * 1.1 < wa))
series_p = rest & lower_series
fraction = rest & (lower_series == 0) & above
series_q = rest & (lower_series == 0) & (above == 0)
r = tl.where(boundary, value, _ig_asymptotic(a, x, 1.0, asym))
r = tl.where(series_p, 1.0 - _ig_series(a, x, series_p), r)
r = tl.where(fraction, _ig_fraction(a, x, fraction), r)
r = tl.where(series_q, _ig_cseries(a, x, series_q), r)
"""
    return _jit(f"_{'igamma' if lower else 'igammac'}(a0, x0)", head + body + "return r")


_HELPERS = {
    "ig_fac": _FAC,
    "ig_series": _SERIES,
    "ig_cseries": _CSERIES,
    "ig_fraction": _FRACTION,
    "ig_asymptotic": _ASYMPTOTIC,
    "igamma": _calc(lower=True),
    "igammac": _calc(lower=False),
}
NAMES = ("igamma", "igammac")  # the prim ops these helpers compute, each by its own name
PORTABLE = {**_SUPPORT, **_CUDA, **_HELPERS}
INTERPRETER = dict(_INTERPRETED)
