"""LLVM IR for the prim ops of dialects/prim_bits.py: gcd (a loop in an internal
function, lane by lane), nextafter and frexp (integer operations on the bit pattern,
on whole vectors of lanes).

Sources: gcd is ATen's calc_gcd (aten/src/ATen/native/Math.h): Euclid's algorithm on
the absolute values, which wrap at the type's minimum as C's abs does. nextafter is
musl's, which c10's nextafter for Half and BFloat16 (c10/util/BFloat16-math.h) and
glibc's for float and double agree with. frexp is glibc's: zero, infinities and NaN
are returned with exponent 0; a subnormal is scaled into the normal range first.
"""

from __future__ import annotations

from llvmlite import ir

from strata.codegen.llvm_dtypes import I16, I32, I64, from_f32, is_signed, to_f32
from strata.codegen.llvm_lanes import call_intrinsic, const_like, element_type, lane_by_lane, like
from strata.codegen.llvm_math import F64

# float type → (integer type of its bits, mantissa bits, exponent bias)
_LAYOUT = {"f32": (I32, 23, 127), "f64": (I64, 52, 1023)}


# ---------------------------------------------------------------- gcd
def _define_gcd(fn: ir.Function, signed: bool) -> None:
    a0, b0 = fn.args
    t = a0.type
    entry, loop, step, done = (fn.append_basic_block(n) for n in ("entry", "loop", "step", "done"))
    zero, minus_one, one = ir.Constant(t, 0), ir.Constant(t, -1), ir.Constant(t, 1)
    b = ir.IRBuilder(entry)
    if signed:
        a0 = call_intrinsic(b, "abs", [a0], ir.Constant(ir.IntType(1), 0))
        b0 = call_intrinsic(b, "abs", [b0], ir.Constant(ir.IntType(1), 0))
    b.branch(loop)

    # while (a != 0) { c = a; a = b % a; b = c; } return b;
    b.position_at_end(loop)
    a = b.phi(t, "a")
    a.add_incoming(a0, entry)
    r = b.phi(t, "b")
    r.add_incoming(b0, entry)
    b.cbranch(b.icmp_unsigned("!=", a, zero), step, done)

    b.position_at_end(step)
    if signed:
        # b % -1 is 0; srem would trap on MIN % -1.
        by_minus_one = b.icmp_signed("==", a, minus_one)
        rem = b.select(by_minus_one, zero, b.srem(r, b.select(by_minus_one, one, a)))
    else:
        rem = b.urem(r, a)
    a.add_incoming(rem, step)
    r.add_incoming(a, step)
    b.branch(loop)

    b.position_at_end(done)
    b.ret(r)


def _gcd(b: ir.IRBuilder, dtype: str, x: ir.Value, y: ir.Value) -> ir.Value:
    t = element_type(x.type)
    name = f"strata.gcd.{dtype}"
    fn = b.module.globals.get(name)
    if fn is None:
        fn = ir.Function(b.module, ir.FunctionType(t, [t, t]), name)
        fn.linkage = "internal"
        _define_gcd(fn, is_signed(dtype))
    return lane_by_lane(b, lambda u, v: b.call(fn, [u, v]), [x, y])


# ---------------------------------------------------------------- nextafter
def _step(b: ir.IRBuilder, ix: ir.Value, iy: ir.Value) -> ir.Value:
    """musl's step of the bit pattern ix toward iy (integers of the float's width):
    down where |x| > |y| or the signs differ, else up; from ±0 the smallest
    subnormal with y's sign."""
    width = element_type(ix.type).width
    sign = const_like(ix, 1 << (width - 1))
    magnitude = const_like(ix, (1 << (width - 1)) - 1)
    ax, ay = b.and_(ix, magnitude), b.and_(iy, magnitude)
    down = b.or_(b.icmp_unsigned(">", ax, ay), b.icmp_signed("<", b.xor(ix, iy), const_like(ix, 0)))
    stepped = b.select(down, b.sub(ix, const_like(ix, 1)), b.add(ix, const_like(ix, 1)))
    smallest = b.or_(b.and_(iy, sign), const_like(ix, 1))
    return b.select(b.icmp_unsigned("==", ax, const_like(ax, 0)), smallest, stepped)


def _nextafter(narrow: str | None):
    """nextafter of f32/f64 lanes, or (narrow: "f16", "bf16") of f32 lanes holding
    values of the narrow type, stepped in its 16-bit pattern and widened back."""

    def emit(b: ir.IRBuilder, dtype: str, x: ir.Value, y: ir.Value) -> ir.Value:
        if narrow:  # compare and step the narrow values (an f32 operand is rounded first)
            x, y = (_narrowed(b, v, narrow) for v in (x, y))
        if narrow == "f16":
            half = like(ir.HalfType(), x)
            bits = [b.bitcast(b.fptrunc(v, half), like(I16, x)) for v in (x, y)]
            out = b.fpext(b.bitcast(_step(b, *bits), half), x.type)
        elif narrow == "bf16":
            out = to_f32(b, _step(b, from_f32(b, x, narrow), from_f32(b, y, narrow)), narrow)
        else:
            t = like(_LAYOUT[dtype][0], x)
            out = b.bitcast(_step(b, b.bitcast(x, t), b.bitcast(y, t)), x.type)
        out = b.select(b.fcmp_ordered("==", x, y), y, out)  # x == y (0 and -0 too): y
        return b.select(b.fcmp_unordered("uno", x, y), b.fadd(x, y), out)

    return emit


def _narrowed(b: ir.IRBuilder, v: ir.Value, narrow: str) -> ir.Value:
    """f32 lanes rounded to f16 or bf16 and widened back."""
    if narrow == "f16":
        return b.fpext(b.fptrunc(v, like(ir.HalfType(), v)), v.type)
    return to_f32(b, from_f32(b, v, narrow), narrow)


# ---------------------------------------------------------------- frexp
def _frexp(b: ir.IRBuilder, x: ir.Value) -> tuple[ir.Value, ir.Value]:
    """(mantissa, exponent as a float of x's type) of f32 or f64 lanes."""
    dtype = "f64" if element_type(x.type) == F64 else "f32"
    bits_type, mantissa_bits, bias = _LAYOUT[dtype]
    t = like(bits_type, x)
    scale_bits = mantissa_bits + 2  # a subnormal times 2^scale_bits is normal
    ax = call_intrinsic(b, "fabs", [x])
    min_normal = const_like(x, 2.0 ** (1 - bias))
    subnormal = b.and_(b.fcmp_ordered("<", ax, min_normal), b.fcmp_ordered("!=", ax, const_like(x, 0.0)))
    scaled = b.select(subnormal, b.fmul(ax, const_like(x, 2.0**scale_bits)), ax)
    bits = b.bitcast(scaled, t)
    field = b.lshr(bits, const_like(bits, mantissa_bits))
    exponent = b.sub(field, b.select(subnormal, const_like(bits, bias - 1 + scale_bits), const_like(bits, bias - 1)))
    fraction = b.and_(bits, const_like(bits, (1 << mantissa_bits) - 1))
    mantissa = b.bitcast(b.or_(fraction, const_like(bits, (bias - 1) << mantissa_bits)), x.type)
    mantissa = call_intrinsic(b, "copysign", [mantissa, x])
    # Zero, infinities and NaN: x itself, exponent 0.
    special = b.or_(b.fcmp_unordered("==", ax, const_like(x, 0.0)), b.fcmp_unordered("==", ax, const_like(x, float("inf"))))
    exponent = b.sitofp(exponent, x.type)
    return b.select(special, x, mantissa), b.select(special, const_like(x, 0.0), exponent)


# prim op name → emitter (b, dtype, *operands), for llvm_scalar_ops
BIT_INT_EMITTERS = {"gcd": _gcd}
BIT_FLOAT_EMITTERS = {
    "nextafter": _nextafter(None),
    "nextafter_f16": _nextafter("f16"),
    "nextafter_bf16": _nextafter("bf16"),
    "frexp_mantissa": lambda b, dtype, x: _frexp(b, x)[0],
    "frexp_exponent": lambda b, dtype, x: _frexp(b, x)[1],
}
