"""aten::dist → prim: the p-norm of a difference, as ATen computes it,
`at::norm(self - other, p)`: the difference in the promoted dtype (rounded there, as
eager stores it), then linalg_vector_norm over every element (passes/decompositions/
norms.py has the per-order formulas, reproduced here for a whole-tensor reduction):
f16/bf16 accumulate in f32, and a single element is eager's special case |x|."""

from __future__ import annotations

import math

from xdsl.ir import SSAValue
from xdsl.utils.exceptions import VerifyException

from strata.dialects.aten import AtenOp
from strata.dialects.prim_linalg_solve import broadcast_batch
from strata.dialects.types import is_float, sym
from strata.passes.decompositions.builder import Decline, PrimBuilder, promote, tensor_of
from strata.passes.decompositions.norms import p_norm
from strata.passes.decompositions.rules import decomposes


@decomposes("aten::dist")
def dist(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x, y, out = b.arg("self"), b.arg("other"), b.out()
    p = b.arg("p")
    p = 2.0 if p is None else p
    if isinstance(p, bool) or not isinstance(p, int | float) or math.isnan(p):
        raise Decline(f"dist with p={p!r}")
    p = float(p)
    compute, result = promote("DEFAULT", x, y)
    if not is_float(result) or result != out.dtype or out.rank != 0:
        raise Decline(f"dist of {tensor_of(x)} and {tensor_of(y)} into {out}")
    try:
        dims = broadcast_batch("aten.dist", tensor_of(x).dims, tensor_of(y).dims)
    except VerifyException as e:
        raise Decline(str(e)) from None
    sizes = [sym(d) for d in dims]
    if any(not s.is_Integer for s in sizes):
        raise Decline("cannot tell whether the difference has one element")
    if any(s == 0 for s in sizes) and (p < 0 or math.isinf(p)):
        raise Decline(f"the {p} norm of an empty tensor is an error in eager")

    def operand(v: SSAValue) -> SSAValue:
        return b.broadcast(b.convert(b.convert(v, result), compute), dims)

    diff = b.convert(b.ew("sub", operand(x), operand(y)), result)  # eager's stored difference
    if all(s == 1 for s in sizes):  # linalg_vector_norm's special case for one element
        v = b.ew("ne", diff, b.constant_like(diff, 0)) if p == 0 else b.ew("abs", diff)
        return b.reshape(b.convert(v, result), [])

    return b.reshape(b.convert(p_norm(b, diff, p, list(range(len(dims))), result), result), [])
