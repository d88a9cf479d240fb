"""erfcx(x) = exp(x^2) erfc(x) for the LLVM CPU generator: ATen's calc_erfcx
(aten/src/ATen/native/Math.h, from Steven G. Johnson's Faddeeva package) in double,
branch-free. For 0 <= x <= 50 it is one of 100 degree-6 polynomials, picked by
y = 4/(4 + x), read from a constant table; beyond 50 a continued fraction; below 0
the reflection 2 exp(x^2) - erfcx(-x).
"""

from __future__ import annotations

import math

from llvmlite import ir

from strata.codegen.erfcx_table import ERFCX_Y100
from strata.codegen.llvm_dtypes import I64
from strata.codegen.llvm_lanes import call_intrinsic, lane_by_lane
from strata.codegen.llvm_math import F64, _helper

_ROW = ir.ArrayType(F64, 7)
_TABLE = ir.ArrayType(_ROW, len(ERFCX_Y100))
_INV_SQRT_PI = 0.56418958354775628694807945156


def emit_erfcx(b: ir.IRBuilder, dtype: str, x: ir.Value) -> ir.Value:
    """prim.erfcx on f32 or f64 lanes, each computed in double and rounded once."""
    return lane_by_lane(b, lambda v: _erfcx(b, v), [x])


def _erfcx(b: ir.IRBuilder, x: ir.Value) -> ir.Value:
    if x.type == F64:
        return b.call(_helper(b, "strata.erfcx", ir.FunctionType(F64, [F64]), _define_erfcx), [x])
    # For a float, x^2 is rounded to float before exp(x^2), as ATen's float code does:
    # exp amplifies that rounding (by x^2) beyond float's tolerance for x < -6.
    fn = _helper(b, "strata.erfcxf", ir.FunctionType(F64, [F64]), lambda f: _define_erfcx(f, x.type))
    return b.fptrunc(b.call(fn, [b.fpext(x, F64)]), x.type)


def _table(module: ir.Module) -> ir.GlobalVariable:
    table = module.globals.get("strata.erfcx_y100")
    if table is None:
        table = ir.GlobalVariable(module, _TABLE, "strata.erfcx_y100")
        table.initializer = ir.Constant(_TABLE, [ir.Constant(_ROW, list(row)) for row in ERFCX_Y100])
        table.global_constant = True
        table.linkage = "internal"
    return table


def _f64(value: float) -> ir.Constant:
    return ir.Constant(F64, value)


def _define_erfcx(fn: ir.Function, square_type: ir.Type = F64) -> None:
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    (x,) = fn.args
    ax = call_intrinsic(b, "fabs", [x])
    # erfcx_y100(400 / (4 + |x|)): row k = (int) y100 for y100 < 100; y100 = 100
    # only where |x| < 4 eps, and there ATen returns 1.
    y100 = b.fdiv(_f64(400.0), b.fadd(_f64(4.0), ax))
    inside = b.fcmp_ordered("<", y100, _f64(100.0))
    k = b.fptosi(b.select(inside, y100, _f64(0.0)), I64)  # NaN reads row 0, unused
    t = b.fsub(b.fmul(_f64(2.0), y100), b.fadd(b.sitofp(b.mul(k, ir.Constant(I64, 2)), F64), _f64(1.0)))
    row = b.gep(_table(fn.module), [ir.Constant(I64, 0), k], inbounds=True)
    coefficients = [b.load(b.gep(row, [ir.Constant(I64, 0), ir.Constant(I64, j)], inbounds=True)) for j in range(7)]
    poly = coefficients[6]
    for c in reversed(coefficients[:6]):
        poly = b.fadd(c, b.fmul(poly, t))
    table_value = b.select(inside, poly, _f64(1.0))
    # x > 50: the continued fraction, simplified; its first term beyond 5e7
    xx = b.fmul(x, x)
    if square_type != F64:
        xx = b.fpext(b.fptrunc(xx, square_type), F64)
    numerator = b.fmul(_f64(_INV_SQRT_PI), b.fadd(b.fmul(xx, b.fadd(xx, _f64(4.5))), _f64(2.0)))
    denominator = b.fmul(x, b.fadd(b.fmul(xx, b.fadd(xx, _f64(5.0))), _f64(3.75)))
    far = b.select(b.fcmp_ordered(">", x, _f64(5e7)), b.fdiv(_f64(_INV_SQRT_PI), x), b.fdiv(numerator, denominator))
    positive = b.select(b.fcmp_ordered(">", x, _f64(50.0)), far, table_value)
    # x < 0: 2 exp(x^2) - erfcx(-x), the second term dropped below -6.1, inf below -26.7
    twice = b.fmul(_f64(2.0), call_intrinsic(b, "exp", [xx]))
    negative = b.select(b.fcmp_ordered("<", x, _f64(-6.1)), twice, b.fsub(twice, table_value))
    negative = b.select(b.fcmp_ordered("<", x, _f64(-26.7)), _f64(math.inf), negative)
    result = b.select(b.fcmp_ordered(">=", x, _f64(0.0)), positive, negative)
    b.ret(b.select(b.fcmp_unordered("uno", x, x), x, result))
