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
  rounded to f32: 1.2 ulp at most (near the split), checked on every f32 below 4.5.
  With AVX-512, one polynomial per lane instead of both sides: |x| (clamped to 3.99)
  picks one of 16 intervals, erf(x) = x·(R0 + D(t)) with t the distance to the
  interval's centre, R0 and the degree-5 D's coefficients read from 16-entry tables by
  vpermps (fitted the same way to erf(x)/x, relative error, each coefficient rounded to
  f32 in turn with the others refitted): 0.75 ulp at most on every f32 below 4.5 whose
  result is normal (1.0 ulp near 1.2e-38, where x·D underflows). Eager's torch.erf
  (torch 2.13 CPU, not ATen's Vectorized erf) stays within 0.74 ulp, so this bar is
  kept; eager's GELU uses ATen's Vectorized f32 erf (Abramowitz–Stegun 7.1.26, an
  absolute error of ~1e-7), and strata's GELU is at least as accurate as eager's.
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
# erf with AVX-512: erf(x) = x·(R0[k] + D[k](t)) on 16 intervals centred on c = k·_ERF_STEP,
# t = |x| - c, R0 = erf(c)/c in f32 (at k = 0: 2/√π rounded down, so that D(0) > 0 and
# erf(-0) = -0), D a degree-5 polynomial for erf(x)/x - R0, highest degree last. The
# step makes 15.5 steps reach 3.99, where erf rounds to 1.
_ERF_STEP = 0.2578125
_ERF_CLAMP = 3.99
_ERF_TABLES = (
    (  # R0
        1.1283791065216064, 1.1038697957992554, 1.0358749628067017, 0.9386147260665894,
        0.829354465007782, 0.7227718234062195, 0.6279124617576599, 0.5481812953948975,
        0.4831339418888092, 0.4305312931537628, 0.3877754807472229, 0.352595716714859,
        0.3232283890247345, 0.2983676493167877, 0.27705618739128113, 0.2585858404636383,
    ),
    (  # D: t^0
        6.063347512963446e-08, -1.2892507506023776e-08, 1.3425999867422433e-08, 2.023608480783423e-08,
        2.0240332077037237e-08, 1.685897821346316e-08, 3.1791420607163445e-09, -1.2043173569509236e-08,
        -2.642634333582805e-09, -4.151933907792227e-09, 1.7112774530758657e-09, 8.94869778278462e-09,
        1.3146607358294204e-08, 1.0853755227913098e-08, -2.2459469839475332e-09, 6.431779997484455e-09,
    ),
    (  # D: t^1
        -3.3253147790901494e-08, -0.18638624250888824, -0.3314964473247528, -0.4114552140235901,
        -0.4264511168003082, -0.3945375680923462, -0.3392716646194458, -0.27967724204063416,
        -0.22647331655025482, -0.1833166480064392, -0.14984166622161865, -0.12420336157083511,
        -0.10445244610309601, -0.08901899307966232, -0.0767594650387764, -0.06686654686927795,
    ),
    (  # D: t^2
        -0.3761233687400818, -0.3328615725040436, -0.22204509377479553, -0.088399738073349,
        0.023948989808559418, 0.09187587350606918, 0.11622545123100281, 0.11152198165655136,
        0.09377314895391464, 0.0738261342048645, 0.05665561929345131, 0.04343348741531372,
        0.033683739602565765, 0.02654549479484558, 0.021264193579554558, 0.017290372401475906,
    ),
    (  # D: t^3
        -9.998192399507388e-05, 0.10748040676116943, 0.16879971325397491, 0.16680410504341125,
        0.1186855137348175, 0.057410210371017456, 0.008974502794444561, -0.01754038967192173,
        -0.026012634858489037, -0.02454855665564537, -0.019647439941763878, -0.014671629294753075,
        -0.010733782313764095, -0.007889149710536003, -0.005886165425181389, -0.004470725078135729,
    ),
    (  # D: t^4
        0.11433346569538116, 0.08716841042041779, 0.0284768957644701, -0.028799889609217644,
        -0.057987406849861145, -0.05586053803563118, -0.03647714480757713, -0.015823032706975937,
        -0.0022046328522264957, 0.003815578995272517, 0.00508415000513196, 0.0043784924782812595,
        0.0032606199383735657, 0.0023087712470442057, 0.0016238928074017167, 0.0011560990242287517,
    ),
    (  # D: t^5
        -0.01032685674726963, -0.03654174134135246, -0.04977577552199364, -0.03555415943264961,
        -0.00941222719848156, 0.010638803243637085, 0.017108585685491562, 0.013645630329847336,
        0.007380574010312557, 0.002355949953198433, -5.7964076404459774e-05, -0.0008591052028350532,
        -0.0008428270230069757, -0.0006033845129422843, -0.00041507885907776654, -0.0002718874020501971,
    ),
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
        return self._by_16_lanes(lambda pk, nk: b.call(fn, [pk, nk, pk, ir.Constant(ir.IntType(16), -1), ir.Constant(I32, 4)]), p, n)

    def lookup(self, table: Sequence[float], index: ir.Value) -> ir.Value:
        """table[index & 15] in each lane (16 f32 entries), through vpermps; `index` is
        an integer vector of this type's lane count."""
        b = self.b
        v16 = ir.VectorType(F32, 16)
        fn = b.module.globals.get("llvm.x86.avx512.permvar.sf.512") or ir.Function(
            b.module, ir.FunctionType(v16, [v16, ir.VectorType(I32, 16)]), "llvm.x86.avx512.permvar.sf.512"
        )
        entries = ir.Constant(v16, list(table))
        return self._by_16_lanes(lambda ik: b.call(fn, [entries, ik]), index)

    def _by_16_lanes(self, op: Callable[..., ir.Value], *operands: ir.Value) -> ir.Value:
        """op on 16-lane pieces of the operands (AVX-512 intrinsics), joined again."""
        b = self.b
        count = self.t.count
        pieces = []
        for k in range(0, count, 16):
            lanes = ir.Constant(ir.VectorType(I32, 16), list(range(k, k + 16)))
            pieces.append(op(*[v if count == 16 else b.shuffle_vector(v, v, lanes) for v in operands]))
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
    if m.scalef:
        return _erf_by_table(m, x)
    ax = m.fabs(x)
    small = m.fma(x, m.horner(_ERF_P, b.fmul(x, x)), x)
    t = m.select(m.lt(ax, m.c(4.0)), ax, m.c(4.0))  # Q(t) lies in [-18, -1.6]
    large = b.fsub(m.c(1.0), _exp(m, m.horner(_ERF_Q, t), bounded=True))
    large = call_intrinsic(b, "copysign", [large, x])
    return m.select(b.fcmp_ordered(">=", ax, m.c(_ERF_SPLIT)), large, small)  # NaN: small, NaN


def _erf_by_table(m: _Math, x: ir.Value) -> ir.Value:
    """erf on AVX-512: one polynomial per lane, its coefficients picked by vpermps, instead
    of both sides of a range split (about 20 vector instructions instead of 34)."""
    b = m.b
    xc = m.clamp(x, -_ERF_CLAMP, _ERF_CLAMP)  # NaN stays NaN; ±inf become ±3.99, erf 1
    ax = m.fabs(xc)
    # k = round(|x| / step) in the low bits of y; c = k·step and t = |x| - c are exact.
    y = m.fma(ax, m.c(1.0 / _ERF_STEP), m.c(12582912.0))  # 1.5·2^23: y's ulp is 1
    k = m.bits(y)
    t = m.fma(b.fsub(y, m.c(12582912.0)), m.c(-_ERF_STEP), ax)
    d = m.lookup(_ERF_TABLES[-1], k)
    for table in reversed(_ERF_TABLES[1:-1]):
        d = m.fma(d, t, m.lookup(table, k))
    # x·R0 + x·D rounds once: D is small beside R0, so its rounding errors hardly count.
    return m.fma(xc, m.lookup(_ERF_TABLES[0], k), b.fmul(xc, d))


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

