"""LLVM IR for the prim elementwise ops, with eager PyTorch's semantics.

Each emitter takes the IR builder, the operands' dtype and the operands (register
values, see codegen/llvm_dtypes.py: scalars, or vectors of lanes, codegen/llvm_lanes.py)
and returns the result. Floats are computed without fast-math flags. exp, log, tanh,
erf, sigmoid and their kin on f32 are strata's own vector routines
(codegen/llvm_vmath.py); other libm functions run lane by lane. Operands of 16-bit floats are widened to f32 (the emitter still gets
their dtype) and the result is rounded once, as ATen's CPU kernels do. Integer
division never traps: a zero divisor gives an unspecified value where eager PyTorch
raises.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from llvmlite import ir

from strata.codegen.errors import CodegenError
from strata.codegen.llvm_dtypes import F32, HALF_FLOATS, I1, I64, from_f32, is_signed, to_f32
from strata.codegen.llvm_lanes import call_intrinsic, element_type, lane_by_lane, like, unify
from strata.codegen.llvm_math import F64, call_libm, digamma, erfinv, int_pow
from strata.codegen.llvm_erfcx import emit_erfcx
from strata.codegen.llvm_bits import BIT_FLOAT_EMITTERS, BIT_INT_EMITTERS
from strata.codegen.llvm_special_loops import SPECIAL_LOOP_EMITTERS
from strata.codegen.llvm_igamma import IGAMMA_EMITTERS
from strata.codegen.llvm_vmath import call_vector_math, has_vector_math
from strata.dialects.prim import ELEMENTWISE
from strata.dialects.types import is_float

Emitter = Callable[..., ir.Value]
COMPARISONS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def emit_elementwise(b: ir.IRBuilder, name: str, dtype: str, args: list[ir.Value]) -> ir.Value:
    """The prim elementwise op `name` (without the `prim.` prefix) on `args` of `dtype`."""
    table = FLOAT_OPS if is_float(dtype) else BOOL_OPS if dtype == "i1" else INT_OPS
    emit = table.get(name)
    if emit is None:
        raise CodegenError(f"prim.{name} on {dtype} is not supported by the LLVM CPU code generator")
    args = unify(b, args)
    if dtype in HALF_FLOATS:
        wide = emit(b, dtype, *[to_f32(b, a, dtype) for a in args])
        bool_result = ELEMENTWISE[name][2]
        return wide if bool_result else from_f32(b, wide, dtype)
    return emit(b, dtype, *args)


CONTRACT = ("contract",)


def emit_contractible(b: ir.IRBuilder, name: str, args: list[ir.Value]) -> ir.Value:
    """A float add, sub or mul that LLVM may fuse with a product or sum that also carries
    `contract` (vectors of floats and scalars alike)."""
    x, y = unify(b, args)
    return {"add": b.fadd, "sub": b.fsub, "mul": b.fmul}[name](x, y, flags=CONTRACT)


def _const(like: ir.Value, value: float | int) -> ir.Constant:
    return ir.Constant(like.type, value)


def _false(b, dtype, x):
    return ir.Constant(like(I1, x), 0)


def _intrinsic(name: str) -> Emitter:
    return lambda b, dtype, *args: call_intrinsic(b, name, args)


def _libm(name: str) -> Emitter:
    """The C library's `name` (lane by lane), or strata's vector routine on f32."""

    def emit(b: ir.IRBuilder, dtype: str, *args: ir.Value) -> ir.Value:
        if has_vector_math(name, args[0].type):
            return call_vector_math(b, name, args[0])
        return lane_by_lane(b, lambda *xs: call_libm(b, name, xs), args)

    return emit


def _math(name: str) -> Emitter:
    """An LLVM intrinsic (which LLVM expands lane by lane), or strata's routine on f32."""

    def emit(b: ir.IRBuilder, dtype: str, *args: ir.Value) -> ir.Value:
        if has_vector_math(name, args[0].type):
            return call_vector_math(b, name, args[0])
        return call_intrinsic(b, name, args)

    return emit


def _in_f64(fn: Callable[[ir.IRBuilder, ir.Value], ir.Value]) -> Emitter:
    """A double-precision helper applied (lane by lane) to a float of either width."""

    def scalar(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
        if x.type == F64:
            return fn(b, x)
        return b.fptrunc(fn(b, b.fpext(x, F64)), x.type)

    return lambda b, dtype, x: lane_by_lane(b, lambda v: scalar(b, v), [x])


# ---------------------------------------------------------------- floats
def _fcmp(op: str) -> Emitter:
    # C++ comparisons: `!=` is true on NaN operands, the others are false.
    if op == "!=":
        return lambda b, dtype, x, y: b.fcmp_unordered("!=", x, y)
    return lambda b, dtype, x, y: b.fcmp_ordered(op, x, y)


def _fsign(b, dtype, x):
    # (0 < x) - (x < 0): NaN gives 0, as ATen's sign does.
    zero = _const(x, 0.0)
    positive = b.uitofp(b.fcmp_ordered(">", x, zero), x.type)
    negative = b.uitofp(b.fcmp_ordered("<", x, zero), x.type)
    return b.fsub(positive, negative)


def _fsignbit(b, dtype, x):
    bits = b.bitcast(x, like(ir.IntType(32 if element_type(x.type) == F32 else 64), x))
    return b.icmp_signed("<", bits, _const(bits, 0))


def _fisinf(b, dtype, x):
    return b.fcmp_ordered("==", call_intrinsic(b, "fabs", [x]), _const(x, math.inf))


def _sign_differs(b, x, y):
    """(x < 0) != (y < 0) for floats, as ATen spells it."""
    zero = _const(x, 0.0)
    return b.xor(b.fcmp_ordered("<", x, zero), b.fcmp_ordered("<", y, zero))


def _fremainder(b, dtype, x, y):
    # Python's remainder: fmod, moved by y when it has the other sign.
    mod = b.frem(x, y)
    fix = b.and_(b.fcmp_unordered("!=", mod, _const(x, 0.0)), _sign_differs(b, y, mod))
    return b.select(fix, b.fadd(mod, y), mod)


def _ffloordiv(b, dtype, x, y):
    # c10's div_floor_floating: floor((x - fmod(x, y)) / y), made exact near integers.
    # ATen runs it on 16-bit floats one rounded op at a time, so rounding follows suit.
    def rounded(v):
        return to_f32(b, from_f32(b, v, dtype), dtype) if dtype in HALF_FLOATS else v

    zero, one = _const(x, 0.0), _const(x, 1.0)
    quotient = rounded(b.fdiv(x, y))
    mod = rounded(b.frem(x, y))
    div = rounded(b.fdiv(rounded(b.fsub(x, mod)), y))
    fix = b.and_(b.fcmp_unordered("!=", mod, zero), _sign_differs(b, y, mod))
    div = b.select(fix, rounded(b.fsub(div, one)), div)
    floor = call_intrinsic(b, "floor", [div])
    above_half = b.fcmp_ordered(">", rounded(b.fsub(div, floor)), _const(x, 0.5))
    floor = b.select(above_half, rounded(b.fadd(floor, one)), floor)
    result = b.select(b.fcmp_unordered("!=", div, zero), floor, call_intrinsic(b, "copysign", [zero, quotient]))
    return b.select(b.fcmp_ordered("==", y, zero), quotient, result)


def _fsigmoid(b, dtype, x):
    if has_vector_math("sigmoid", x.type):
        return call_vector_math(b, "sigmoid", x)
    one = _const(x, 1.0)
    return b.fdiv(one, b.fadd(one, call_intrinsic(b, "exp", [b.fneg(x)])))


FLOAT_OPS: dict[str, Emitter] = {
    "add": lambda b, dtype, x, y: b.fadd(x, y),
    "sub": lambda b, dtype, x, y: b.fsub(x, y),
    "mul": lambda b, dtype, x, y: b.fmul(x, y),
    "div": lambda b, dtype, x, y: b.fdiv(x, y),
    "neg": lambda b, dtype, x: b.fneg(x),
    "reciprocal": lambda b, dtype, x: b.fdiv(_const(x, 1.0), x),
    "rsqrt": lambda b, dtype, x: b.fdiv(_const(x, 1.0), call_intrinsic(b, "sqrt", [x])),
    "sigmoid": _fsigmoid,
    "sign": _fsign,
    "signbit": _fsignbit,
    "isnan": lambda b, dtype, x: b.fcmp_unordered("uno", x, x),
    "isinf": _fisinf,
    "fmod": lambda b, dtype, x, y: b.frem(x, y),
    "remainder": _fremainder,
    "floordiv": _ffloordiv,
    "round": _intrinsic("roundeven"),
    "maximum": _intrinsic("maximum"),
    "minimum": _intrinsic("minimum"),
    "abs": _intrinsic("fabs"),
    **{n: _math(n) for n in ("exp", "exp2", "log", "log2", "log10")},
    **{n: _intrinsic(n) for n in ("sqrt", "sin", "cos", "pow")},
    **{n: _intrinsic(n) for n in ("floor", "ceil", "trunc", "copysign")},
    **{
        n: _libm(n)
        for n in (
            "expm1 log1p tan asin acos atan sinh cosh tanh asinh acosh atanh erf erfc lgamma atan2 hypot"
        ).split()
    },
    "erfinv": _in_f64(erfinv),
    "digamma": _in_f64(digamma),
    "erfcx": emit_erfcx,
    **SPECIAL_LOOP_EMITTERS,
    **IGAMMA_EMITTERS,
    **BIT_FLOAT_EMITTERS,
    **{name: _fcmp(op) for name, op in COMPARISONS.items()},
}


# ---------------------------------------------------------------- integers
def _icmp(op: str) -> Emitter:
    def emit(b, dtype, x, y):
        return (b.icmp_signed if is_signed(dtype) else b.icmp_unsigned)(op, x, y)

    return emit


def _safe_divisor(b, dtype, y):
    """y, or 1 where dividing by y would trap (y == 0, and y == -1 for signed types,
    whose quotient the callers fix up)."""
    traps = b.icmp_unsigned("==", y, _const(y, 0))
    if is_signed(dtype):
        traps = b.or_(traps, b.icmp_signed("==", y, _const(y, -1)))
    return b.select(traps, _const(y, 1), y)


def _idiv(b, dtype, x, y):
    """Division truncating toward zero; MIN / -1 wraps to MIN as in two's complement."""
    if not is_signed(dtype):
        return b.udiv(x, _safe_divisor(b, dtype, y))
    quotient = b.sdiv(x, _safe_divisor(b, dtype, y))
    return b.select(b.icmp_signed("==", y, _const(y, -1)), b.neg(x), quotient)


def _ifmod(b, dtype, x, y):
    """C's %: the sign of the dividend (x % -1 is 0, like x % 1)."""
    divisor = _safe_divisor(b, dtype, y)
    return b.srem(x, divisor) if is_signed(dtype) else b.urem(x, divisor)


def _isign_differs(b, x, y):
    zero = _const(x, 0)
    return b.xor(b.icmp_signed("<", x, zero), b.icmp_signed("<", y, zero))


def _ifloordiv(b, dtype, x, y):
    quotient = _idiv(b, dtype, x, y)
    if not is_signed(dtype):
        return quotient
    inexact = b.icmp_signed("!=", _ifmod(b, dtype, x, y), _const(x, 0))
    fix = b.and_(inexact, _isign_differs(b, x, y))
    return b.select(fix, b.sub(quotient, _const(x, 1)), quotient)


def _iremainder(b, dtype, x, y):
    mod = _ifmod(b, dtype, x, y)
    if not is_signed(dtype):
        return mod
    fix = b.and_(b.icmp_signed("!=", mod, _const(x, 0)), _isign_differs(b, mod, y))
    return b.select(fix, b.add(mod, y), mod)


def _ipow(b, dtype, x, y):
    def scalar(x, y):
        if x.type == I64:
            return int_pow(b, x, y)
        extend = b.sext if is_signed(dtype) else b.zext
        wide = int_pow(b, extend(x, I64), extend(y, I64))
        return b.trunc(wide, x.type)

    return lane_by_lane(b, scalar, [x, y])


def _iabs(b, dtype, x):
    return call_intrinsic(b, "abs", [x], ir.Constant(I1, 0)) if is_signed(dtype) else x


def _isign(b, dtype, x):
    zero = _const(x, 0)
    if not is_signed(dtype):
        return b.zext(b.icmp_unsigned("!=", x, zero), x.type)
    return b.sub(b.zext(b.icmp_signed(">", x, zero), x.type), b.zext(b.icmp_signed("<", x, zero), x.type))


def _isignbit(b, dtype, x):
    return b.icmp_signed("<", x, _const(x, 0)) if is_signed(dtype) else _false(b, dtype, x)


def _shift_left(b, dtype, x, y):
    # ATen: a shift by a negative amount or by the width or more gives 0. As unsigned,
    # negative amounts are large, so one comparison covers both.
    in_range = b.icmp_unsigned("<", y, _const(y, element_type(x.type).width))
    shifted = b.shl(x, b.select(in_range, y, _const(y, 0)))
    return b.select(in_range, shifted, _const(x, 0))


def _shift_right(b, dtype, x, y):
    # ATen: out-of-range amounts shift by (width - 1) for signed types (all sign bits),
    # and give 0 for unsigned ones.
    if is_signed(dtype):
        max_shift = _const(y, element_type(x.type).width - 1)
        return b.ashr(x, b.select(b.icmp_unsigned("<", y, max_shift), y, max_shift))
    in_range = b.icmp_unsigned("<", y, _const(y, element_type(x.type).width))
    shifted = b.lshr(x, b.select(in_range, y, _const(y, 0)))
    return b.select(in_range, shifted, _const(x, 0))


def _minmax(signed_name: str, unsigned_name: str) -> Emitter:
    def emit(b, dtype, x, y):
        return call_intrinsic(b, signed_name if is_signed(dtype) else unsigned_name, [x, y])

    return emit


INT_OPS: dict[str, Emitter] = {
    "add": lambda b, dtype, x, y: b.add(x, y),
    "sub": lambda b, dtype, x, y: b.sub(x, y),
    "mul": lambda b, dtype, x, y: b.mul(x, y),
    "div": _idiv,
    "floordiv": _ifloordiv,
    "remainder": _iremainder,
    "fmod": _ifmod,
    "pow": _ipow,
    "maximum": _minmax("smax", "umax"),
    "minimum": _minmax("smin", "umin"),
    "neg": lambda b, dtype, x: b.neg(x),
    "abs": _iabs,
    "sign": _isign,
    **{n: lambda b, dtype, x: x for n in ("floor", "ceil", "round", "trunc")},
    "bitwise_not": lambda b, dtype, x: b.not_(x),
    "bitwise_and": lambda b, dtype, x, y: b.and_(x, y),
    "bitwise_or": lambda b, dtype, x, y: b.or_(x, y),
    "bitwise_xor": lambda b, dtype, x, y: b.xor(x, y),
    "shift_left": _shift_left,
    "shift_right": _shift_right,
    **BIT_INT_EMITTERS,
    "isnan": _false,
    "isinf": _false,
    "signbit": _isignbit,
    **{name: _icmp(op) for name, op in COMPARISONS.items()},
}

# ---------------------------------------------------------------- booleans
# torch adds and multiplies bools as logical or / and; comparisons order False < True.
BOOL_OPS: dict[str, Emitter] = {
    "add": INT_OPS["bitwise_or"],
    "mul": INT_OPS["bitwise_and"],
    "maximum": INT_OPS["bitwise_or"],
    "minimum": INT_OPS["bitwise_and"],
    "logical_and": INT_OPS["bitwise_and"],
    "logical_or": INT_OPS["bitwise_or"],
    "logical_xor": INT_OPS["bitwise_xor"],
    "logical_not": INT_OPS["bitwise_not"],
    **{n: INT_OPS[n] for n in ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "isnan", "isinf")},
    **{name: _icmp(op) for name, op in COMPARISONS.items()},
}
