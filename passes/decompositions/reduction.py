"""Reductions → prim.sum / prod / amax / amin, with eager's result dtypes: integer and
bool sums and products give i64 unless a dtype is given, f16/bf16 accumulate in f32,
any/all read their input as bool and reduce it by sum (or) and prod (and). keepdim is
a reshape of the reduced result."""

from __future__ import annotations

from collections.abc import Sequence

import sympy
from xdsl.ir import SSAValue

from strata.dialects.aten import AtenOp
from strata.dialects.types import is_float, numel, sym
from strata.passes.decompositions.builder import (
    Decline,
    PrimBuilder,
    accumulator,
    reduced_dims,
    tensor_of,
)
from strata.passes.decompositions.rules import decomposes


def _dims(b: PrimBuilder) -> list[int]:
    """The reduced dims; `dim` is an int in .dim_int/.dim overloads, a list elsewhere."""
    dim = b.arg("dim")
    return reduced_dims([dim] if isinstance(dim, int) else dim, tensor_of(b.arg("self")).rank)


def _accumulate(b: PrimBuilder, kind: str) -> SSAValue:
    """x converted to the result dtype (eager converts first), reduced in its
    accumulator, converted back and shaped as the declared result (keepdim)."""
    out = b.out()
    x = b.convert(b.arg("self"), out.dtype)
    v = b.reduce(kind, b.convert(x, accumulator(out.dtype)), _dims(b))
    return b.reshape(b.convert(v, out.dtype), out.dims)


@decomposes("aten::sum.dim_IntList", "aten::sum")
def sum_(op: AtenOp, b: PrimBuilder) -> SSAValue:
    return _accumulate(b, "sum")


@decomposes("aten::prod", "aten::prod.dim_int")
def prod(op: AtenOp, b: PrimBuilder) -> SSAValue:
    return _accumulate(b, "prod")


@decomposes("aten::amax", "aten::amin", "aten::max", "aten::min")
def extremum(op: AtenOp, b: PrimBuilder) -> SSAValue:
    # aten::max and aten::min (no dim) reduce everything, as amax and amin with dim=[].
    kind = {"max": "amax", "min": "amin"}.get(op.overload_name.removeprefix("aten::"))
    kind = kind or op.overload_name.removeprefix("aten::")
    return b.reshape(b.reduce(kind, b.arg("self"), _dims(b)), b.out().dims)


@decomposes("aten::any", "aten::any.dim", "aten::any.dims", "aten::all", "aten::all.dim", "aten::all.dims")
def any_all(op: AtenOp, b: PrimBuilder) -> SSAValue:
    if b.out().dtype != "i1":
        raise Decline("any/all of u8 give u8")
    # On bools a sum is "or" and a product "and"; unlike amax and amin (which eager
    # refuses over an empty dim), they have identities there: any of nothing is False,
    # all of nothing True, as in eager.
    kind = "sum" if op.overload_name.startswith("aten::any") else "prod"
    # Unlike the other reductions, any.dims and all.dims reduce nothing over dim=[].
    dims = [] if b.arg("dim") == [] else _dims(b)
    v = b.reduce(kind, b.convert(b.arg("self"), "i1"), dims)
    return b.reshape(v, b.out().dims)


def _count(b: PrimBuilder, like: SSAValue, dims: Sequence[int], correction: int | float = 0) -> SSAValue:
    """max(0, N - correction) for the N elements that `dims` of self hold, as a
    tensor like `like`; N may be symbolic."""
    n = numel(tensor_of(b.arg("self")).dims[d] for d in dims)
    if isinstance(correction, float) and correction.is_integer():
        correction = int(correction)
    if isinstance(n, int):
        return b.constant_like(like, max(0, n - correction))
    return b.constant_like(like, sympy.Max(0, sym(n - correction)))


def _mean(b: PrimBuilder, x: SSAValue, dims: Sequence[int]) -> SSAValue:
    s = b.reduce("sum", x, dims)
    return b.ew("div", s, _count(b, s, dims))


@decomposes("aten::mean", "aten::mean.dim")
def mean(op: AtenOp, b: PrimBuilder) -> SSAValue:
    out = b.out()
    if not is_float(out.dtype):
        raise Decline("mean of integers is an error in eager")
    x = b.convert(b.convert(b.arg("self"), out.dtype), accumulator(out.dtype))
    return b.reshape(b.convert(_mean(b, x, _dims(b)), out.dtype), out.dims)


@decomposes("aten::var.correction", "aten::var.dim", "aten::var_mean.correction")
def var(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    x = b.arg("self")
    t = tensor_of(x)
    if not is_float(t.dtype):
        raise Decline("var of integers is an error in eager")
    if op.overload_name == "aten::var.dim":
        correction = 1 if b.arg("unbiased") else 0
    else:
        correction = 1 if b.arg("correction") is None else b.arg("correction")
    if not isinstance(correction, int | float):
        raise Decline(f"a symbolic correction {correction}")
    dims = _dims(b)
    v = b.convert(x, accumulator(t.dtype))
    m = _mean(b, v, dims)
    diff = b.ew("sub", v, b.unreduce(m, t.dims, dims))
    squares = b.reduce("sum", b.ew("mul", diff, diff), dims)
    variance = b.ew("div", squares, _count(b, squares, dims, correction))
    results = [variance, m][: len(op.results)]
    return [b.reshape(b.convert(r, b.out(i).dtype), b.out(i).dims) for i, r in enumerate(results)]
