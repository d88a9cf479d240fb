"""Scalar math functions that kernel code calls: LLVM intrinsics, libm, and helpers of
our own (vectorized f32 math is in codegen/llvm_vmath.py).

libm symbols are resolved at JIT-link time (codegen/llvm_jit.py loads libm). erfinv,
digamma and integer pow have no libm function; they are defined here, once per module,
as internal LLVM functions that follow ATen's CPU implementations (c10/util/math
`calc_erfinv`, `calc_digamma`, `powi`) so that results match eager PyTorch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from llvmlite import ir

from strata.codegen.llvm_dtypes import I1, I64
from strata.codegen.llvm_lanes import call_intrinsic

F64 = ir.DoubleType()


def call_libm(b: ir.IRBuilder, name: str, args: Sequence[ir.Value]) -> ir.Value:
    """The C library function `name` on doubles, or `namef` on floats."""
    t = args[0].type
    symbol = name if t == F64 else name + "f"
    fn = b.module.globals.get(symbol) or ir.Function(b.module, ir.FunctionType(t, [t] * len(args)), symbol)
    return b.call(fn, list(args))


def _f64(value: float) -> ir.Constant:
    return ir.Constant(F64, value)


def _horner(b: ir.IRBuilder, coefficients: Sequence[float], z: ir.Value) -> ir.Value:
    """c[0]*z^n + … + c[n], evaluated as ATen writes it: ((c[0]*z + c[1])*z + …)."""
    acc: ir.Value = _f64(coefficients[0])
    for c in coefficients[1:]:
        acc = b.fadd(b.fmul(acc, z), _f64(c))
    return acc


def _helper(
    b: ir.IRBuilder, name: str, fnty: ir.FunctionType, define: Callable[[ir.Function], None]
) -> ir.Function:
    """The module's internal function `name`, defined by `define` on first use."""
    fn = b.module.globals.get(name)
    if fn is None:
        fn = ir.Function(b.module, fnty, name)
        fn.linkage = "internal"
        define(fn)
    return fn


# ---------------------------------------------------------------- erfinv
_ERFINV_A = (-0.140543331, 0.914624893, -1.645349621, 0.886226899)
_ERFINV_B = (0.012229801, -0.329097515, 1.442710462, -2.118377725, 1.0)
_ERFINV_C = (1.641345311, 3.429567803, -1.624906493, -1.970840454)
_ERFINV_D = (1.637067800, 3.543889200, 1.0)


def erfinv(b: ir.IRBuilder, y: ir.Value) -> ir.Value:
    """erfinv of a double."""
    fn = _helper(b, "strata.erfinv", ir.FunctionType(F64, [F64]), _define_erfinv)
    return b.call(fn, [y])


def _define_erfinv(fn: ir.Function) -> None:
    # A rational first guess (central range and tails) and two Newton steps; both
    # guesses are computed and one selected, which keeps the function branch-free.
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    (y,) = fn.args
    y_abs = call_intrinsic(b, "fabs", [y])
    z = b.fmul(y, y)
    central = b.fdiv(b.fmul(y, _horner(b, _ERFINV_A, z)), _horner(b, _ERFINV_B, z))
    w = call_intrinsic(b, "sqrt", [b.fneg(call_libm(b, "log", [b.fdiv(b.fsub(_f64(1.0), y_abs), _f64(2.0))]))])
    tail = b.fdiv(call_intrinsic(b, "copysign", [_horner(b, _ERFINV_C, w), y]), _horner(b, _ERFINV_D, w))
    x = b.select(b.fcmp_ordered("<=", y_abs, _f64(0.7)), central, tail)
    two_over_sqrt_pi = _f64(2.0 / math.sqrt(math.pi))
    for _ in range(2):
        slope = b.fmul(two_over_sqrt_pi, call_intrinsic(b, "exp", [b.fneg(b.fmul(x, x))]))
        x = b.fsub(x, b.fdiv(b.fsub(call_libm(b, "erf", [x]), y), slope))
    at_one = call_intrinsic(b, "copysign", [_f64(math.inf), y])
    x = b.select(b.fcmp_ordered("==", y_abs, _f64(1.0)), at_one, x)
    b.ret(b.select(b.fcmp_ordered(">", y_abs, _f64(1.0)), _f64(math.nan), x))


# ---------------------------------------------------------------- digamma
_PSI_10 = 2.25175258906672110764
_DIGAMMA_A = (
    8.33333333333333333333e-2,
    -2.10927960927960927961e-2,
    7.57575757575757575758e-3,
    -4.16666666666666666667e-3,
    3.96825396825396825397e-3,
    -8.33333333333333333333e-3,
    8.33333333333333333333e-2,
)


def digamma(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    """digamma of a double."""
    fn = _helper(b, "strata.digamma", ir.FunctionType(F64, [F64]), _define_digamma)
    return b.call(fn, [x])


def _define_digamma(fn: ir.Function) -> None:
    # Negative x reflects to 1 - x; the recurrence psi(x) = psi(x + 1) - 1/x pushes x
    # to at least 10, where the asymptotic series is accurate.
    (x,) = fn.args
    entry, loop, step, done = (fn.append_basic_block(n) for n in ("entry", "loop", "step", "done"))
    b = ir.IRBuilder(entry)
    negative = b.fcmp_ordered("<", x, _f64(0.0))
    whole = call_intrinsic(b, "trunc", [x])
    pi = _f64(math.pi)
    reflection = b.fdiv(pi, call_libm(b, "tan", [b.fmul(pi, b.fsub(x, whole))]))
    reflection = b.select(negative, reflection, _f64(0.0))
    start = b.select(negative, b.fsub(_f64(1.0), x), x)
    b.branch(loop)

    b.position_at_end(loop)
    v = b.phi(F64, "v")
    v.add_incoming(start, entry)
    acc = b.phi(F64, "acc")
    acc.add_incoming(_f64(0.0), entry)
    b.cbranch(b.fcmp_ordered("<", v, _f64(10.0)), step, done)

    b.position_at_end(step)
    v.add_incoming(b.fadd(v, _f64(1.0)), step)
    acc.add_incoming(b.fsub(acc, b.fdiv(_f64(1.0), v)), step)
    b.branch(loop)

    b.position_at_end(done)
    z = b.fdiv(_f64(1.0), b.fmul(v, v))
    series = b.fmul(z, _horner(b, _DIGAMMA_A, z))
    series = b.select(b.fcmp_ordered("<", v, _f64(1.0e17)), series, _f64(0.0))
    asymptotic = b.fsub(b.fsub(b.fadd(acc, call_libm(b, "log", [v])), b.fdiv(_f64(0.5), v)), series)
    result = b.select(b.fcmp_ordered("==", v, _f64(10.0)), b.fadd(acc, _f64(_PSI_10)), asymptotic)
    result = b.fsub(result, reflection)
    negative_integer = b.and_(negative, b.fcmp_ordered("==", x, whole))
    result = b.select(negative_integer, _f64(math.nan), result)
    at_zero = call_intrinsic(b, "copysign", [_f64(math.inf), b.fneg(x)])
    b.ret(b.select(b.fcmp_ordered("==", x, _f64(0.0)), at_zero, result))


# ---------------------------------------------------------------- integer pow
def int_pow(b: ir.IRBuilder, base: ir.Value, exponent: ir.Value) -> ir.Value:
    """ATen's integer pow on i64 operands (narrower types wrap the same way)."""
    fn = _helper(b, "strata.ipow", ir.FunctionType(I64, [I64, I64]), _define_int_pow)
    return b.call(fn, [base, exponent])


def _define_int_pow(fn: ir.Function) -> None:
    base, exponent = fn.args
    entry, negative, loop, step, done = (
        fn.append_basic_block(n) for n in ("entry", "negative", "loop", "step", "done")
    )
    zero, one, minus_one = (ir.Constant(I64, v) for v in (0, 1, -1))
    b = ir.IRBuilder(entry)
    b.cbranch(b.icmp_signed("<", exponent, zero), negative, loop)

    # A negative exponent: 1 for base 1, ±1 for base -1, else 0 (integer 1/base^n).
    b.position_at_end(negative)
    odd = b.trunc(exponent, I1)
    b.ret(
        b.select(
            b.icmp_signed("==", base, one),
            one,
            b.select(b.icmp_signed("==", base, minus_one), b.select(odd, minus_one, one), zero),
        )
    )

    # Square and multiply over the exponent's bits.
    b.position_at_end(loop)
    result = b.phi(I64, "result")
    result.add_incoming(one, entry)
    power = b.phi(I64, "power")
    power.add_incoming(base, entry)
    rest = b.phi(I64, "rest")
    rest.add_incoming(exponent, entry)
    b.cbranch(b.icmp_signed("!=", rest, zero), step, done)

    b.position_at_end(step)
    result.add_incoming(b.select(b.trunc(rest, I1), b.mul(result, power), result), step)
    power.add_incoming(b.mul(power, power), step)
    rest.add_incoming(b.lshr(rest, one), step)
    b.branch(loop)

    b.position_at_end(done)
    b.ret(result)
