"""@triton.jit helper functions that generated kernels call, kept as source text.

Two libraries. `PORTABLE` helpers run on both targets: integer division and remainder
with torch's rounding, integer powers and shifts, NaN-propagating reduction combiners,
the few float functions libdevice lacks (digamma), and philox (kernel.philox).
`INTERPRETER` helpers stand in for libdevice functions, which Triton's interpreter cannot call: they compute in f64
from tl.* primitives (which the interpreter evaluates with numpy) and round once, so
that CPU results match torch within its test tolerances. A few `CUDA` helpers are
inline PTX, which only the GPU runs.

Texts may name `{m}`, the namespace of exp/log/sin/cos: `libdevice` on CUDA (precise
for f32 and f64), `tl` in the interpreter; and `{fmod}`, float fmod (`libdevice.fmod`
on CUDA, the `%` operator in the interpreter).
"""

from __future__ import annotations

import re

from strata.codegen import triton_erfcx, triton_igamma, triton_special_loops
from strata.codegen.triton_bits import HELPERS as BIT_HELPERS
from strata.dialects import philox


def _horner(var: str, coeffs: list[float]) -> str:
    """c0 + var*(c1 + var*(c2 + …)) as source text."""
    text = repr(coeffs[-1])
    for c in reversed(coeffs[:-1]):
        text = f"{c!r} + {var} * ({text})"
    return text


_ATAN_SERIES = [(-1) ** k / (2 * k + 1) for k in range(12)]
# Lanczos approximation of Gamma, g = 7, n = 9.
_LANCZOS = [
    0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313,
    -176.61502916214059, 12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6,
    1.5056327351493116e-7,
]
# Giles, "Approximating the erfinv function" (2010), single-precision coefficients.
_ERFINV_CENTRAL = [
    1.50140941, 0.246640727, -0.00417768164, -0.00125372503, 0.00021858087,
    -4.39150654e-06, -3.5233877e-06, 3.43273939e-07, 2.81022636e-08,
]
_ERFINV_TAIL = [
    2.83297682, 1.00167406, 0.00943887047, -0.0076224613, 0.00573950773,
    -0.00367342844, 0.00134934322, 0.000100950558, -0.000200214257,
]
# Numerical Recipes' erfc: relative error below 1.2e-7 everywhere.
_ERFC_TAIL = [
    -1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806,
    0.27886807, -1.13520398, 1.48851587, -0.82215223, 0.17087277,
]
# -B_{2k} / (2k) for k = 1..7, the asymptotic series of digamma in 1/x^2.
_DIGAMMA_SERIES = [-1 / 12, 1 / 120, -1 / 252, 1 / 240, -1 / 132, 691 / 32760, -1 / 12]

PI = repr(3.141592653589793)
HALF_PI = repr(1.5707963267948966)
LN2 = repr(0.6931471805599453)
INF = 'float("inf")'
NAN = 'float("nan")'


def _jit(signature: str, body: str) -> str:
    lines = "\n".join(f"    {line}" for line in body.strip().splitlines())
    return f"@triton.jit\ndef {signature}:\n{lines}\n"


def _f64_unary(name: str, body: str) -> str:
    """A helper that computes `body` (over y, x in f64) and rounds to x's type."""
    return _jit(f"_{name}(x)", f"y = x.to(tl.float64)\n{body.strip()}\nreturn r.to(x.dtype)")


PORTABLE: dict[str, str] = {
    **BIT_HELPERS,  # gcd, nextafter, frexp (codegen/triton_bits.py)
    "signbit": _jit("_signbit(x)", """
if x.dtype == tl.float64:
    bits = x.to(tl.int64, bitcast=True)
else:
    bits = x.to(tl.int32, bitcast=True)
return bits < 0
"""),
    "maximum_nan": _jit("_maximum_nan(a, b)", "return tl.maximum(a, b, propagate_nan=tl.PropagateNan.ALL)"),
    "minimum_nan": _jit("_minimum_nan(a, b)", "return tl.minimum(a, b, propagate_nan=tl.PropagateNan.ALL)"),
    "add": _jit("_add(a, b)", "return a + b"),
    "multiply": _jit("_multiply(a, b)", "return a * b"),
    # Triton's integer // and % truncate (C semantics); torch floors for floordiv and
    # gives remainder the sign of the divisor. Signed types only: u8 needs no fix-up.
    "floordiv_int": _jit("_floordiv_int(a, b)", """
q = a // b
r = a % b
return tl.where((r != 0) & ((r < 0) != (b < 0)), q - 1, q)
"""),
    "remainder_int": _jit("_remainder_int(a, b)", """
r = a % b
return tl.where((r != 0) & ((r < 0) != (b < 0)), r + b, r)
"""),
    # torch's div_floor_floating, step by step.
    "floordiv_float": _jit("_floordiv_float(a, b)", """
mod = {fmod}(a, b)
if a.dtype == tl.float32:
    div = tl.div_rn(a - mod, b)
else:
    div = (a - mod) / b
div = tl.where((mod != 0) & ((b < 0) != (mod < 0)), div - 1.0, div)
fl = tl.floor(div)
fl = tl.where(div - fl > 0.5, fl + 1.0, fl)
out = tl.where(div != 0, fl, div)
return tl.where(b == 0, a / b, out)
"""),
    "remainder_float": _jit("_remainder_float(a, b)", """
mod = {fmod}(a, b)
return tl.where((mod != 0) & ((b < 0) != (mod < 0)), mod + b, mod)
"""),
    # Signed integers by squaring, BITS steps (enough for any exponent of the type);
    # torch gives 1, ±1 or 0 for negative exponents.
    "ipow": _jit("_ipow(a, b, BITS: tl.constexpr)", """
result = a * 0 + 1
base = a
e = tl.where(b < 0, 0, b)
for _ in range(BITS):
    result = tl.where((e & 1) != 0, result * base, result)
    base = base * base
    e = e >> 1
odd = (b & 1) != 0
negative = tl.where(a == 1, 1, tl.where(a == -1, tl.where(odd, -1, 1), 0))
return tl.where(b < 0, negative.to(a.dtype), result)
"""),
    # torch shifts by a negative amount or by >= BITS give 0 (left) or the sign fill
    # (right); `a` is a signed carrier at least BITS wide whose top bit is the sign.
    "shift_left": _jit("_shift_left(a, b, BITS: tl.constexpr)", """
out = (b < 0) | (b >= BITS)
return tl.where(out, 0, a << tl.where(out, 0, b))
"""),
    "shift_right": _jit("_shift_right(a, b, BITS: tl.constexpr, SIGN: tl.constexpr)", """
out = (b < 0) | (b >= BITS)
return a >> tl.where(out, SIGN, b)
"""),
    "digamma": _f64_unary("digamma", f"""
negative = y < 0.0
z = tl.where(negative, 1.0 - y, y)
acc = tl.full(z.shape, 0.0, tl.float64)
for _ in tl.static_range(10):
    small = z < 10.0
    acc = acc - tl.where(small, 1.0 / z, 0.0)
    z = tl.where(small, z + 1.0, z)
w = 1.0 / (z * z)
r = acc + {{m}}.log(z) - 0.5 / z + w * ({_horner("w", _DIGAMMA_SERIES)})
angle = {PI} * (y - tl.floor(y + 0.5))  # cot has period pi: keep tiny y exact
r = tl.where(negative, r - {PI} * {{m}}.cos(angle) / {{m}}.sin(angle), r)
r = tl.where(y == 0.0, tl.where(_signbit(y), {INF}, -{INF}), r)
r = tl.where(negative & (y == tl.floor(y)), {NAN}, r)
"""),
    # kernel.philox: Triton's own tl.randint4x (philox 4x32-10, dialects/philox.py),
    # written out so that it also runs in the interpreter; WORD picks the i32 word.
    "philox": _jit("_philox(seed, counter, WORD: tl.constexpr)", f"""
seed = seed.to(tl.uint64)
k0 = (seed & 0xFFFFFFFF).to(tl.uint32)
k1 = ((seed >> 32) & 0xFFFFFFFF).to(tl.uint32)
counter = counter.to(tl.int64)
c0 = counter.to(tl.uint32)
c1 = (counter >> 32).to(tl.uint32)
c2 = c0 * 0
c3 = c0 * 0
for _ in tl.static_range({philox.ROUNDS}):
    _c0 = c0
    _c2 = c2
    c0 = tl.umulhi({philox.ROUND_B:#x}, _c2) ^ c1 ^ k0
    c2 = tl.umulhi({philox.ROUND_A:#x}, _c0) ^ c3 ^ k1
    c1 = tl.mul({philox.ROUND_B:#x}, _c2, sanitize_overflow=False)
    c3 = tl.mul({philox.ROUND_A:#x}, _c0, sanitize_overflow=False)
    k0 = tl.add(k0, {philox.KEY_A:#x}, sanitize_overflow=False)
    k1 = tl.add(k1, {philox.KEY_B:#x}, sanitize_overflow=False)
out = c0
if WORD == 1:
    out = c1
if WORD == 2:
    out = c2
if WORD == 3:
    out = c3
return out.to(tl.int32, bitcast=True)
"""),
}

INTERPRETER: dict[str, str] = {
    # The interpreter truncates f32 → bf16 (triton 3.9); round to nearest even as
    # the GPU does, keeping NaNs NaN (a quiet NaN made from the bits: triton 3.6's
    # interpreter cannot make a bf16 constant).
    "to_bf16": _jit("_to_bf16(x)", """
bits = x.to(tl.uint32, bitcast=True)
rounded = bits + 0x7FFF + ((bits >> 16) & 1)
r = (rounded >> 16).to(tl.uint16).to(tl.bfloat16, bitcast=True)
nan = ((bits >> 16) | 0x40).to(tl.uint16).to(tl.bfloat16, bitcast=True)
return tl.where(x != x, nan, r)
"""),
    "fmod": _jit("_fmod(a, b)", "return a % b"),
    "rint": _jit("_rint(x)", """
f = tl.floor(x)
d = x - f
up = (d > 0.5) | ((d == 0.5) & (f % 2.0 != 0.0))
return tl.where(up, f + 1.0, f)
"""),
    "trunc": _jit("_trunc(x)", "return tl.where(x < 0, tl.ceil(x), tl.floor(x))"),
    "copysign": _jit("_copysign(a, b)", "return tl.where(_signbit(b), -tl.abs(a), tl.abs(a))"),
    "tan": _f64_unary("tan", "r = tl.sin(y) / tl.cos(y)"),
    "atan": _f64_unary("atan", f"""
a = tl.abs(y)
big = a > 1.0
t = tl.where(big, 1.0 / a, a)
t = t / (1.0 + tl.sqrt(1.0 + t * t))
t = t / (1.0 + tl.sqrt(1.0 + t * t))
u = t * t
r = 4.0 * t * ({_horner("u", _ATAN_SERIES)})
r = tl.where(big, {HALF_PI} - r, r)
r = tl.where(y < 0.0, -r, r)
"""),
    "atan2": _jit("_atan2(y, x)", f"""
b = y.to(tl.float64)
a = x.to(tl.float64)
ay = tl.abs(b)
ax = tl.abs(a)
base = tl.where(ay <= ax, _atan(ay / ax), {HALF_PI} - _atan(ax / ay))
base = tl.where((ay == 0.0) & (ax == 0.0), 0.0, base)
base = tl.where((ay == {INF}) & (ax == {INF}), {HALF_PI} / 2.0, base)
r = tl.where(_signbit(a), {PI} - base, base)
return tl.where(_signbit(b), -r, r).to(y.dtype)
"""),
    "asin": _f64_unary("asin", "r = _atan2(y, tl.sqrt((1.0 - y) * (1.0 + y)))"),
    "acos": _f64_unary("acos", "r = _atan2(tl.sqrt((1.0 - y) * (1.0 + y)), y)"),
    "expm1": _f64_unary("expm1", f"""
u = tl.exp(y)
r = tl.where(u == 1.0, y, (u - 1.0) * y / tl.log(u))
r = tl.where(u - 1.0 == -1.0, -1.0, r)
r = tl.where(u == {INF}, u, r)
"""),
    "log1p": _f64_unary("log1p", f"""
u = 1.0 + y
r = tl.where(u == 1.0, y, tl.log(u) * y / (u - 1.0))
r = tl.where(u == {INF}, u, r)
"""),
    "log10": _f64_unary("log10", f"r = tl.log(y) * {0.4342944819032518!r}"),
    "sinh": _f64_unary("sinh", "r = (_expm1(y) - _expm1(-y)) * 0.5"),
    "cosh": _f64_unary("cosh", "r = (tl.exp(y) + tl.exp(-y)) * 0.5"),
    "tanh": _f64_unary("tanh", """
a = tl.abs(y)
e = _expm1(2.0 * a)
r = tl.where(a > 22.0, 1.0, e / (e + 2.0))
r = tl.where(y < 0.0, -r, r)
"""),
    "asinh": _f64_unary("asinh", f"""
a = tl.abs(y)
r = tl.where(a > 1e150, tl.log(a) + {LN2}, _log1p(a + a * a / (1.0 + tl.sqrt(1.0 + a * a))))
r = tl.where(y < 0.0, -r, r)
"""),
    "acosh": _f64_unary("acosh", f"""
t = y - 1.0
r = tl.where(y > 1e150, tl.log(y) + {LN2}, _log1p(t + tl.sqrt(2.0 * t + t * t)))
"""),
    "atanh": _f64_unary("atanh", """
a = tl.abs(y)
r = 0.5 * _log1p(2.0 * a / (1.0 - a))
r = tl.where(y < 0.0, -r, r)
"""),
    # 1 - erf is accurate to f64 rounding while erfc > 1e-8; the tail uses NR's fit.
    "erfc": _f64_unary("erfc", f"""
z = tl.abs(y)
t = 1.0 / (1.0 + 0.5 * z)
tail = t * tl.exp(-z * z + ({_horner("t", _ERFC_TAIL)}))
tail = tl.where(y < 0.0, 2.0 - tail, tail)
r = tl.where(z < 4.0, 1.0 - tl.erf(y), tail)
"""),
    # Giles' approximation, then Newton steps on erf(r) = |y|; once |y| >= 0.5 on
    # log(erfc(r)) = log(1 - |y|) instead (1 - |y| is exact there, and the log is
    # nearly quadratic in r), so that the far tail converges with full precision.
    "erfinv": _f64_unary("erfinv", f"""
a = tl.abs(y)
w = -tl.log((1.0 - a) * (1.0 + a))
central = {_horner("(w - 2.5)", _ERFINV_CENTRAL)}
tail = {_horner("(tl.sqrt(w) - 3.0)", _ERFINV_TAIL)}
r = tl.where(w < 5.0, central, tail) * a
for _ in tl.static_range(3):
    c = _erfc(r)
    err = tl.where(a < 0.5, tl.erf(r) - a, (tl.log(1.0 - a) - tl.log(c)) * c)
    r = r - err * {0.8862269254527580!r} * tl.exp(r * r)
r = tl.where(a == 1.0, {INF}, r)
r = tl.where(y < 0.0, -r, r)
"""),
    # Lanczos for y >= 0.5, the reflection formula below; poles at 0, -1, -2, ...
    "lgamma": _f64_unary("lgamma", f"""
reflect = y < 0.5
z = tl.where(reflect, 1.0 - y, y) - 1.0
s = {_LANCZOS[0]!r} {"".join(f" + {c!r} / (z + {i}.0)" for i, c in enumerate(_LANCZOS[1:], 1))}
t = z + 7.5
lg = {0.9189385332046728!r} + (z + 0.5) * tl.log(t) - t + tl.log(s)
sinpi = tl.abs(tl.sin({PI} * (y - 2.0 * tl.floor(y * 0.5 + 0.5))))  # exact for tiny y
r = tl.where(reflect, {1.1447298858494002!r} - tl.log(sinpi) - lg, lg)
pole = (y <= 0.0) & (y == tl.floor(y))
r = tl.where(pole | (tl.abs(y) == {INF}), {INF}, r)
"""),
    "pow": _jit("_pow(x, y)", f"""
a = x.to(tl.float64)
b = y.to(tl.float64)
r = tl.exp2(b * tl.log2(tl.abs(a)))
odd = (b == tl.floor(b)) & (tl.abs(b) % 2.0 == 1.0)
r = tl.where((a < 0.0) & odd, -r, r)
r = tl.where((a < 0.0) & (b != tl.floor(b)), {NAN}, r)
r = tl.where((a == -1.0) & (tl.abs(b) == {INF}), 1.0, r)
r = tl.where((b == 0.0) | (a == 1.0), 1.0, r)
return r.to(x.dtype)
"""),
    "hypot": _jit("_hypot(x, y)", f"""
a = tl.abs(x.to(tl.float64))
b = tl.abs(y.to(tl.float64))
m = tl.where(a > b, a, b)
n = tl.where(a > b, b, a)
q = n / m
r = tl.where(m == 0.0, 0.0, m * tl.sqrt(1.0 + q * q))
r = tl.where((a != a) | (b != b), {NAN}, r)
r = tl.where((a == {INF}) | (b == {INF}), {INF}, r)
return r.to(x.dtype)
"""),
}

# zeta and the orthogonal polynomials (codegen/triton_special_loops.py)
PORTABLE.update(triton_special_loops.PORTABLE)
INTERPRETER.update(triton_special_loops.INTERPRETER)
# igamma and igammac (codegen/triton_igamma.py)
PORTABLE.update(triton_igamma.PORTABLE)
INTERPRETER.update(triton_igamma.INTERPRETER)
# erfcx stands in for libdevice.erfcx (codegen/triton_erfcx.py)
INTERPRETER.update(triton_erfcx.INTERPRETER)

# Helpers only the CUDA generator calls (PTX the interpreter cannot run).
CUDA: dict[str, str] = {
    # A product rounded on its own, never fused into an add (FMA contraction is on in
    # some kernels: triton_launcher), subnormals kept (libdevice.mul_rn flushes f32
    # ones). f64 has no flush to zero: libdevice's __nv_dmul_rn is that product. One
    # return after a static if: Triton 3.6 compiled the f32 statement after an f64
    # early return too, and failed (137 f64 errors in the CUDA OpInfo sweep).
    "mul_rn": _jit("_mul_rn(a, b)", """
if a.dtype == tl.float64:
    r = {m}.mul_rn(a, b)
else:
    r = tl.inline_asm_elementwise("mul.rn.f32 $0, $1, $2;", "=f,f,f", [a, b], dtype=tl.float32, is_pure=True, pack=1)
return r
"""),
    # 1/x correctly rounded, subnormal results kept, as eager's IEEE division gives
    # them (libdevice.rcp_rn flushes those to zero); cheaper than div.rn with a
    # numerator of 1: 80.4 -> 78.7 us on the bf16 chain of tanh, sigmoid and exp
    # (H200), bit for bit eager's sigmoid on 2^25 inputs (docs/performance-history.md).
    "rcp_rn": _jit("_rcp_rn(x)", """
return tl.inline_asm_elementwise("rcp.rn.f32 $0, $1;", "=f,f", [x], dtype=tl.float32, is_pure=True, pack=1)
"""),
}

# helpers a text calls, or passes on (a tl.reduce combine function)
_CALL = re.compile(r"\b_(\w+)\b")


def helper_sources(names: set[str], device: str) -> list[str]:
    """The sources of helpers `names` and of the helpers they call, in name order."""
    namespace = {"m": "libdevice" if device == "cuda" else "tl", "fmod": "libdevice.fmod" if device == "cuda" else "_fmod"}
    library = {**PORTABLE, **CUDA} if device == "cuda" else {**PORTABLE, **INTERPRETER}
    texts: dict[str, str] = {}
    pending = sorted(names)
    while pending:
        name = pending.pop()
        if name in texts:
            continue
        texts[name] = library[name].replace("{m}", namespace["m"]).replace("{fmod}", namespace["fmod"])
        pending += [dep for dep in _CALL.findall(texts[name]) if dep in library and dep not in texts]
    return [texts[n] for n in sorted(texts)]
