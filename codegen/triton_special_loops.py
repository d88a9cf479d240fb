"""@triton.jit helpers, as source text, for the prim ops of dialects/prim_special_loops.py:
Hurwitz zeta and the orthogonal polynomials, whose loops run a number of steps each
element sets.

A block runs `while any(active)`, each element's state updated under tl.where
while it is active, so that every element stops where ATen's scalar loop stops
(aten/src/ATen/native/Math.h, torch 2.13: `zeta` and the `*_polynomial_*_forward`
functions; codegen/llvm_special_loops.py is the same on the CPU). Polynomials compute
in the operands' type with `a*b - c*d` as one fma, as eager's builds contract it, but
the Chebyshev closed forms (cos(n·acos(y)) & co.) in f64: in f32 the rounding of
n·acos(y) dominates their error, and libdevice's acosf need not round as eager's does
(an H200 gave 3e-5 where eager erred 1e-5 at n = 600). zeta computes in f64. Masked-off lanes load 0, a degree that runs no step.

`PORTABLE` texts run on both targets, `INTERPRETER` ones replace them in Triton's
interpreter, which cannot call libdevice; triton_math merges both into its libraries.
"""

from __future__ import annotations

INF = 'float("inf")'
NAN = 'float("nan")'


def _jit(signature: str, body: str) -> str:
    lines = "\n".join(f"    {line}" for line in body.strip().splitlines())
    return f"@triton.jit\ndef {signature}:\n{lines}\n"


_SUPPORT = {
    # static_cast<int64_t>(n): NaN and values out of int64's range are negative on
    # x86 (INT64_MIN); -1 gives the same results.
    "sl_degree": _jit("_sl_degree(n)", """
ok = tl.abs(n) < 9.223372036854775808e18
return tl.where(ok, tl.where(ok, n, 0.0).to(tl.int64), -1)
"""),
    # (tl.reduce, not tl.max: the strata-run interpreter only runs helpers of this library)
    "sl_any": _jit("_sl_any(a, b)", "return a | b"),
    "sl_div": _jit("_sl_div(a, b)", """
if a.dtype == tl.float32:
    r = tl.div_rn(a, b)
else:
    r = a / b
return r
"""),
}
_CUDA = {
    "sl_acos": _jit("_sl_acos(x)", "return libdevice.acos(x)"),
    "sl_pow": _jit("_sl_pow(a, b)", "return libdevice.pow(a, b)"),
}
# triton_math.INTERPRETER's f64 stand-ins for libdevice.
_INTERPRETED = {
    "sl_acos": _jit("_sl_acos(x)", "return _acos(x)"),
    "sl_pow": _jit("_sl_pow(a, b)", "return _pow(a, b)"),
}


def _polynomial(name: str, setup: list[str], cases: list[tuple[str, str]], q0: str, start: int,
                cmp: str, bound: str, step: str, inc: int = 1, stop_on_nan: bool = True) -> str:
    """A polynomial's helper: ATen's special cases in order, (condition, value), and
    `for (k = start; k <cmp> bound && !isnan(q); k += inc) { r = step; p = q; q = r; }`
    from p = 1, q = q0, where none holds."""
    go = f"(k {cmp} {bound})" + (" & (q == q)" if stop_on_nan else "")
    body = [
        "x, n = tl.broadcast(x, n)",
        "m = _sl_degree(n)",
        "one = tl.full(x.shape, 1.0, x.dtype)",
        "even = (m % 2) == 0",
        *setup,
        f"q = {q0}",
        "p = one",
        f"k = tl.full(x.shape, {start}, tl.int64)",
        "special = " + " | ".join(f"({c})" for c, _ in cases),
        f"active = (special == 0) & {go}",
        "while tl.reduce(active.to(tl.int32), None, _sl_any) > 0:",
        f"    r = {step}",
        "    p = tl.where(active, q, p)",
        "    q = tl.where(active, r, q)",
        f"    k = k + {inc}",
        f"    active = active & {go}",
        "out = q",
        *(f"out = tl.where({c}, {v}, out)" for c, v in reversed(cases)),
        "return out",
    ]
    return _jit(f"_{name}(x, n)", "\n".join(body))


def _chebyshev(kind: str, shifted: bool) -> str:
    """chebyshev_polynomial_{t,u,v,w}_forward and the shifted_ forms, whose argument
    is y = 2x - 1 (x == 1 and x == 0 their ends)."""
    name = f"{'shifted_' if shifted else ''}chebyshev_polynomial_{kind}"
    setup = [
        f"y = {'x + x - 1.0' if shifted else 'x'}",
        "yy = y + y",
        "acos = _sl_acos(y)",
        "half = acos * 0.5",
        "n1 = (m + 1).to(x.dtype)",
        "n21 = (m + m + 1).to(x.dtype)",
        # the closed forms' values in f64 (their conditions in x's type, as ATen's)
        "w = y.to(tl.float64)",
        "acos_w = _sl_acos(w)",
        "half_w = acos_w * 0.5",
        "n1_w = (m + 1).to(tl.float64)",
        "n_half_w = m.to(tl.float64) + 0.5",
    ]
    sign_one, sign_n1, sign_n21 = ("tl.where(even, one, -one)", "tl.where(even, n1, -n1)", "tl.where(even, n21, -n21)")
    if kind == "t":
        ends, trig, q0 = ("one", sign_one), "{m}.cos(m.to(tl.float64) * acos_w).to(x.dtype)", "y"
    elif kind == "u":
        setup.append("s = {m}.sin(acos)")
        trig = "tl.where(s != 0.0, {m}.sin(n1_w * acos_w) / {m}.sin(acos_w), n1_w * {m}.cos(n1_w * acos_w) / w).to(x.dtype)"
        ends, q0 = ("n1", sign_n1), "yy"
    elif kind == "v":
        trig = f"tl.where({{m}}.sin(half) != 1.0, ({{m}}.cos(n_half_w * acos_w) / {{m}}.cos(half_w)).to(x.dtype), {sign_n21})"
        ends, q0 = ("one", sign_n21), "yy - 1.0"
    else:
        at_one = sign_one if shifted else f"tl.where(y > 0.0, n21, {sign_one})"
        trig = f"tl.where({{m}}.cos(half) != 1.0, ({{m}}.sin(n_half_w * acos_w) / {{m}}.sin(half_w)).to(x.dtype), {at_one})"
        ends, q0 = ("n21", sign_one), "yy + 1.0"
    if shifted:
        end_cases = [("x == 1.0", ends[0]), ("x == 0.0", ends[1])]
        threshold = 4 if kind == "w" else 6
    else:
        end_cases = [("tl.abs(x) == 1.0", f"tl.where(x > 0.0, {ends[0]}, {ends[1]})")]
        threshold = 6 if kind == "t" else 8
    cases = [("m < 0", "0.0"), *end_cases, (f"(m > {threshold}) & (tl.abs(y) < 1.0)", trig), ("m == 0", "one"), ("m == 1", q0)]
    return _polynomial(name, setup, cases, q0, 2, "<=", "m", "tl.fma(yy, q, -p)")


def _hermite(physicists: bool) -> str:
    """hermite_polynomial_h_forward and _he_forward: NaN past ATen's
    getHermitianLimit (128 for float, 512 for double), no NaN test in the loop."""
    setup = [f"a = {'x + x' if physicists else 'x'}", "too_high = m > 128", "if x.dtype == tl.float64:", "    too_high = m > 512"]
    cases = [("m < 0", "0.0"), ("m == 0", "one"), ("m == 1", "a"), ("too_high", NAN)]
    step = "tl.fma(a, q, -(k.to(x.dtype) * p))"
    if physicists:
        return _polynomial("hermite_polynomial_h", setup, cases, "a", 2, "<", "m + m", step, inc=2, stop_on_nan=False)
    return _polynomial("hermite_polynomial_he", setup, cases, "a", 1, "<", "m", step, stop_on_nan=False)


_LAGUERRE = _polynomial(
    "laguerre_polynomial_l", ["omx = 1.0 - x"],
    [("m < 0", "0.0"), ("tl.abs(x) == 0.0", "one"), ("m == 0", "one"), ("m == 1", "omx")],
    "omx", 1, "<", "m", "_sl_div(tl.fma((k + k).to(x.dtype) + omx, q, -(k.to(x.dtype) * p)), (k + 1).to(x.dtype))",
)
_LEGENDRE = _polynomial(
    "legendre_polynomial_p", [],
    [("m < 0", "0.0"), ("tl.abs(x) == 1.0", "tl.where((x > 0.0) | even, one, -one)"), ("m == 0", "one"), ("m == 1", "x")],
    "x", 1, "<", "m", "_sl_div(tl.fma((k + k + 1).to(x.dtype) * x, q, -(k.to(x.dtype) * p)), (k + 1).to(x.dtype))",
)

# ---------------------------------------------------------------- zeta
_MACHEP = 1.11022302462515654042e-16
# Cephes' Euler–Maclaurin coefficients: (2k)! / B_2k.
_ZETA_A = (
    12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
    -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
    1.8152105401943546773e17, -7.1661652561756670113e18,
)
_ZETA_TAIL = "\n".join(
    f"""fac = fac * (x + k)
tb = tb / w
t = fac * tb / {c!r}
updated = total + t
small = tl.abs(t / updated) < {_MACHEP!r}
total = tl.where(finished, total, updated)
finished = finished | small
k = k + 1.0
fac = fac * (x + k)
tb = tb / w
k = k + 1.0"""
    for c in _ZETA_A
)
_ZETA = _jit("_zeta(x0, q0)", f"""
x = x0.to(tl.float64)
q = q0.to(tl.float64)
x, q = tl.broadcast(x, q)
zero = tl.full(x.shape, 0.0, tl.float64)
edge_value = tl.where((q <= 0.0) & (x != tl.floor(x)), {NAN}, zero)
edge_value = tl.where((q <= 0.0) & (q == tl.floor(q)), {INF}, edge_value)
edge_value = tl.where(x < 1.0, {NAN}, edge_value)
edge_value = tl.where(x == 1.0, {INF}, edge_value)
edge = (x <= 1.0) | ((q <= 0.0) & ((q == tl.floor(q)) | (x != tl.floor(x))))
s = _sl_pow(q, -x)
a = q
b = zero
i = tl.full(x.shape, 0, tl.int32)
converged = zero != zero
active = (edge == 0) & ((i < 9) | (a <= 9.0))
while tl.reduce(active.to(tl.int32), None, _sl_any) > 0:
    a1 = a + 1.0
    b1 = _sl_pow(a1, -x)
    s1 = s + b1
    a = tl.where(active, a1, a)
    b = tl.where(active, b1, b)
    s = tl.where(active, s1, s)
    i = tl.where(active, i + 1, i)
    converged = converged | (active & (-{_MACHEP!r} * s1 < b1) & (b1 < {_MACHEP!r} * s1))
    active = (edge == 0) & (converged == 0) & ((i < 9) | (a <= 9.0))
w = a
total = s + b * w / (x - 1.0)
total = total - 0.5 * b
fac = zero + 1.0
k = zero
tb = b
finished = converged
{_ZETA_TAIL}
r = tl.where(converged, s, total)
r = tl.where(edge, edge_value, r)
return r.to(x0.dtype)
""")

_HELPERS = {
    **{f"chebyshev_polynomial_{k}": _chebyshev(k, False) for k in "tuvw"},
    **{f"shifted_chebyshev_polynomial_{k}": _chebyshev(k, True) for k in "tuvw"},
    "hermite_polynomial_h": _hermite(True),
    "hermite_polynomial_he": _hermite(False),
    "laguerre_polynomial_l": _LAGUERRE,
    "legendre_polynomial_p": _LEGENDRE,
    "zeta": _ZETA,
}
NAMES = tuple(_HELPERS)  # the prim ops these helpers compute, each by its own name
PORTABLE = {**_SUPPORT, **_CUDA, **_HELPERS}
INTERPRETER = dict(_INTERPRETED)
