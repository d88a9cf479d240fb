"""A select between loads, as one load through a selected pointer.

A cat fused into the kernel that reads it (passes/decompositions/shape.py
`_cat_as_reads`) selects, at each point, one of several loads: `where(c1, a[i],
where(c2, b[j], c[k]))`. Masking each load (codegen/triton_guards.py) keeps the others
from fetching memory, but each still costs its instructions at every point, and a
matrix-vector product over weights side by side (passes/row_product_siblings.py)
streams its weights through them: measured on an H200, the q/k/v product of a decode
step took 6.7 µs with three masked loads and 5.2 µs with one load through
`tl.where(c1, a + i, tl.where(c2, b + j, c + k))` (docs/performance-history.md).

A *selected load* is a `where` tree whose leaves are loads (each maybe converted, all
to one dtype) of one element type, each read by nothing but the tree, and whose inner
`where`s are read by nothing else either. It is emitted at its root: the pointers
selected by the same conditions, one load, one conversion; its leaves and inner
`where`s are not emitted at all.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.ir import Operation, SSAValue

from strata.dialects import kernel
from strata.dialects.prim import ConvertElementTypeOp, WhereOp


@dataclass
class Leaf:
    load: kernel.LoadOp
    convert: ConvertElementTypeOp | None


@dataclass
class Node:
    cond: SSAValue
    a: Node | Leaf
    b: Node | Leaf


@dataclass
class SelectedLoad:
    tree: Node
    leaves: list[Leaf]
    folded: set[Operation]  # the leaves' loads and conversions, the inner wheres


def selected_loads(live: list[Operation]) -> dict[WhereOp, SelectedLoad]:
    """Each root `where` of a selected load in `live`, with what it folds."""
    out: dict[WhereOp, SelectedLoad] = {}
    taken: set[Operation] = set()
    for op in reversed(live):  # roots before the wheres inside them
        if not isinstance(op, WhereOp) or op in taken:
            continue
        folded: set[Operation] = set()
        tree = _tree(op, folded)
        if not isinstance(tree, Node):
            continue
        leaves = _leaves(tree)
        if not _alike(leaves):
            continue
        out[op] = SelectedLoad(tree, leaves, folded)
        taken |= folded
    return out


def _tree(op: WhereOp, folded: set[Operation]) -> Node | None:
    branches = []
    for v in (op.a, op.b):
        branch = _branch(v, folded)
        if branch is None:
            return None
        branches.append(branch)
    if op.a is op.b:
        return None
    return Node(op.cond, *branches)


def _branch(v: SSAValue, folded: set[Operation]) -> Node | Leaf | None:
    if not v.has_one_use():
        return None
    owner = v.owner
    if isinstance(owner, WhereOp):
        inner = _tree(owner, folded)
        if inner is not None:
            folded.add(owner)
        return inner
    convert = None
    if isinstance(owner, ConvertElementTypeOp) and owner.x.has_one_use():
        convert, owner = owner, owner.x.owner
    if isinstance(owner, kernel.LoadOp):
        folded.add(owner)
        if convert is not None:
            folded.add(convert)
        return Leaf(owner, convert)
    return None


def _leaves(t: Node | Leaf) -> list[Leaf]:
    return [t] if isinstance(t, Leaf) else _leaves(t.a) + _leaves(t.b)


def _alike(leaves: list[Leaf]) -> bool:
    """One element type, and one conversion (or none) for all."""
    elements = {leaf.load.buffer.type.element for leaf in leaves}
    converts = {None if leaf.convert is None else leaf.convert.results[0].type for leaf in leaves}
    return len(elements) == 1 and len(converts) == 1
