"""How strata's dtypes live in LLVM IR, and conversions between them.

A value of dtype f16 is an LLVM `half`; one of bf16 is its bit pattern in an `i16`
(llvmlite's IR builder has no `bfloat`, and converting by hand gives eager PyTorch's
rounding exactly, denormals included). Booleans are `i1` in registers and one byte in
memory, like torch.bool. u8 is an `i8` that the ops treat as unsigned.
"""

from __future__ import annotations

import torch
from llvmlite import ir

from strata.dialects.types import DTYPES, is_float

HALF_FLOATS = ("f16", "bf16")
I1 = ir.IntType(1)
I16 = ir.IntType(16)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
F32 = ir.FloatType()

_REGISTER_TYPES: dict[str, ir.Type] = {
    "f16": ir.HalfType(),
    "bf16": I16,
    "f32": F32,
    "f64": ir.DoubleType(),
    "i8": ir.IntType(8),
    "i16": I16,
    "i32": I32,
    "i64": I64,
    "u8": ir.IntType(8),
    "i1": I1,
}


def register_type(dtype: str) -> ir.Type:
    """The LLVM type of one scalar of `dtype` inside a kernel body."""
    return _REGISTER_TYPES[dtype]


def memory_type(dtype: str) -> ir.Type:
    """The LLVM type of one element of a buffer of `dtype`."""
    return ir.IntType(8) if dtype == "i1" else register_type(dtype)


def itemsize(dtype: str) -> int:
    return DTYPES[dtype].itemsize


def is_signed(dtype: str) -> bool:
    """Whether integer ops treat `dtype` as signed (bool compares as 0 < 1)."""
    return dtype not in ("u8", "i1")


def constant(dtype: str, value: float | int | bool) -> ir.Constant:
    """`value` as a constant of `dtype`, rounded (or wrapped) the way torch does."""
    if dtype == "bf16":
        return ir.Constant(I16, torch.tensor(value, dtype=torch.bfloat16).view(torch.int16).item())
    if is_float(dtype):
        # Rounded by torch: llvmlite's own packing raises on values beyond the range.
        return ir.Constant(register_type(dtype), torch.tensor(value, dtype=DTYPES[dtype]).item())
    return ir.Constant(register_type(dtype), bool(value) if dtype == "i1" else int(value))


def load_value(b: ir.IRBuilder, stored: ir.Value, dtype: str) -> ir.Value:
    """A loaded element as a register value."""
    return b.icmp_unsigned("!=", stored, ir.Constant(stored.type, 0)) if dtype == "i1" else stored


def store_value(b: ir.IRBuilder, value: ir.Value, dtype: str) -> ir.Value:
    """A register value as the element to store."""
    return b.zext(value, memory_type(dtype)) if dtype == "i1" else value


def to_f32(b: ir.IRBuilder, value: ir.Value, dtype: str) -> ir.Value:
    """A 16-bit float widened (exactly) to f32."""
    if dtype == "f16":
        return b.fpext(value, F32)
    bits = b.shl(b.zext(value, I32), ir.Constant(I32, 16))
    return b.bitcast(bits, F32)


def from_f32(b: ir.IRBuilder, value: ir.Value, dtype: str) -> ir.Value:
    """An f32 rounded to nearest-even into a 16-bit float."""
    if dtype == "f16":
        return b.fptrunc(value, register_type("f16"))
    # c10::BFloat16's round_to_nearest_even: add 0x7fff plus the kept part's lowest
    # bit, keep the high half; a NaN becomes the canonical quiet NaN.
    bits = b.bitcast(value, I32)
    lowest_kept = b.and_(b.lshr(bits, ir.Constant(I32, 16)), ir.Constant(I32, 1))
    rounded = b.lshr(b.add(bits, b.add(lowest_kept, ir.Constant(I32, 0x7FFF))), ir.Constant(I32, 16))
    is_nan = b.fcmp_unordered("uno", value, value)
    return b.trunc(b.select(is_nan, ir.Constant(I32, 0x7FC0), rounded), I16)


def convert(b: ir.IRBuilder, value: ir.Value, src: str, dst: str) -> ir.Value:
    """prim.convert_element_type: torch's `.to(dst)` on one scalar."""
    if src == dst:
        return value
    if src in HALF_FLOATS:
        return convert(b, to_f32(b, value, src), "f32", dst)
    if dst == "i1":
        if is_float(src):
            return b.fcmp_unordered("!=", value, ir.Constant(value.type, 0.0))
        return b.icmp_unsigned("!=", value, ir.Constant(value.type, 0))
    if dst in HALF_FLOATS:
        # c10::Half and c10::BFloat16 are built from a float, so f64 and integers
        # are rounded to f32 first.
        return from_f32(b, convert(b, value, src, "f32"), dst)
    dst_type = register_type(dst)
    if is_float(src) and is_float(dst):
        return b.fpext(value, dst_type) if itemsize(dst) > itemsize(src) else b.fptrunc(value, dst_type)
    if is_float(src):
        # Truncates toward zero, through i32 for narrower types so that e.g. 300.0
        # wraps to 44 in i8 and -1.0 to 255 in u8 as in eager; values out of the
        # intermediate type's range are undefined, as in torch.
        through = "i64" if dst == "i64" else "i32"
        return _resize_int(b, b.fptosi(value, register_type(through)), through, dst)
    if is_float(dst):
        return b.sitofp(value, dst_type) if is_signed(src) else b.uitofp(value, dst_type)
    return _resize_int(b, value, src, dst)


def _resize_int(b: ir.IRBuilder, value: ir.Value, src: str, dst: str) -> ir.Value:
    src_bits, dst_bits = value.type.width, register_type(dst).width
    if dst_bits < src_bits:
        return b.trunc(value, register_type(dst))
    if dst_bits > src_bits:
        extend = b.sext if is_signed(src) else b.zext
        return extend(value, register_type(dst))
    return value
