"""kernel.reduce kinds in LLVM IR: accumulator types, identities, combining steps, and
the horizontal reduction of a vector of partial results.

A float sum or product accumulates in vectors of f32 lanes (f64 for f64 rows), each
lane a running partial result; every block of BLOCK steps the partials are added into
f64 partials, and the row's result is the sum of those (a blocked, two-level sum, as
ATen's cascade sum: in f32 alone a long row drifts from eager by more than float
tolerances allow). The order of that sum is ours to choose, so the horizontal step
carries `reassoc`; nothing else in a kernel is reassociated.

Float amax and amin keep the larger (smaller) of two values with one compare and
select (one vmaxps on x86; llvm.maximum's exact NaN and signed-zero rules would cost a
chain of six instructions per step), and a separate lane mask of "a NaN was seen": a
NaN anywhere in the row makes the result NaN, as in eager. 16-bit floats compare in f32.
"""

from __future__ import annotations

import math

from llvmlite import ir

from strata.codegen.llvm_dtypes import HALF_FLOATS, constant, convert, dtype_of, is_signed, register_type
from strata.codegen.llvm_lanes import I1, call_intrinsic, intrinsic, splat, with_lanes
from strata.dialects.kernel import ReduceOp, contracts
from strata.dialects.types import is_float

REASSOC = ("reassoc",)
BLOCK = 16  # accumulation steps between two flushes of f32 partials into f64


def accumulator_dtype(kind: str, dtype: str) -> str:
    """The dtype in which a row of `dtype` is reduced by `kind` (within a block)."""
    if dtype in HALF_FLOATS:
        return "f32"
    return dtype


def outer_dtype(kind: str, dtype: str) -> str | None:
    """The dtype that blocks of partial results are added up in, None if not blocked."""
    if kind in ("sum", "prod") and accumulator_dtype(kind, dtype) == "f32":
        return "f64"
    return None


def identity(kind: str, acc_dtype: str, lanes: int | None = None) -> ir.Constant:
    """The reduction of an empty row (in every lane)."""
    scalar = _scalar_identity(kind, acc_dtype)
    if not lanes:
        return scalar
    return ir.Constant(with_lanes(scalar.type, lanes), [scalar] * lanes)


def _scalar_identity(kind: str, acc_dtype: str) -> ir.Constant:
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


def tracks_nan(kind: str, acc_dtype: str) -> bool:
    """Whether the reduction keeps a separate "NaN seen" mask (float amax and amin)."""
    return is_float(acc_dtype) and kind in ("amax", "amin")


def combine(b: ir.IRBuilder, kind: str, acc_dtype: str, acc: ir.Value, value: ir.Value, flags: tuple[str, ...] = ()) -> ir.Value:
    """One accumulation step: `acc` and `value` are of the accumulator's dtype (and lanes).
    Float amax / amin ignore NaN here: see tracks_nan. `flags`: fast-math flags of a float
    sum's add (`contract`, where the summed product may fuse into it)."""
    if is_float(acc_dtype):
        if kind == "sum":
            return b.fadd(acc, value, flags=flags)
        if kind == "prod":
            return b.fmul(acc, value)
        keep = b.fcmp_ordered(">" if kind == "amax" else "<", acc, value)
        return b.select(keep, acc, value)
    if acc_dtype == "i1":
        # sum and amax are "any", prod and amin are "all".
        return b.or_(acc, value) if kind in ("sum", "amax") else b.and_(acc, value)
    if kind == "sum":
        return b.add(acc, value)
    if kind == "prod":
        return b.mul(acc, value)
    signedness = "s" if is_signed(acc_dtype) else "u"
    return call_intrinsic(b, signedness + kind.removeprefix("a"), [acc, value])


_VECTOR_REDUCE = {
    ("sum", True): "fadd", ("prod", True): "fmul", ("amax", True): "fmax", ("amin", True): "fmin",
    ("sum", False): "add", ("prod", False): "mul",
}


def horizontal(b: ir.IRBuilder, kind: str, acc_dtype: str, vector: ir.Value) -> ir.Value:
    """The lanes of `vector` combined into one scalar (float amax / amin ignoring NaN)."""
    element = vector.type.element
    if acc_dtype == "i1":
        name = "or" if kind in ("sum", "amax") else "and"
    elif is_float(acc_dtype):
        name = _VECTOR_REDUCE[(kind, True)]
    elif kind in ("sum", "prod"):
        name = _VECTOR_REDUCE[(kind, False)]
    else:
        name = ("s" if is_signed(acc_dtype) else "u") + kind.removeprefix("a")
    if name in ("fadd", "fmul"):
        fn = intrinsic(b.module, f"vector.reduce.{name}", element, [element, vector.type], [vector.type])
        start = ir.Constant(element, -0.0 if name == "fadd" else 1.0)
        return b.call(fn, [start, vector], fastmath=REASSOC)
    fn = intrinsic(b.module, f"vector.reduce.{name}", element, [vector.type], [vector.type])
    return b.call(fn, [vector])


class Accumulator:
    """The running value of one kernel.reduce: partial results in `lanes` lanes (in
    stack slots, which SROA turns into registers), blocked into f64 for float sums."""

    def __init__(self, op: ReduceOp, allocas: ir.IRBuilder, lanes: int | None):
        self.op = op
        self.kind = op.kind.data
        self.dtype = dtype_of(op, op.result.type)
        self.acc_dtype = accumulator_dtype(self.kind, self.dtype)
        self.outer_dtype = outer_dtype(self.kind, self.dtype)
        self.lanes = lanes
        self.slot = allocas.alloca(with_lanes(register_type(self.acc_dtype), lanes))
        if self.outer_dtype:
            self.outer = allocas.alloca(with_lanes(register_type(self.outer_dtype), lanes))
        self.nan = allocas.alloca(with_lanes(I1, lanes)) if tracks_nan(self.kind, self.acc_dtype) else None
        # a product summed here, from the same aten op, may fuse into the add (an FMA)
        self.flags = ("contract",) if contracts(op) and self.acc_dtype == self.dtype else ()

    def reset(self, b: ir.IRBuilder) -> None:
        b.store(identity(self.kind, self.acc_dtype, self.lanes), self.slot)
        if self.outer_dtype:
            b.store(identity(self.kind, self.outer_dtype, self.lanes), self.outer)
        if self.nan is not None:
            b.store(ir.Constant(with_lanes(I1, self.lanes), 0), self.nan)

    def add(self, b: ir.IRBuilder, element: ir.Value, mask: ir.Value | None) -> None:
        element = convert(b, element, self.dtype, self.acc_dtype)
        if self.lanes:
            element = splat(b, element, self.lanes)
        if mask is not None:
            element = b.select(mask, element, identity(self.kind, self.acc_dtype, self.lanes))
        b.store(combine(b, self.kind, self.acc_dtype, b.load(self.slot), element, self.flags), self.slot)
        if self.nan is not None:
            b.store(b.or_(b.load(self.nan), b.fcmp_unordered("uno", element, element)), self.nan)

    def flush(self, b: ir.IRBuilder) -> None:
        """Adds the block's partial results into the outer ones and restarts the block."""
        wide = convert(b, b.load(self.slot), self.acc_dtype, self.outer_dtype)
        b.store(combine(b, self.kind, self.outer_dtype, b.load(self.outer), wide), self.outer)
        b.store(identity(self.kind, self.acc_dtype, self.lanes), self.slot)

    def result(self, b: ir.IRBuilder, across_lanes: bool) -> ir.Value:
        """The reduction: per lane, or (across_lanes) of all lanes together."""
        dtype = self.outer_dtype or self.acc_dtype
        total = b.load(self.outer if self.outer_dtype else self.slot)
        nan = b.load(self.nan) if self.nan is not None else None
        if across_lanes and self.lanes:
            total = horizontal(b, self.kind, dtype, total)
            if nan is not None:
                nan = horizontal(b, "amax", "i1", nan)
        if nan is not None:
            total = b.select(nan, ir.Constant(total.type, float("nan")), total)
        return convert(b, total, dtype, self.dtype)
