"""Elementwise ops that prim has no single op for, composed as eager computes them:
NaN-ignoring fmax/fmin, copysign, ldexp (x · 2^e, eager's own composite), angle of
real numbers, and round to a number of decimals. Promotion and broadcasting come from
the builder's `pointwise`, as in elementwise.py.
"""

from __future__ import annotations

import math

from xdsl.ir import SSAValue

from strata.dialects.aten import AtenOp
from strata.dialects.types import is_float
from strata.passes.decompositions.builder import Decline, PrimBuilder, promote, tensor_of
from strata.passes.decompositions.rules import decomposes


@decomposes("aten::fmax", "aten::fmin")
def fmax_fmin(op: AtenOp, b: PrimBuilder) -> SSAValue:
    """maximum (minimum) where neither operand is NaN, else the other one: NaN only
    where both are."""
    name = "maximum" if op.overload_name == "aten::fmax" else "minimum"

    def body(x: SSAValue, y: SSAValue) -> SSAValue:
        m = b.ew(name, x, y)
        if not is_float(tensor_of(x).dtype):
            return m
        return b.where(b.ew("isnan", x), y, b.where(b.ew("isnan", y), x, m))

    return b.pointwise("DEFAULT", [b.arg("self"), b.arg("other")], body)


@decomposes("aten::copysign.Tensor", "aten::copysign.Scalar")
def copysign(op: AtenOp, b: PrimBuilder) -> SSAValue:
    return b.pointwise("INT_TO_FLOAT", [b.arg("self"), b.arg("other")], lambda x, y: b.ew("copysign", x, y))


@decomposes("aten::ldexp.Tensor")
def ldexp(op: AtenOp, b: PrimBuilder) -> SSAValue:
    """Eager's steps: power = pow(2.0, other) (promoting as pow does: an f16 exponent
    gives an f16 power, which overflows at 2^16), then self · power as mul computes
    it, written to the declared result dtype (self and other promoted int-to-float)."""
    x, e = b.arg("self"), b.arg("other")
    et, out = tensor_of(e), b.out()
    compute, result = promote("BOOL_TO_LONG", 2.0, e)
    if not is_float(compute):
        raise Decline(f"pow(2.0, {et.dtype}) computes in {compute}")
    power = b.ew("pow", b.full(et.dims, 2.0, compute), b.convert(e, compute))
    power = b.convert(power, result)
    compute, result = promote("DEFAULT", x, power)
    exact = et.rank == 0  # eager's mul reads a 0-d operand at computation precision
    xs = b.operand(b.round_to(x, result), out.dims, compute)
    ps = b.operand(power if exact else b.round_to(power, result), out.dims, compute)
    return b.convert(b.convert(b.ew("mul", xs, ps), result), out.dtype)


@decomposes("aten::angle")
def angle(op: AtenOp, b: PrimBuilder) -> SSAValue:
    """Of a real number: pi if it is negative, 0 otherwise (-0.0 too), NaN if NaN."""

    def body(v: SSAValue) -> SSAValue:
        c = lambda value: b.constant_like(v, value)  # noqa: E731
        sign = b.where(b.ew("lt", v, c(0)), c(math.pi), c(0.0))
        return b.where(b.ew("isnan", v), v, sign)

    return b.pointwise("INT_TO_FLOAT", [b.arg("self")], body)


@decomposes("aten::round.decimals")
def round_decimals(op: AtenOp, b: PrimBuilder) -> SSAValue:
    """ATen's round_decimals_kernel: nearbyint(x · 10^d) / 10^d, or for d < 0
    nearbyint(x / 10^-d) · 10^-d, in the op-math dtype (f32 for f16/bf16)."""
    x, decimals = b.arg("self"), b.arg("decimals")
    if not is_float(tensor_of(x).dtype):
        raise Decline("round with decimals of integers is an error in eager")
    if not isinstance(decimals, int) or isinstance(decimals, bool):
        raise Decline(f"symbolic decimals {decimals}")
    if decimals == 0:
        return b.pointwise("DEFAULT", [x], lambda v: b.ew("round", v))
    if abs(decimals) > 308:
        raise Decline(f"10^{abs(decimals)} overflows")
    scale = float(10 ** abs(decimals))

    def body(v: SSAValue) -> SSAValue:
        p = b.constant_like(v, b.round_to(scale, tensor_of(v).dtype))
        if decimals < 0:
            return b.ew("mul", b.ew("round", b.ew("div", v, p)), p)
        return b.ew("div", b.ew("round", b.ew("mul", v, p)), p)

    return b.pointwise("DEFAULT", [x], body)

