"""kernel.reduce kinds in LLVM IR: accumulator types, identities, combining steps.

Float sums and products accumulate in f64 with `reassoc`, so that LLVM's loop
vectorizer keeps several partial results: in f32, a long row summed that way drifts
from ATen's cascade sum by more than float tolerances allow, in f64 it does not, and
the loop stays memory-bound. Nothing else in a kernel is reassociated. amax and amin
propagate NaN (llvm.maximum / llvm.minimum) and compare 16-bit floats in f32.
"""

from __future__ import annotations

import math

from llvmlite import ir

from strata.codegen.llvm_dtypes import HALF_FLOATS, constant, is_signed, register_type
from strata.codegen.llvm_math import call_intrinsic
from strata.dialects.types import is_float

REASSOC = ("reassoc",)


def accumulator_dtype(kind: str, dtype: str) -> str:
    """The dtype in which a row of `dtype` is reduced by `kind`."""
    if is_float(dtype) and kind in ("sum", "prod"):
        return "f64"
    return "f32" if dtype in HALF_FLOATS else dtype


def identity(kind: str, acc_dtype: str) -> ir.Constant:
    """The reduction of an empty row."""
    if kind == "sum":
        return constant(acc_dtype, 0)
    if kind == "prod":
        return constant(acc_dtype, 1)
    from_top = kind == "amin"
    if is_float(acc_dtype):
        return constant(acc_dtype, math.inf if from_top else -math.inf)
    if acc_dtype == "i1":
        return constant(acc_dtype, from_top)
    bits = register_type(acc_dtype).width
    if is_signed(acc_dtype):
        return constant(acc_dtype, 2 ** (bits - 1) - 1 if from_top else -(2 ** (bits - 1)))
    return constant(acc_dtype, 2**bits - 1 if from_top else 0)


def combine(b: ir.IRBuilder, kind: str, acc_dtype: str, acc: ir.Value, value: ir.Value) -> ir.Value:
    """One accumulation step: `acc` and `value` are of the accumulator's dtype."""
    if is_float(acc_dtype):
        if kind == "sum":
            return b.fadd(acc, value, flags=REASSOC)
        if kind == "prod":
            return b.fmul(acc, value, flags=REASSOC)
        return call_intrinsic(b, "maximum" if kind == "amax" else "minimum", [acc, value])
    if acc_dtype == "i1":
        # sum and amax are "any", prod and amin are "all".
        return b.or_(acc, value) if kind in ("sum", "amax") else b.and_(acc, value)
    if kind == "sum":
        return b.add(acc, value)
    if kind == "prod":
        return b.mul(acc, value)
    signedness = "s" if is_signed(acc_dtype) else "u"
    return call_intrinsic(b, signedness + kind.removeprefix("a"), [acc, value])
