"""Scatters into a graph's input stored by the kernel that computes their values.

A decode step writes its new keys and values into the KV cache at `input_pos`
(`cache[:, :, pos] = k`): AOTAutograd hands the backend a functional graph, in which
that is a `prim.scatter` of the new rows into the cache argument, a library call. The
rows come out of a kernel (the rotary embedding's, the value projection's), so each
layer paid two more launches, each moving a few KiB.

Here such a scatter becomes an output of the kernel that computes its rows: where that
kernel holds each element of `src`, it also stores it into the scatter's result at the
element's position along `dim`, which it loads from the index (a data-dependent
`kernel.store`). The launch marks that output as updating the destination operand
(UPDATES_ATTR): it starts as the destination's elements, so the program means what the
scatter meant; the runtime writes into the destination's own memory where no one else
can see it change (runtime/in_place.py), and copies it first otherwise.

A scatter folds into kernel K when:
  - it overwrites (reduce "none"), and its index has src's shape;
  - its destination is a graph argument (what can be written in place);
  - its index went through prim.check_index against the size of the dim it stores
    along (a position out of range raised before any store: kernels do not check the
    positions they store at);
  - K is a generated kernel (no matrix-product template) whose points (its domain, or a
    reduction's kept dims) are as many as src's elements, and each element of src and
    of the index is, at the point that corresponds to it in row-major order, either a
    value K computes there or one ready before K runs;
  - K computes src's values, or else it is the latest such kernel scheduled before the
    scatter (src a slice of a longer value, ready earlier: any kernel of as many points
    can store it).
Only on a GPU: the CPU's code generator has no data-dependent store.
"""

from __future__ import annotations

import sympy
from xdsl.ir import BlockArgument, Operation, SSAValue

from strata.dialects import prim
from strata.dialects.attributes import CONVOLUTION_ATTR, DOT_ATTR
from strata.dialects.prim_indexing import CheckIndexOp, ScatterOp
from strata.dialects.types import numel, sym
from strata.passes.fusion.decisions import debug_enabled, describe_value, log
from strata.passes.fusion.indexing import Index, equal, reshape_index
from strata.passes.fusion.plan import VIEW_OPS, Kernel, Plan, dims_of, node_index, reads, same_index


def fold_scatters(plan: Plan) -> None:
    """Moves each foldable scatter of the schedule into the kernel computing its rows
    (`Kernel.scatters`, with the index of src each point of the kernel stores)."""
    ready = _ready(plan)
    for item in list(plan.schedule):
        if not isinstance(item, ScatterOp) or not _candidate(item):
            continue
        for k in _kernels_computing(plan, item.src) + _kernels_before(plan, item):
            index = _point_index(k, item)
            if index is not None and _fits(plan, k, item, index, ready):
                k.scatters.append((item, index))
                plan.schedule.remove(item)
                if debug_enabled():
                    log.debug("%s is stored by the kernel of its rows", describe_value(item.result))
                break
    for i, item in enumerate(plan.schedule):
        if isinstance(item, Kernel):
            item.position = i


def _candidate(op: ScatterOp) -> bool:
    if op.reduce.data != "none" or not isinstance(op.x, BlockArgument):
        return False
    if dims_of(op.index) != dims_of(op.src) or any(sym(d) == 0 for d in dims_of(op.src)):
        return False
    check = _under_views(op.index).owner
    if not isinstance(check, CheckIndexOp):
        return False
    # checked against the size of the dim it stores along (a full of that value)
    size = _under_views(check.size).owner
    extent = sym(dims_of(op.x)[op.dim.value.data])
    return isinstance(size, prim.FullOp) and extent.is_Integer and size.scalar == int(extent)


def _under_views(v: SSAValue) -> SSAValue:
    while isinstance(v.owner, VIEW_OPS):
        v = v.owner.operands[0]
    return v


def _ready(plan: Plan) -> dict[SSAValue, int]:
    """Schedule position after which each realized value is ready."""
    out: dict[SSAValue, int] = {}
    for i, item in enumerate(plan.schedule):
        if isinstance(item, Kernel):
            out.update((v, i) for v in item.nodes)
        else:
            out.update((r, i) for r in item.results)
    return out


def _kernels_computing(plan: Plan, v: SSAValue) -> list[Kernel]:
    """The kernels that compute the realized values under v (the first of them holds
    its elements, if any does)."""
    leaves: list = []
    reads(v, tuple(sym(f"x{i}") for i in range(len(dims_of(v)))), plan.realized, leaves)
    out = []
    for value, _ in leaves:
        k = plan.kernel_of.get(value)
        if k is not None and k not in out:
            out.append(k)
    return out


def _kernels_before(plan: Plan, op: ScatterOp) -> list[Kernel]:
    """The kernels scheduled before op, the latest first: where no kernel computing
    src can store it (src a slice of a longer value: the v of sibling products merged,
    passes/row_product_siblings.py), one of as many points that runs once src is ready
    can, and saves the scatter's own launch."""
    at = plan.schedule.index(op)
    return [k for k in reversed(plan.schedule[:at]) if isinstance(k, Kernel)]


def _point_index(k: Kernel, op: ScatterOp) -> Index | None:
    """The index of src at each point of k: where src is views of a value k computes,
    the element of src that value's element at the point becomes; else the point's
    row-major counterpart, if k has as many points as src has elements. None if
    neither, or if k is a template."""
    if any(DOT_ATTR in n.owner.attributes or CONVOLUTION_ATTR in n.owner.attributes for n in k.nodes):
        return None
    d = k.domain
    shape, point = (d.kept, d.kept_index()) if d.reduced else (d.full, d.full_index())
    src = dims_of(op.src)
    through = _through_views(op.src, k)
    if through is not None:
        root, chain = through
        index = point if dims_of(root) == tuple(shape) else d.index_for(dims_of(root))
        for view in chain:
            index = _forward(view, index) if index is not None else None
        if index is not None:
            return index
    if not equal(numel(shape), numel(src)):
        return None
    return reshape_index(point, shape, src)


def _extents(k: Kernel) -> dict[sympy.Symbol, int]:
    """The loop variables of k's domain with a static extent."""
    d = k.domain
    return {v: int(n) for v, n in zip(d.full_index(), d.full) if isinstance(v, sympy.Symbol) and sym(n).is_Integer}


def within(e: sympy.Expr, extents: dict[sympy.Symbol, int]) -> sympy.Expr:
    """e with `floor(v / c)` as 0 and `Mod(v, c)` as v for each loop variable v whose
    extent is at most c: a dim split by one reshape and read back through another (a
    rotary embedding's [.., 8, 2] pairs stored as [.., 16]) leaves those in indices."""
    def fold(a: sympy.Expr) -> sympy.Expr:
        if isinstance(a, sympy.floor):
            v, c = a.args[0].as_numer_denom()
            if v in extents and c.is_Integer and extents[v] <= c:
                return sympy.Integer(0)
        if isinstance(a, sympy.Mod):
            v, c = a.args
            if v in extents and c.is_Integer and extents[v] <= c:
                return v
        return a

    return sympy.expand(e.replace(lambda a: isinstance(a, (sympy.floor, sympy.Mod)), fold))


def _through_views(v: SSAValue, k: Kernel) -> tuple[SSAValue, list[Operation]] | None:
    """The value of k that v is views (or conversions) of, and those ops from it up."""
    chain = []
    while v not in k.nodes:
        op = v.owner
        if not isinstance(op, (*VIEW_OPS, prim.ConvertElementTypeOp)):
            return None
        chain.append(op)
        v = op.operands[0]
    return v, chain[::-1]


def _forward(op: Operation, index: Index) -> Index | None:
    """The index in op's result of its operand's element at `index` (None where that
    is not one element: a broadcast that repeats it)."""
    if isinstance(op, prim.ConvertElementTypeOp):
        return index
    if isinstance(op, prim.PermuteOp):
        return tuple(index[p] for p in prim.ints_of(op.dims))
    if isinstance(op, prim.ReshapeOp):
        return reshape_index(index, dims_of(op.operands[0]), dims_of(op.results[0]))
    if isinstance(op, prim.BroadcastInDimOp):
        kept = prim.ints_of(op.broadcast_dimensions)
        result, operand = dims_of(op.results[0]), dims_of(op.operands[0])
        if any(sym(result[b]) != sym(operand[i]) for i, b in enumerate(kept)):
            return None
        if any(sym(n) != 1 for j, n in enumerate(result) if j not in kept):
            return None
        out = [sym(0)] * len(result)
        for i, b in enumerate(kept):
            out[b] = index[i]
        return tuple(out)
    return None


def _fits(plan: Plan, k: Kernel, op: ScatterOp, index: Index, ready: dict[SSAValue, int]) -> bool:
    """Whether k can compute src and the index at `index`: every realized value they
    read is one k computes at that point, or ready before k runs."""
    leaves: list = []
    reads(op.src, index, plan.realized, leaves)
    reads(op.index, index, plan.realized, leaves)
    extents = _extents(k)
    for value, idx in leaves:
        if plan.kernel_of.get(value) is k:
            natural = node_index(k.domain, value)
            if natural is None or not same_index(tuple(within(i, extents) for i in idx), natural):
                return False
        elif isinstance(value, BlockArgument):
            continue
        elif not isinstance(value.owner, Operation) or ready.get(value, len(plan.schedule)) >= k.position:
            return False
    return True
