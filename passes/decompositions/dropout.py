"""Dropout. In eval mode, or with p = 0, it draws no random numbers: the output is the
input and the mask all true. In training mode an element is kept where a uniform
draws above p (random.py), as torch's reference decomposition says, and the output
is input * mask * 1/(1 - p) computed in the input's computation dtype; with p = 1
nothing is kept. The mask is a result of the forward graph, which AOTAutograd saves
for the backward: both use the same draws."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue

from strata.dialects.aten import AtenOp
from strata.dialects.types import is_float
from strata.passes.decompositions.builder import Decline, PrimBuilder, accumulator
from strata.passes.decompositions.random import uniform
from strata.passes.decompositions.rules import decomposes


@decomposes("aten::native_dropout")
def native_dropout(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    x, p, mask = b.arg("input"), b.arg("p"), b.out(1)
    if b.arg("train") is False or p == 0:
        return [x, b.full(mask.dims, True, mask.dtype)]
    out = b.out()
    if not is_float(out.dtype):
        raise Decline(f"dropout of dtype {out.dtype}")  # eager refuses it, with its own message
    if not isinstance(p, int | float) or not 0 < p <= 1:
        raise Decline(f"dropout probability {p}")
    if p == 1:
        return [b.full(out.dims, 0, out.dtype), b.full(mask.dims, False, mask.dtype)]
    u = uniform(b, out.dims)
    keep = b.ew("gt", u, b.constant_like(u, float(p)))
    compute = accumulator(out.dtype)
    kept = b.ew("mul", b.convert(x, compute), b.convert(keep, compute))
    scaled = b.ew("mul", kept, b.full(out.dims, 1.0 / (1.0 - p), compute))
    return [b.convert(scaled, out.dtype), keep]
