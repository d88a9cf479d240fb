"""Elementwise ops composed of prim ops as eager computes them: hypot, bit shifts,
sign and signbit of bool, hardtanh of integers, gcd and lcm, frexp, nextafter, and
the conversion that torch's own decompositions write as prims::convert_element_type.
Promotion and broadcasting come from the builder's `pointwise`, as in elementwise.py.
"""

from __future__ import annotations

import math

from xdsl.ir import SSAValue

from strata.dialects.aten import AtenOp
from strata.dialects.types import is_float
from strata.passes.decompositions.builder import Decline, PrimBuilder, tensor_of
from strata.passes.decompositions.rules import decomposes


@decomposes("aten::hypot")
def hypot(op: AtenOp, b: PrimBuilder) -> SSAValue:
    if not all(is_float(tensor_of(b.arg(n)).dtype) for n in ("self", "other")):
        raise Decline("hypot of integers is an error in eager")
    return b.pointwise("DEFAULT", [b.arg("self"), b.arg("other")], lambda x, y: b.ew("hypot", x, y))


def _shift(prim_name: str):
    # prim's shifts give eager's results for negative amounts and amounts >= the
    # width (0 to the left, the sign fill to the right); bool and floats decline.
    def rule(op: AtenOp, b: PrimBuilder) -> SSAValue:
        return b.pointwise("DEFAULT", [b.arg("self"), b.arg("other")], lambda x, y: b.ew(prim_name, x, y))

    return rule


for _aten, _prim in (("bitwise_left_shift", "shift_left"), ("bitwise_right_shift", "shift_right")):
    decomposes(*(f"aten::{_aten}.{o}" for o in ("Tensor", "Tensor_Scalar", "Scalar_Tensor")))(_shift(_prim))


@decomposes("aten::sign")
def sign(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x = b.arg("self")
    if tensor_of(x).dtype == "i1":
        return x  # the sign of a bool is itself
    return b.pointwise("DEFAULT", [x], lambda v: b.ew("sign", v))


@decomposes("aten::signbit")
def signbit(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x = b.arg("self")
    if tensor_of(x).dtype == "i1":
        return b.full(b.out().dims, False, "i1")  # bools are never negative
    return b.pointwise("ALWAYS_BOOL", [x], lambda v: b.ew("signbit", v))


@decomposes("aten::hardtanh")
def hardtanh(op: AtenOp, b: PrimBuilder) -> SSAValue:
    """clamp(x, min_val, max_val). ATen's hardtanh_out reads the bounds of an integer
    tensor as integers (Scalar::toLong truncates) so that they do not promote it;
    min(max(x, lo), hi) is hi where lo > hi, as eager's clamp gives."""
    x, lo, hi = b.arg("self"), b.arg("min_val"), b.arg("max_val")
    dtype = tensor_of(x).dtype
    if dtype == "i1":
        raise Decline("hardtanh of bool is an error in eager")
    if not is_float(dtype):
        if not all(isinstance(v, int | float) and math.isfinite(v) for v in (lo, hi)):
            raise Decline(f"hardtanh bounds {lo}, {hi} of an integer tensor")
        lo, hi = int(lo), int(hi)  # Python's int truncates toward zero, as toLong does
        if dtype == "u8" and (lo < 0 or hi < 0):
            raise Decline("negative bounds of an unsigned tensor are an error in eager")

    def body(v: SSAValue, vlo: SSAValue, vhi: SSAValue) -> SSAValue:
        return b.ew("minimum", b.ew("maximum", v, vlo), vhi)

    return b.pointwise("DEFAULT", [x, lo, hi], body)


@decomposes("prims::convert_element_type")
def convert_element_type(op: AtenOp, b: PrimBuilder) -> SSAValue:
    # torch's decompositions (renorm's, in f16/bf16) write their casts as this prim.
    return b.convert(b.arg("a"), b.out().dtype)


# ---------------------------------------------------------------- gcd, lcm
def _integer_pair(b: PrimBuilder, name: str, dtypes: tuple[str, ...]) -> list:
    dtype = b.out().dtype
    if dtype not in dtypes:
        raise Decline(f"{name} of {dtype}")
    return [b.arg("self"), b.arg("other")]


@decomposes("aten::gcd")
def gcd(op: AtenOp, b: PrimBuilder) -> SSAValue:
    # Narrow types too: C's promotion to int changes nothing that wraps back.
    args = _integer_pair(b, "gcd", ("i8", "u8", "i16", "i32", "i64"))
    return b.pointwise("DEFAULT", args, lambda x, y: b.ew("gcd", x, y))


@decomposes("aten::lcm")
def lcm(op: AtenOp, b: PrimBuilder) -> SSAValue:
    """ATen's calc_lcm: g == 0 ? 0 : abs(a / g * b), wrapping as its integers do."""

    def body(x: SSAValue, y: SSAValue) -> SSAValue:
        g = b.ew("gcd", x, y)
        zero = b.ew("eq", g, b.constant_like(g, 0))
        safe = b.where(zero, b.constant_like(g, 1), g)
        return b.where(zero, b.constant_like(g, 0), b.ew("abs", b.ew("mul", b.ew("div", x, safe), y)))

    # Narrow types decline: eager takes abs of the product in int, before it wraps.
    return b.pointwise("DEFAULT", _integer_pair(b, "lcm", ("i32", "i64")), body)


# ---------------------------------------------------------------- bits of floats
@decomposes("aten::frexp.Tensor")
def frexp(op: AtenOp, b: PrimBuilder) -> tuple[SSAValue, SSAValue]:
    """(mantissa in [0.5, 1) with x's sign, int32 exponent): x = mantissa * 2^exponent;
    zero, infinities and NaN give themselves and 0."""
    x = b.arg("self")
    if not is_float(tensor_of(x).dtype):
        raise Decline("frexp of integers is an error in eager")
    if b.out(1).dtype != "i32":
        raise Decline(f"frexp's exponent declared {b.out(1).dtype}")
    mantissa = b.convert(b.ew("frexp_mantissa", x), b.out(0).dtype)
    return mantissa, b.convert(b.ew("frexp_exponent", x), "i32")


@decomposes("aten::nextafter")
def nextafter(op: AtenOp, b: PrimBuilder) -> SSAValue:
    """The next float after self toward other, in the result's own dtype (no opmath)."""
    args = [b.arg("self"), b.arg("other")]
    if not all(is_float(tensor_of(a).dtype) for a in args):
        raise Decline("nextafter of integers is an error in eager")
    dtype = b.out().dtype

    def body(x: SSAValue, y: SSAValue) -> SSAValue:
        if dtype in ("f16", "bf16"):  # stepped in the 16-bit pattern, computed in f32
            wide = b.ew(f"nextafter_{dtype}", b.convert(x, "f32"), b.convert(y, "f32"))
            return b.convert(wide, dtype)
        return b.ew("nextafter", x, y)

    return b.pointwise("NO_OPMATH", args, body)
