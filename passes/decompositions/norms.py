"""Vector norms → prim reductions, as eager's CPU kernel (ATen's norm_stub) computes
them: the input converted to the result dtype (the `dtype` argument, else the
input's), f16/bf16 accumulated in f32, then

    ord 0: count of nonzeros (NaN counts)     ord 1: sum |x|
    ord 2: sqrt(sum x·x)                      ord ±inf: amax / amin of |x| (NaN wins)
    other p: (sum |x|^p)^(1/p), 1/p computed in the accumulator dtype.

A reduction over dims that all have size 1 (or a 0-d input) is eager's special case:
|x| (x != 0 for ord 0), without squaring and rooting, which would round or overflow.
linalg.norm, linalg.matrix_norm ('fro', and the ±1/±inf norms' inner step) and
torch.norm reach this through aten::linalg_vector_norm.
"""

from __future__ import annotations

import math

import torch
from xdsl.ir import SSAValue

from strata.dialects.aten import AtenOp
from strata.dialects.types import DTYPES, is_float, sym
from strata.passes.decompositions.builder import Decline, PrimBuilder, accumulator, reduced_dims, tensor_of
from strata.passes.decompositions.rules import decomposes


@decomposes("aten::linalg_vector_norm")
def linalg_vector_norm(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x = b.arg("self")
    t, out = tensor_of(x), b.out()
    if not is_float(t.dtype) or not is_float(out.dtype):
        raise Decline("vector_norm of a non-floating tensor is an error in eager")
    ord_ = b.arg("ord")
    if isinstance(ord_, bool) or not isinstance(ord_, int | float):
        raise Decline(f"a symbolic norm order {ord_}")
    p = float(ord_)
    if math.isnan(p):
        raise Decline("a NaN norm order")
    dim = b.arg("dim")
    dims = reduced_dims([dim] if isinstance(dim, int) else dim, t.rank)
    x = b.convert(x, out.dtype)  # eager converts to the `dtype` argument first

    sizes = [sym(t.dims[d]) for d in dims]
    if any(not s.is_Integer for s in sizes):
        raise Decline("cannot tell whether the reduced dims have size 1")
    if all(s == 1 for s in sizes):
        # eager's special case for a reduction over size-1 dims (and 0-d inputs)
        v = b.ew("ne", x, b.constant_like(x, 0)) if p == 0 else b.ew("abs", x)
        return b.reshape(b.convert(v, out.dtype), out.dims)
    if any(s == 0 for s in sizes) and (p < 0 or math.isinf(p)):
        raise Decline(f"the {p} norm over an empty dim is an error in eager")

    return b.reshape(b.convert(p_norm(b, x, p, dims, out.dtype), out.dtype), out.dims)


def p_norm(b: PrimBuilder, x: SSAValue, p: float, dims: list[int], dtype: str) -> SSAValue:
    """The p-norm of x over dims, in the accumulator dtype of `dtype` (ATen's NormOps)."""
    acc = accumulator(dtype)
    v = b.convert(x, acc)
    if p == 0:
        nonzero = b.convert(b.ew("ne", v, b.constant_like(v, 0)), acc)
        return b.reduce("sum", nonzero, dims)
    if p == 1:
        return b.reduce("sum", b.ew("abs", v), dims)
    if p == 2:
        return b.ew("sqrt", b.reduce("sum", b.ew("mul", v, v), dims))
    if math.isinf(p):
        return b.reduce("amax" if p > 0 else "amin", b.ew("abs", v), dims)
    # the order held in the accumulator dtype, its inverse too
    p_acc = torch.tensor(p, dtype=DTYPES[acc])
    inverse = (1 / p_acc).item()
    powered = b.ew("pow", b.ew("abs", v), b.constant_like(v, p_acc.item()))
    s = b.reduce("sum", powered, dims)
    return b.ew("pow", s, b.constant_like(s, inverse))
