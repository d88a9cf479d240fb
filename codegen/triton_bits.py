"""Triton for the prim ops of dialects/prim_bits.py: gcd, nextafter and frexp, as
@triton.jit helpers (source text, for triton_math's library) and the rules that call
them (for triton_scalar_ops). All run alike on CUDA and in Triton's interpreter.

Sources, as in codegen/llvm_bits.py: gcd is ATen's calc_gcd (Math.h), Euclid's
algorithm, in the operands' own width, here run for a fixed number of steps (at least
as many as any operands of the type need: consecutive Fibonacci numbers are the worst
case, 45 steps below 2^31, 91 below 2^63); nextafter is musl's, as c10's for Half and BFloat16 and glibc's for
float and double; frexp is glibc's.
"""

from __future__ import annotations


def _jit(signature: str, body: str) -> str:
    lines = "\n".join(f"    {line}" for line in body.strip().splitlines())
    return f"@triton.jit\ndef {signature}:\n{lines}\n"


HELPERS: dict[str, str] = {
    "gcd": _jit("_gcd(a, b, STEPS: tl.constexpr, SIGNED: tl.constexpr)", """
if SIGNED:
    a = tl.abs(a)
    b = tl.abs(b)
for _ in range(STEPS):
    live = a != 0
    if SIGNED:
        # b % -1 is 0 (the remainder instruction may trap on MIN % -1)
        safe = tl.where(live & (a != -1), a, 1).to(a.dtype)
        rem = tl.where(a == -1, 0, b % safe).to(a.dtype)
    else:
        safe = tl.where(live, a, 1).to(a.dtype)
        rem = b % safe
    b = tl.where(live, a, b)
    a = tl.where(live, rem, a)
return b
"""),
    # Operands of one float type: f32, f64, or f16 (for prim.nextafter_f16).
    "nextafter": _jit("_nextafter(a, b)", """
if a.dtype == tl.float64:
    ia = a.to(tl.int64, bitcast=True)
    ib = b.to(tl.int64, bitcast=True)
    MAG: tl.constexpr = 0x7FFFFFFFFFFFFFFF
elif a.dtype == tl.float16:
    ia = a.to(tl.int16, bitcast=True).to(tl.int32)
    ib = b.to(tl.int16, bitcast=True).to(tl.int32)
    MAG: tl.constexpr = 0x7FFF
else:
    ia = a.to(tl.int32, bitcast=True)
    ib = b.to(tl.int32, bitcast=True)
    MAG: tl.constexpr = 0x7FFFFFFF
ax = ia & MAG
down = (ax > (ib & MAG)) | ((ia < 0) != (ib < 0))
r = tl.where(down, ia - 1, ia + 1)
r = tl.where(ax == 0, tl.where(ib < 0, -MAG, 1), r)
if a.dtype == tl.float16:
    out = r.to(tl.int16).to(tl.float16, bitcast=True)
else:
    out = r.to(a.dtype, bitcast=True)
out = tl.where(a == b, b, out)
return tl.where((a != a) | (b != b), a + b, out)
"""),
    # prim.nextafter_bf16, on bf16 values held in f32: one bf16 step is 2^16 in the f32
    # pattern (bf16 is f32's upper half).
    "nextafter_bf16": _jit("_nextafter_bf16(a, b)", """
ia = a.to(tl.int32, bitcast=True)
ib = b.to(tl.int32, bitcast=True)
ax = ia & 0x7FFFFFFF
down = (ax > (ib & 0x7FFFFFFF)) | ((ia < 0) != (ib < 0))
r = tl.where(down, ia - 65536, ia + 65536)
r = tl.where(ax == 0, tl.where(ib < 0, -2147418112, 65536), r)
out = r.to(tl.float32, bitcast=True)
out = tl.where(a == b, b, out)
return tl.where((a != a) | (b != b), a + b, out)
"""),
    # (mantissa, exponent as x's type) of f32 or f64; a subnormal is scaled first.
    "frexp_parts": _jit("_frexp_parts(x)", """
ax = tl.abs(x)
if x.dtype == tl.float64:
    sub = (ax < 2.2250738585072014e-308) & (ax != 0.0)
    s = tl.where(sub, ax * 18014398509481984.0, ax)
    bits = s.to(tl.int64, bitcast=True)
    e = (bits >> 52) - tl.where(sub, 1076, 1022)
    m = ((bits & 0xFFFFFFFFFFFFF) | 0x3FE0000000000000).to(tl.float64, bitcast=True)
else:
    sub = (ax < 1.1754943508222875e-38) & (ax != 0.0)
    s = tl.where(sub, ax * 33554432.0, ax)
    bits = s.to(tl.int32, bitcast=True)
    e = (bits >> 23) - tl.where(sub, 151, 126)
    m = ((bits & 0x7FFFFF) | 0x3F000000).to(tl.float32, bitcast=True)
special = (ax == 0.0) | (ax != ax) | (ax == float("inf"))
m = tl.where(x < 0, -m, m)
return tl.where(special, x, m), tl.where(special, 0, e).to(x.dtype)
"""),
    "frexp_mantissa": _jit("_frexp_mantissa(x)", """
m, e = _frexp_parts(x)
return m
"""),
    "frexp_exponent": _jit("_frexp_exponent(x)", """
m, e = _frexp_parts(x)
return e
"""),
}


# Euclid's steps for operands below 2^(bits - 1) at most, and a few for the detour
# that C's remainder takes through the negative numbers from MIN.
_GCD_STEPS = {"i8": 16, "u8": 16, "i16": 28, "i32": 50, "i64": 96}


def _gcd(o, t: str, a: str, b: str) -> str:
    return o.helper("gcd", a, b, str(_GCD_STEPS[t]), str(t != "u8"))


# prim op name → rule (ScalarOps, dtype, *operand expressions), for triton_scalar_ops
RULES = {
    "gcd": _gcd,
    "nextafter": lambda o, t, a, b: o.helper("nextafter", a, b),
    "nextafter_f16": lambda o, t, a, b: f"{o.helper('nextafter', f'{a}.to(tl.float16)', f'{b}.to(tl.float16)')}.to(tl.float32)",
    "nextafter_bf16": lambda o, t, a, b: o.helper("nextafter_bf16", a, b),
    "frexp_mantissa": lambda o, t, a: o.helper("frexp_mantissa", a),
    "frexp_exponent": lambda o, t, a: o.helper("frexp_exponent", a),
}
