"""logcumsumexp → a scan of elementwise steps: log2(n) rounds of Hillis and Steele's
inclusive scan, each combining every element with the one 2^j before it (a gather
along the dim) by ATen's _log_add_exp_helper.

Eager scans each line in order, accumulating in f32 for f16/bf16 (acc_type) and
rounding each output once; so do we, combining in another (associative) order.
_log_add_exp_helper(x, y): NaN if either is; x where both are the same infinity
(log1p(exp(inf - inf)) would be NaN); else log1p(exp(min - max)) + max.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from strata.dialects.types import is_float
from strata.dialects.aten import AtenOp
from strata.passes.decompositions.builder import Decline, PrimBuilder, accumulator, tensor_of, wrap_dim
from strata.passes.decompositions.indexing import positions, read_at
from strata.passes.decompositions.rules import decomposes


def log_add_exp(b: PrimBuilder, x: SSAValue, y: SSAValue) -> SSAValue:
    """ATen's _log_add_exp_helper (aten/src/ATen/native/ReduceOpsUtils.h's kin in
    cpu/ReduceOpsKernel.cpp): maximum and minimum propagate NaN, as its isnan checks do."""
    lo, hi = b.ew("minimum", x, y), b.ew("maximum", x, y)
    r = b.ew("add", b.ew("log1p", b.ew("exp", b.ew("sub", lo, hi))), hi)
    same_infinity = b.ew("logical_and", b.ew("eq", lo, hi), b.ew("isinf", lo))
    return b.where(same_infinity, x, r)


@decomposes("aten::logcumsumexp")
def logcumsumexp(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x = b.arg("self")
    t, out = tensor_of(x), b.out()
    if not is_float(t.dtype):
        raise Decline("logcumsumexp of integers is an error in eager")
    if t.rank == 0:
        return x  # one element: itself
    d = wrap_dim(b.arg("dim"), t.rank)
    n = t.dims[d]
    if not isinstance(n, int):
        raise Decline(f"a scan over the symbolic dim {n}")
    if n <= 1 or any(s == 0 for s in t.dims):
        return b.convert(x, out.dtype)
    y = b.convert(x, accumulator(t.dtype))
    dims = list(t.dims)
    p = positions(b, dims, d)
    shift = 1
    while shift < n:
        earlier = read_at(b, y, {d: b.ew("maximum", b.ew("sub", p, b.constant_like(p, shift)), b.constant_like(p, 0))}, dims)
        # The element is x, the running sum y, in _log_add_exp_helper(x, y)'s roles.
        combined = log_add_exp(b, y, earlier)
        y = b.where(b.ew("ge", p, b.constant_like(p, shift)), combined, y)
        shift *= 2
    return b.convert(y, out.dtype)
