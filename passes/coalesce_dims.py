"""coalesce-dims: a kernel's adjacent loop dims merged where every access walks them as one.

Fusion gives a kernel the domain of the tensor it computes: a ResNet activation's
[n, c, h, w] is [8, 64, 28, 28]. Where every index of the kernel (loads, stores,
`kernel.index`) reads the pair (h, w) only as `s·(28·h + w)` for some stride s (true of
NCHW and of NHWC alike), the pair is one loop of 784: x2 ranges over h·28 + w and the
indices read `s·x2`. A back end then vectorizes and tiles a dim of 784 (49 tiles of 16)
instead of one of 28 (a whole tile and a masked or overlapping one, every row), and
computes one index term instead of two. A dim of static extent 1 that no index names
(fusion writes its variable as 0) is dropped, unless it is its domain's last.

The rule, for dims i and i + 1 of one domain (pointwise x…, or reduction r…) with
extents n_i and n_{i+1}: every index e is affine in both variables, with coefficients
free of loop variables, and coeff(e, v_i) = n_{i+1}·coeff(e, v_{i+1}). Then
e = rest + c·(n_{i+1}·v_i + v_{i+1}), and v_i·n_{i+1} + v_{i+1} walks 0 … n_i·n_{i+1} − 1
in the same order as the pair: each access touches the same elements, and a reduction
meets them in the same order. Pairs are tried from the innermost out, so a run of
mergeable dims becomes one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sympy
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.passes import ModulePass

from strata.dialects import kernel as kd
from strata.dialects.kernel import stride_along
from strata.dialects.prim import dims_attr
from strata.dialects.types import Dim, sym

_LOOP_VAR = re.compile(r"^[xrv]\d+$")


@dataclass(frozen=True)
class CoalesceDimsPass(ModulePass):
    name = "coalesce-dims"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in [o for o in op.ops if isinstance(o, kd.FuncOp)]:
            coalesce_dims(fn)


def coalesce_dims(fn: kd.FuncOp) -> bool:
    """Rewrites `fn`'s domain and indices in place; whether anything changed."""
    ops = [op for op in fn.block.ops if isinstance(op, kd.IndexedOp)]
    exprs = [op.index_expr for op in ops]
    pointwise, exprs_after = _coalesce("x", list(fn.pointwise_dims), exprs)
    reduction, exprs_after = _coalesce("r", list(fn.reduction_dims), exprs_after)
    if len(pointwise) == len(fn.pointwise_dims) and len(reduction) == len(fn.reduction_dims):
        return False
    fn.properties["pointwise"] = dims_attr(pointwise)
    fn.properties["reduction"] = dims_attr(reduction)
    for op, e in zip(ops, exprs_after):
        op.properties["index"] = StringAttr(sympy.sstr(e))
    return True


def _coalesce(prefix: str, dims: list[Dim], exprs: list[sympy.Expr]) -> tuple[list[Dim], list[sympy.Expr]]:
    def var(i: int) -> sympy.Symbol:
        return sym(f"{prefix}{i}")

    # A domain keeps one dim: a kernel with a reduction domain reduces over something.
    for i in reversed(range(len(dims))):
        if len(dims) > 1 and sym(dims[i]) == 1 and all(var(i) not in e.free_symbols for e in exprs):
            exprs = [_renumber(e, var, i + 1, len(dims)) for e in exprs]
            del dims[i]
    i = len(dims) - 2
    while i >= 0:
        merged = [_merge(e, var(i), var(i + 1), sym(dims[i + 1])) for e in exprs]
        if all(m is not None for m in merged):
            exprs = [_renumber(m, var, i + 1, len(dims)) for m in merged]
            dims[i : i + 2] = [_product(dims[i], dims[i + 1])]
        i -= 1
    return dims, exprs


def _merge(e: sympy.Expr, outer: sympy.Symbol, inner: sympy.Symbol, inner_extent: sympy.Expr) -> sympy.Expr | None:
    """e with `outer`·n + `inner` written as `outer` alone, or None where e does not
    read the pair that way."""
    if outer not in e.free_symbols and inner not in e.free_symbols:
        return e
    text = sympy.sstr(e)
    c_outer, c_inner = stride_along(text, outer.name), stride_along(text, inner.name)
    if c_outer is None or c_inner is None:
        return None  # not affine in the pair (under a floor or a Mod)
    if any(_LOOP_VAR.match(s.name) for c in (c_outer, c_inner) for s in c.free_symbols):
        return None  # a product of loop variables
    if sympy.expand(c_outer - inner_extent * c_inner) != 0:
        return None
    return sympy.expand(e - c_outer * outer - c_inner * inner) + c_inner * outer


def _renumber(e: sympy.Expr, var, first: int, count: int) -> sympy.Expr:
    """e with variables `first` … `count - 1` renamed one lower (dim `first - 1` merged
    into the one before it, or dropped)."""
    return e.xreplace({var(j): var(j - 1) for j in range(first, count)})


def _product(a: Dim, b: Dim) -> Dim:
    p = sympy.expand(sym(a) * sym(b))
    return int(p) if p.is_Integer else p
