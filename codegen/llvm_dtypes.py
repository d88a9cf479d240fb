"""How strata's dtypes live in LLVM IR, and conversions between them.

A value of dtype f16 is an LLVM `half`; one of bf16 is its bit pattern in an `i16`
(llvmlite's IR builder has no `bfloat`, and converting by hand gives eager PyTorch's
rounding exactly, denormals included). Booleans are `i1` in registers and one byte in
memory, like torch.bool. u8 is an `i8` that the ops treat as unsigned.

Every function here works on scalars and on vectors of lanes alike
(codegen/llvm_lanes.py): a vector converts lane by lane into a vector.
"""

from __future__ import annotations

import torch
from llvmlite import ir

from strata.codegen.errors import CodegenError
from strata.codegen.llvm_lanes import const_like, element_type, like
from strata.dialects.types import DTYPES, is_float, itemsize, scalar_dtype

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


_DTYPE_NAMES: dict = {}


def dtype_of(op, t) -> str:
    """The dtype name of scalar type t that `op` (an op, or a kernel.func) handles;
    CodegenError for a type the LLVM code generator has no dtype for. (Memoized:
    scalar_dtype builds every scalar type to compare it, a third of a warm compile.)"""
    name = _DTYPE_NAMES.get(t)
    if name is None:
        try:
            name = _DTYPE_NAMES[t] = scalar_dtype(t)
        except ValueError:
            raise CodegenError(f"{op.name} on {t} is not supported by the LLVM CPU code generator") from None
    return name


def register_type(dtype: str) -> ir.Type:
    """The LLVM type of one scalar of `dtype` inside a kernel body."""
    return _REGISTER_TYPES[dtype]


def memory_type(dtype: str) -> ir.Type:
    """The LLVM type of one element of a buffer of `dtype`."""
    return ir.IntType(8) if dtype == "i1" else register_type(dtype)


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
    return b.icmp_unsigned("!=", stored, const_like(stored, 0)) if dtype == "i1" else stored


def store_value(b: ir.IRBuilder, value: ir.Value, dtype: str) -> ir.Value:
    """A register value as the element to store."""
    return b.zext(value, like(memory_type(dtype), value)) if dtype == "i1" else value


def to_f32(b: ir.IRBuilder, value: ir.Value, dtype: str) -> ir.Value:
    """A 16-bit float widened (exactly) to f32."""
    if dtype == "f16":
        return b.fpext(value, like(F32, value))
    bits = b.zext(value, like(I32, value))
    bits = b.shl(bits, const_like(bits, 16))
    return b.bitcast(bits, like(F32, value))


def from_f32(b: ir.IRBuilder, value: ir.Value, dtype: str) -> ir.Value:
    """An f32 rounded to nearest-even into a 16-bit float."""
    if dtype == "f16":
        return b.fptrunc(value, like(register_type("f16"), value))
    # c10::BFloat16's round_to_nearest_even: add 0x7fff plus the kept part's lowest
    # bit, keep the high half; a NaN becomes the canonical quiet NaN.
    bits = b.bitcast(value, like(I32, value))
    lowest_kept = b.and_(b.lshr(bits, const_like(bits, 16)), const_like(bits, 1))
    rounded = b.lshr(b.add(bits, b.add(lowest_kept, const_like(bits, 0x7FFF))), const_like(bits, 16))
    is_nan = b.fcmp_unordered("uno", value, value)
    return b.trunc(b.select(is_nan, const_like(bits, 0x7FC0), rounded), like(I16, value))


def convert(b: ir.IRBuilder, value: ir.Value, src: str, dst: str) -> ir.Value:
    """prim.convert_element_type: torch's `.to(dst)` on one scalar."""
    if src == dst:
        return value
    if src in HALF_FLOATS:
        return convert(b, to_f32(b, value, src), "f32", dst)
    if dst == "i1":
        if is_float(src):
            return b.fcmp_unordered("!=", value, const_like(value, 0.0))
        return b.icmp_unsigned("!=", value, const_like(value, 0))
    if dst in HALF_FLOATS:
        # c10::Half and c10::BFloat16 are built from a float, so f64 and integers
        # are rounded to f32 first.
        return from_f32(b, convert(b, value, src, "f32"), dst)
    dst_type = like(register_type(dst), value)
    if is_float(src) and is_float(dst):
        return b.fpext(value, dst_type) if itemsize(dst) > itemsize(src) else b.fptrunc(value, dst_type)
    if is_float(src):
        # Truncates toward zero, through i32 for narrower types so that e.g. 300.0
        # wraps to 44 in i8 and -1.0 to 255 in u8 as in eager; values out of the
        # intermediate type's range are undefined, as in torch.
        through = "i64" if dst == "i64" else "i32"
        return _resize_int(b, b.fptosi(value, like(register_type(through), value)), through, dst)
    if is_float(dst):
        return b.sitofp(value, dst_type) if is_signed(src) else b.uitofp(value, dst_type)
    return _resize_int(b, value, src, dst)


def _resize_int(b: ir.IRBuilder, value: ir.Value, src: str, dst: str) -> ir.Value:
    src_bits, dst_bits = element_type(value.type).width, register_type(dst).width
    if dst_bits < src_bits:
        return b.trunc(value, like(register_type(dst), value))
    if dst_bits > src_bits:
        extend = b.sext if is_signed(src) else b.zext
        return extend(value, like(register_type(dst), value))
    return value
