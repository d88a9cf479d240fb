"""Complex values below the aten level: (real, imag) pairs in a trailing dim of 2.

A complex tensor of dims S (c64, c128) is represented in prim as a real tensor of dims
S + [2] (f32, f64): torch.view_as_real's layout. Views of a complex tensor are the same
views of its pairs with the trailing 2 kept, and complex arithmetic is real arithmetic
on the two halves, so prim, fusion and both code generators see only reals.

A rule for an aten op with a complex operand or result lives in `COMPLEX_RULES` (the
ordinary `RULES` never see complex values). It reads each complex operand as pairs
(`pairs`) and returns each complex result as `complex_of(pairs)`: a
prim.view_as_complex, which has the aten result's declared type, so decompose's checks
and replacement work unchanged. A later complex rule looks through that view to the
pairs; what is left of it (a graph output, an operand of an op that stays aten) is the
boundary, run as a library call. A graph input or an eager fallback's complex result
enters through prim.view_as_real. An op with complex values and no rule (or whose rule
declines) stays aten and runs eagerly on complex tensors.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.ir import Operation, SSAValue

from strata.dialects import prim
from strata.dialects.aten import AtenOp
from strata.dialects.prim_complex import ViewAsComplexOp, ViewAsRealOp
from strata.dialects.types import COMPLEX_DTYPES, Dim, TensorType
from strata.passes.decompositions.builder import Decline, PrimBuilder, tensor_of
from strata.passes.decompositions.rules import Rule

COMPLEX_RULES: dict[str, Rule] = {}


def decomposes_complex(*overloads: str) -> Callable[[Rule], Rule]:
    """Registers a rule for each overload when it has complex operands or results."""

    def register(rule: Rule) -> Rule:
        for name in overloads:
            if name in COMPLEX_RULES:
                raise ValueError(f"two complex decomposition rules for {name}")
            COMPLEX_RULES[name] = rule
        return rule

    return register


def is_complex(v: SSAValue) -> bool:
    return isinstance(v.type, TensorType) and v.type.dtype in COMPLEX_DTYPES


def has_complex_values(op: Operation) -> bool:
    return any(is_complex(v) for v in (*op.operands, *op.results))


def part_dtype(t: TensorType) -> str:
    """The real dtype of a complex type's parts (f32 for c64, f64 for c128)."""
    if t.dtype not in COMPLEX_DTYPES:
        raise Decline(f"expected a complex tensor, got {t}")
    return COMPLEX_DTYPES[t.dtype]


# ---------------------------------------------------------------- the two forms
def pairs(b: PrimBuilder, v: SSAValue) -> SSAValue:
    """Complex value v as (real, imag) pairs [S, 2]."""
    if isinstance(v.owner, ViewAsComplexOp):
        return v.owner.x
    return b.add(ViewAsRealOp(v))


def complex_of(b: PrimBuilder, p: SSAValue) -> SSAValue:
    """Pairs [S, 2] as the complex value the aten op declares."""
    return b.add(ViewAsComplexOp(p))


def as_pairs(b: PrimBuilder, v: SSAValue, dtype: str) -> SSAValue:
    """Operand v, complex or real, as pairs of `dtype` (a real number r is r + 0i,
    as eager's promotion to a complex dtype makes it)."""
    if is_complex(v):
        return b.convert(pairs(b, v), dtype)
    x = b.convert(v, dtype)
    return pack(b, x, b.full(tensor_of(x).dims, 0, dtype))


def real_part(b: PrimBuilder, p: SSAValue) -> SSAValue:
    return _part(b, p, 0)


def imag_part(b: PrimBuilder, p: SSAValue) -> SSAValue:
    return _part(b, p, 1)


def _part(b: PrimBuilder, p: SSAValue, i: int) -> SSAValue:
    t = tensor_of(p)
    start: list[Dim] = [0] * t.rank
    limit: list[Dim] = list(t.dims)
    start[-1], limit[-1] = i, i + 1
    return b.reshape(b.add(prim.SliceOp(p, start, limit, [1] * t.rank)), t.dims[:-1])


def pack(b: PrimBuilder, re: SSAValue, im: SSAValue) -> SSAValue:
    """Pairs [S, 2] from the real and imaginary parts [S]: a select on the pair
    index, so that it fuses into the kernel that computes the parts."""
    dims = tensor_of(re).dims
    full = [*dims, 2]
    rank = len(dims)
    index = b.add(prim.BroadcastInDimOp(b.add(prim.IotaOp(2, 0, 1, "i64")), full, [rank]))
    first = b.ew("eq", index, b.full(full, 0, "i64"))
    spread = list(range(rank))
    return b.where(first, b.add(prim.BroadcastInDimOp(re, full, spread)), b.add(prim.BroadcastInDimOp(im, full, spread)))
