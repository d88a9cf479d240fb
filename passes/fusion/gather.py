"""prim.gather inside a kernel: a load at a position read from another tensor.

The element of `result[p]` is `x[p with p[dim] := index[p]]`. Computing it at a point
reads index[p] (inline, like any operand: it may itself be computed, or gathered),
converts it to i64 and clamps it into [0, size of the dim), so that the load never
leaves x's buffer whatever the index holds. An index a user gave comes through
prim.check_index (the decompositions put it there): inside the kernel it stays a
prim.check_index on scalars, which the back end checks (the launch raises, as eager
does) and whose result is within the dim already, so the gather does not clamp it
again; with the `index_bounds_checks` option off it becomes the wrap of a negative
index alone, and the clamp reads the nearest element. The clamped value is bound to a
fresh symbol (`g0`, `g1`, … per kernel), which stands for the gathered dim in x's element
index; walking x's views maps it like any index, and the `kernel.load` that ends the
walk names it: the load is then data-dependent (`kernel.load %x[...](%i : i64)`, with
the symbol renamed to `v0`).

x itself is realized (plan.py): a gather reads it at positions no kernel could compute
in step with the gather. Except where the positions are computed from iotas alone (a
cat of a few operands, passes/decompositions/shape.py) and x is elementwise ops over
stored values: then the gathering kernel computes x at the gathered position, each
leaf a data-dependent load, and the cat's operands never go through memory. Along a
dim of size 1 (a stack's operands) the position is 0 whatever the index: a plain load.
"""

from __future__ import annotations

import sympy
from xdsl.ir import SSAValue

from strata.dialects import kernel as kd
from strata.dialects import prim
from strata.dialects.prim_indexing import CheckIndexOp, GatherOp
from strata.dialects.types import sym
from strata.passes.fusion.indexing import Index
from strata.passes.fusion.plan import view_root
from strata.passes.provenance import source_of

# The placeholder the planner puts at a gathered dim: no loop variable equals it.
PLACEHOLDER = sympy.Symbol("gathered", integer=True, nonnegative=True)


def gather_operand_indices(op: GatherOp, index: Index) -> list[Index]:
    """Where a gather reads x and index to compute its element at `index` (the
    planner's view: x at a position it cannot know)."""
    at = list(index)
    if at:
        at[op.axis] = PLACEHOLDER
    return [tuple(at), index]


def gather_at(builder, op: GatherOp, index: Index) -> SSAValue:
    """The scalar of `op` at `index`, in x's compute dtype (builder: a KernelBuilder)."""
    if not index:  # a 0-d gather reads the only element
        return builder.value_at(op.x, index)
    if sym(op.x.type.dims[op.axis]) == 1 and not isinstance(view_root(op.index).owner, CheckIndexOp):
        # the clamp sends any position to the one element (a stack's operands, read
        # by a cat): a plain load, not a data-dependent one
        at = list(index)
        at[op.axis] = sympy.Integer(0)
        return builder.value_at(op.x, tuple(at))
    i = builder.convert(builder.value_at(op.index, index), "i64")
    if not isinstance(i.owner, CheckIndexOp):  # a checked index is within the dim already
        size = prim.dims_of(prim.dims_attr([op.x.type.dims[op.axis]]))[0]
        low = builder.constant(0, "i64")
        last = sym(size) - 1
        high = builder.constant(int(last), "i64") if last.is_Integer else builder.add(kd.IndexOp(last))
        i = builder.add(prim.ELEMENTWISE_OPS["maximum"](builder.add(prim.ELEMENTWISE_OPS["minimum"](i, high)), low))
    dynamic = builder.__dict__.setdefault("dynamic", {})
    name = f"g{len(dynamic)}"
    dynamic[name] = i
    at = list(index)
    at[op.axis] = sympy.Symbol(name, integer=True, nonnegative=True)
    return builder.value_at(op.x, tuple(at))


def check_index_at(builder, op: CheckIndexOp, index: SSAValue, size: SSAValue) -> SSAValue:
    """The scalar of `op` from its operands' scalars: checked by the back end (the op
    names the aten op and the user's line, for the error), or, with the checks off,
    only wrapped where a negative index counts from the end."""
    if builder.index_bounds_checks:
        source = source_of(op)
        where = str(source) if source is not None else op.indexing_op.data
        return builder.add(CheckIndexOp(index, size, op.dim.value.data, op.wraps_negative, where))
    if not op.wraps_negative:
        return index
    negative = builder.add(prim.ELEMENTWISE_OPS["lt"](index, builder.constant(0, "i64")))
    return builder.add(prim.WhereOp(negative, builder.add(prim.ELEMENTWISE_OPS["add"](index, size)), index))


def load_op(builder, buffer: SSAValue, index: sympy.Expr) -> kd.LoadOp:
    """A kernel.load at `index`; data-dependent when the index names gathered values."""
    dynamic = builder.__dict__.get("dynamic") or {}
    names = sorted((s.name for s in index.free_symbols if s.name in dynamic), key=lambda n: int(n[1:]))
    if not names:
        return kd.LoadOp(buffer, index)
    renamed = {s: sympy.Symbol(f"v{names.index(s.name)}", integer=True) for s in index.free_symbols if s.name in dynamic}
    return kd.LoadOp(buffer, unsplit(index.xreplace(renamed)), [dynamic[n] for n in names])


def unsplit(index: sympy.Expr) -> sympy.Expr:
    """`index` with each c·(n·floor(v/n) + Mod(v, n)) written c·v: a gathered position
    split by a view into two dims that the buffer lays out as one (a convolution's
    flat h·w position in an NCHW or NHWC tensor, a pad's), read without dividing."""
    expanded = sympy.expand(index)
    for mod in sorted(expanded.atoms(sympy.Mod), key=sympy.default_sort_key):
        v, n = mod.args
        whole = sympy.floor(v / n)
        c_mod, c_whole = expanded.coeff(mod), expanded.coeff(whole)
        if c_mod != 0 and sympy.expand(c_whole - c_mod * n) == 0:
            expanded = sympy.expand(expanded - c_mod * mod - c_whole * whole + c_mod * v)
    return expanded
