"""Transcendental functions on f32 lanes, written out as LLVM IR (no libm call per element).

Each function is defined once per module as an internal, always-inlined function on
`float` or `<lanes x float>`, branch-free (both sides of a range split are computed and
one is selected), so that a kernel's vector loop stays a vector loop. The routines use
fused multiply-adds (the `llvm.fma` intrinsic, one rounding each) and no fast-math
flags: their results do not depend on what LLVM chooses to do.

Accuracy, measured over every binade and at ±0, ±inf, NaN and denormals against
float64 (tests/test_codegen_llvm.py): about 1 ulp for exp, log, erf and tanh, as eager
PyTorch's own vectorized f32 routines (Sleef's u10 family). How each one works:

- exp: n = round(x·log2 e); r = x - n·ln 2 (Cody-Waite, two constants); Cephes's
  polynomial for e^r on [-ln2/2, ln2/2]; e^r · 2^n as two multiplications by powers of
  two (so overflow to inf, denormal results and underflow to 0 round once, correctly).
- log: x = m·2^e with m in [√½, √2) (denormals scaled by 2^23 first), Cephes's
  polynomial for log(1 + f), f = m - 1, and e·ln 2 in two parts.
- tanh: Cephes: x + x³·P(x²) below 0.625, 1 - 2/(e^{2|x|} + 1) above, with x's sign.
- erf: x·(1 + P(x²)) below 0.921875; above, 1 - exp(Q(|x|)) with Q a polynomial for
  log erfc on [0.921875, 4] (erf rounds to 1 beyond). P and Q are our own fits
  (weighted least squares iterated toward minimax, Lawson's method) in float64,
  rounded to f32: 0.94 ulp and 0.93 ulp in an f32 evaluation with fma.
- expm1: x + x²/2 + x³·P(x) below |x| < 0.40625 (P: Taylor to x^8), e^x - 1 above.
- log1p: log(u)·(x/(u - 1)) with u = 1 + x (corrects u's rounding), x where u is 1.
- exp2, log2, log10: through exp and log (one more rounding: ≤ 2 ulp).
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Sequence

from llvmlite import ir

from strata.codegen.llvm_lanes import I32, call_intrinsic, like, mangle

F32 = ir.FloatType()

# Cephes expf / logf / tanhf coefficients (highest degree first).
_EXP_P = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1, 5.0000001201e-1)
_EXP_C1, _EXP_C2 = 0.693359375, -2.12194440e-4
_LN2_F32 = struct.unpack("f", struct.pack("f", math.log(2)))[0]
_LN2_LO = math.log(2) - _LN2_F32
_LOG_P = (
    7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1, 1.4249322787e-1,
    -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1, 3.3333331174e-1,
)
_TANH_P = (-5.70498872745e-3, 2.06390887954e-2, -5.37397155531e-2, 1.33314422036e-1, -3.33332819422e-1)
# erf(x) = x·(1 + P(x²)) for |x| < _ERF_SPLIT; 1 - exp(Q(|x|)) up to 4.
_ERF_SPLIT = 0.921875
_ERF_P = (
    -0.0006013386300764978, 0.004997999407351017, -0.026770230382680893,
    0.11281926929950714, -0.3761250674724579, 0.12837915122509003,
)
_ERF_Q = (
    1.6025674085540231e-06, -4.535616244538687e-05, 0.0005907289450988173, -0.004730347543954849,
    0.02633572928607464, -0.1099255234003067, -0.6319949626922607, -1.130131721496582, 0.0002943282015621662,
)
# expm1(x) = x + x²/2 + x³·P(x) for |x| < _EXPM1_SPLIT.
_EXPM1_SPLIT = 0.40625
_EXPM1_P = tuple(1 / math.factorial(k) for k in range(8, 2, -1))  # Taylor: 1/8!, …, 1/3!


class _Math:
    """Builds math on values of one float type (f32 or <n x f32>); `scalef`: the
    target has AVX-512's vscalefps (x · 2^floor(n) with IEEE overflow and underflow)."""

    def __init__(self, b: ir.IRBuilder, t: ir.Type, scalef: bool = False):
        self.b = b
        self.t = t
        self.it = like(I32, ir.Constant(t, 0.0))
        self.scalef = scalef and isinstance(t, ir.VectorType) and t.count % 16 == 0

    def c(self, value: float) -> ir.Constant:
        return ir.Constant(self.t, value)

    def i(self, value: int) -> ir.Constant:
        return ir.Constant(self.it, value)

    def fma(self, a: ir.Value, x: ir.Value, y: ir.Value) -> ir.Value:
        return call_intrinsic(self.b, "fma", [a, x, y])

    def horner(self, coefficients: Sequence[float], x: ir.Value) -> ir.Value:
        acc: ir.Value = self.c(coefficients[0])
        for k in coefficients[1:]:
            acc = self.fma(acc, x, self.c(k))
        return acc

    def lt(self, x: ir.Value, y: ir.Value) -> ir.Value:
        return self.b.fcmp_ordered("<", x, y)

    def select(self, cond: ir.Value, x: ir.Value, y: ir.Value) -> ir.Value:
        return self.b.select(cond, x, y)

    def isnan(self, x: ir.Value) -> ir.Value:
        return self.b.fcmp_unordered("uno", x, x)

    def bits(self, x: ir.Value) -> ir.Value:
        return self.b.bitcast(x, self.it)

    def from_bits(self, x: ir.Value) -> ir.Value:
        return self.b.bitcast(x, self.t)

    def pow2(self, n: ir.Value) -> ir.Value:
        """2^n for an i32 n in [-126, 127], built in the exponent field."""
        return self.from_bits(self.b.shl(self.b.add(n, self.i(127)), self.i(23)))

    def fabs(self, x: ir.Value) -> ir.Value:
        return call_intrinsic(self.b, "fabs", [x])

    def clamp(self, x: ir.Value, lo: float, hi: float) -> ir.Value:
        """x limited to [lo, hi]; NaN stays NaN (one vminps and one vmaxps on x86)."""
        x = self.select(self.b.fcmp_unordered("<", x, self.c(hi)), x, self.c(hi))
        return self.select(self.b.fcmp_unordered(">", x, self.c(lo)), x, self.c(lo))

    def scale(self, p: ir.Value, n: ir.Value) -> ir.Value:
        """p · 2^n for a whole-valued float n, through vscalefps in 16-lane pieces."""
        b = self.b
        v16 = ir.VectorType(F32, 16)
        fn = b.module.globals.get("llvm.x86.avx512.mask.scalef.ps.512") or ir.Function(
            b.module, ir.FunctionType(v16, [v16, v16, v16, ir.IntType(16), I32]), "llvm.x86.avx512.mask.scalef.ps.512"
        )
        count = self.t.count
        pieces = []
        for k in range(0, count, 16):
            lanes = ir.Constant(ir.VectorType(I32, 16), list(range(k, k + 16)))
            pk = p if count == 16 else b.shuffle_vector(p, p, lanes)
            nk = n if count == 16 else b.shuffle_vector(n, n, lanes)
            pieces.append(b.call(fn, [pk, nk, pk, ir.Constant(ir.IntType(16), -1), ir.Constant(I32, 4)]))
        while len(pieces) > 1:
            pairs = []
            for a, c in zip(pieces[::2], pieces[1::2]):
                width = a.type.count * 2
                pairs.append(b.shuffle_vector(a, c, ir.Constant(ir.VectorType(I32, width), list(range(width)))))
            pieces = pairs
        return pieces[0]


# ---------------------------------------------------------------- the functions
def _exp(m: _Math, x: ir.Value, bounded: bool = False) -> ir.Value:
    """e^x; `bounded`: the caller knows x is a number in [-104, 89] (no clamping)."""
    b = m.b
    if m.scalef:
        # Clamped (NaN passing through) so that x - n·ln2 is finite; vscalefps then
        # rounds overflow, denormals and underflow once, and keeps NaN.
        xc = x if bounded else m.clamp(x, -104.0, 89.0)
        n = call_intrinsic(b, "roundeven", [b.fmul(xc, m.c(1.4426950408889634))])
        r = m.fma(n, m.c(-_EXP_C1), xc)
        r = m.fma(n, m.c(-_EXP_C2), r)
        p = m.fma(m.horner(_EXP_P, r), b.fmul(r, r), r)
        return m.scale(b.fadd(p, m.c(1.0)), n)
    # Clamped so that n stays in [-150, 128]; +-inf and NaN are fixed at the end.
    xc = x
    if not bounded:
        xc = m.select(m.lt(x, m.c(89.0)), x, m.c(89.0))
        xc = m.select(m.lt(m.c(-104.0), xc), xc, m.c(-104.0))
    n = call_intrinsic(b, "roundeven", [b.fmul(xc, m.c(1.4426950408889634))])
    r = m.fma(n, m.c(-_EXP_C1), xc)
    r = m.fma(n, m.c(-_EXP_C2), r)
    p = m.fma(m.horner(_EXP_P, r), b.fmul(r, r), r)
    p = b.fadd(p, m.c(1.0))
    k = b.fptosi(n, m.it)
    half = b.ashr(k, m.i(1))
    result = b.fmul(b.fmul(p, m.pow2(half)), m.pow2(b.sub(k, half)))
    return result if bounded else m.select(m.isnan(x), x, result)


def _log(m: _Math, x: ir.Value) -> ir.Value:
    b = m.b
    tiny = m.lt(x, m.c(1.1754943508222875e-38))
    xs = m.select(tiny, b.fmul(x, m.c(8388608.0)), x)
    bits = m.bits(xs)
    e = b.sub(b.lshr(bits, m.i(23)), b.select(tiny, m.i(126 + 23), m.i(126)))
    f = m.from_bits(b.or_(b.and_(bits, m.i(0x007FFFFF)), m.i(0x3F000000)))  # in [0.5, 1)
    low = m.lt(f, m.c(0.707106781186547524))
    e = b.sub(e, b.zext(low, m.it))
    f = b.fsub(m.select(low, b.fadd(f, f), f), m.c(1.0))
    z = b.fmul(f, f)
    y = b.fmul(b.fmul(m.horner(_LOG_P, f), f), z)
    ef = b.sitofp(e, m.t)
    y = m.fma(ef, m.c(_EXP_C2), y)
    y = m.fma(z, m.c(-0.5), y)
    result = m.fma(ef, m.c(_EXP_C1), b.fadd(f, y))
    # log(+inf) = inf, log(0) = -inf, log(x < 0) = NaN, NaN stays NaN.
    result = m.select(b.fcmp_ordered("==", x, m.c(math.inf)), x, result)
    result = m.select(b.fcmp_ordered("==", x, m.c(0.0)), m.c(-math.inf), result)
    return m.select(b.fcmp_unordered("<", x, m.c(0.0)), m.c(math.nan), result)


def _tanh(m: _Math, x: ir.Value) -> ir.Value:
    b = m.b
    ax = m.fabs(x)
    z = b.fmul(x, x)
    small = call_intrinsic(b, "copysign", [m.fma(b.fmul(x, z), m.horner(_TANH_P, z), x), x])  # keeps -0
    # tanh is 1 in f32 from |x| = 9.01 on; past 44, e^{2|x|} would overflow. A NaN
    # takes the small side.
    e = _exp(m, b.fmul(m.select(m.lt(ax, m.c(44.0)), ax, m.c(44.0)), m.c(2.0)), bounded=True)
    large = b.fsub(m.c(1.0), b.fdiv(m.c(2.0), b.fadd(e, m.c(1.0))))
    large = call_intrinsic(b, "copysign", [large, x])
    return m.select(b.fcmp_ordered(">=", ax, m.c(0.625)), large, small)


def _erf(m: _Math, x: ir.Value) -> ir.Value:
    b = m.b
    ax = m.fabs(x)
    small = m.fma(x, m.horner(_ERF_P, b.fmul(x, x)), x)
    t = m.select(m.lt(ax, m.c(4.0)), ax, m.c(4.0))  # Q(t) lies in [-18, -1.6]
    large = b.fsub(m.c(1.0), _exp(m, m.horner(_ERF_Q, t), bounded=True))
    large = call_intrinsic(b, "copysign", [large, x])
    return m.select(b.fcmp_ordered(">=", ax, m.c(_ERF_SPLIT)), large, small)  # NaN: small, NaN


def _expm1(m: _Math, x: ir.Value) -> ir.Value:
    b = m.b
    ax = m.fabs(x)
    x2 = b.fmul(x, x)
    small = m.fma(b.fmul(x2, x), m.horner(_EXPM1_P, x), m.fma(x2, m.c(0.5), x))
    small = call_intrinsic(b, "copysign", [small, x])  # keeps -0
    large = b.fsub(_exp(m, x), m.c(1.0))
    return m.select(m.lt(ax, m.c(_EXPM1_SPLIT)), small, large)


def _log1p(m: _Math, x: ir.Value) -> ir.Value:
    b = m.b
    u = b.fadd(x, m.c(1.0))
    d = b.fsub(u, m.c(1.0))
    corrected = b.fmul(_log(m, u), b.fdiv(x, d))
    # u == 1: log1p(x) = x; u == inf: inf (the quotient would be NaN).
    result = m.select(b.fcmp_ordered("==", u, m.c(1.0)), x, corrected)
    return m.select(b.fcmp_ordered("==", u, m.c(math.inf)), u, result)


def _exp2(m: _Math, x: ir.Value) -> ir.Value:
    # 2^x = e^(x·ln2), x·ln2 carried as hi + lo: e^hi·(1 + lo).
    b = m.b
    hi = b.fmul(x, m.c(_LN2_F32))
    lo = m.fma(x, m.c(_LN2_F32), b.fneg(hi))
    lo = m.fma(x, m.c(_LN2_LO), lo)
    lo = m.select(m.lt(m.fabs(x), m.c(math.inf)), lo, m.c(0.0))
    e = _exp(m, hi)
    return m.select(m.lt(e, m.c(math.inf)), m.fma(e, lo, e), e)


def _log2(m: _Math, x: ir.Value) -> ir.Value:
    return m.b.fmul(_log(m, x), m.c(1.4426950408889634))


def _log10(m: _Math, x: ir.Value) -> ir.Value:
    return m.b.fmul(_log(m, x), m.c(0.4342944819032518))


def _sigmoid(m: _Math, x: ir.Value) -> ir.Value:
    # As ATen computes it: 1 / (1 + e^-x).
    b = m.b
    return b.fdiv(m.c(1.0), b.fadd(m.c(1.0), _exp(m, b.fneg(x))))


FUNCTIONS: dict[str, Callable[[_Math, ir.Value], ir.Value]] = {
    "exp": _exp,
    "log": _log,
    "tanh": _tanh,
    "erf": _erf,
    "expm1": _expm1,
    "log1p": _log1p,
    "exp2": _exp2,
    "log2": _log2,
    "log10": _log10,
    "sigmoid": _sigmoid,
}


def has_vector_math(name: str, t: ir.Type) -> bool:
    """Whether `name` on values of type t (f32 or a vector of f32) is computed here."""
    element = t.element if isinstance(t, ir.VectorType) else t
    return name in FUNCTIONS and isinstance(element, ir.FloatType)


def call_vector_math(b: ir.IRBuilder, name: str, x: ir.Value) -> ir.Value:
    """strata's `name` on x, through the module's internal function for x's type.
    AVX-512 instructions are used where the module is marked for them
    (`module.strata_avx512 = True`, codegen/llvm_kernel.py)."""
    symbol = f"strata.math.{name}.{mangle(x.type)}"
    fn = b.module.globals.get(symbol)
    if fn is None:
        fn = ir.Function(b.module, ir.FunctionType(x.type, [x.type]), symbol)
        fn.linkage = "internal"
        fn.attributes.add("alwaysinline")
        fn.attributes.add("nounwind")
        inner = ir.IRBuilder(fn.append_basic_block("entry"))
        scalef = getattr(b.module, "strata_avx512", False)
        inner.ret(FUNCTIONS[name](_Math(inner, x.type, scalef), fn.args[0]))
    return b.call(fn, [x])

