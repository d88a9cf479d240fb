"""Where fusion computes a value that several ops read (passes/fusion/plan.py realizes
it: computed once, not once per reader): with the reader that needs it rather than
where the program reaches it (`deferred_nodes`), or, where its inputs are cheaper than
it, in each kernel that reads it (`cheaper_to_recompute`). Neither changes a bit of
any value (`_bits_depend_on_kernel`)."""

from __future__ import annotations

import sympy
from xdsl.ir import Operation, SSAValue

from strata.dialects import prim
from strata.dialects.attributes import DOT_ATTR, NO_EPILOGUE_ATTR
from strata.dialects.types import TensorType, sym
from strata.passes.fusion.plan import (
    Plan,
    _inline_leaves,
    _itemsize,
    dims_of,
    is_extern,
    is_inline,
    is_reduction,
    node_reads,
    readers,
    view_root,
)

# Rounds of cheaper_to_recompute: each may free values the last one's plan stored.
RECOMPUTE_ROUNDS = 3
SIXTEEN_BIT = ("bf16", "f16")
ELEMENTWISE = (prim.ElementwiseOp, prim.WhereOp, prim.ConvertElementTypeOp)


def deferred_nodes(ops: list[Operation], realized: set[SSAValue], outputs: list[SSAValue]) -> set[SSAValue]:
    """Nodes placed when their first reader is, not where they stand in the program:
    elementwise values realized only because several elementwise ops read them.

    Greedy placement puts a node in the latest kernel it fits when the program reaches
    it. A backward graph recomputes a layer's activation (a GELU's tanh, read twice by
    its derivative) long before the matrix product that makes the gradient its
    derivative multiplies: placed there, it joined the previous layer's kernel, which
    stored it in f32 for the next kernel to load back, 16 bytes an element where the
    next kernel already loads the bf16 input it is computed from. Placed with its
    first reader, it is computed in the kernel that reads it and never stored.
    Only where computing it reads no more bytes than storing and loading it back
    (its inputs' bytes an element, _input_bytes, ≤ twice its own), so moving its loads
    to another kernel never costs more than the round trip it saves, and where its bits
    do not depend on the kernel (_bits_depend_on_kernel)."""
    kept = {view_root(v) for v in outputs}
    out: set[SSAValue] = set()
    for op in ops:
        if not op.results or op.results[0] not in realized or op.results[0] in kept or not _movable(op.results[0]):
            continue
        v = op.results[0]
        if not all(isinstance(r, ELEMENTWISE) and DOT_ATTR not in r.attributes for r in readers(v)):
            continue
        leaves = _inline_inputs(v, realized)
        if leaves is not None and not _bits_depend_on_kernel(v, leaves) and _input_bytes(v, leaves) <= 2 * _itemsize(v):
            out.add(v)
    return out


def cheaper_to_recompute(plan: Plan, outputs: list[SSAValue]) -> set[SSAValue]:
    """Nodes realized only because several ops read them, stored because kernels other
    than their own read them, that each reader is better off computing: elementwise
    math in a dtype a store would not round (f32, f64, integers), over inputs that take
    no more bytes an element than the value (an input broadcast along dims counts in
    proportion: a norm's mean and rstd per row cost nothing beside a row). Storing
    moves the value's bytes out and back in once per other kernel; recomputing, at most
    the inputs' bytes once per kernel (none where the kernel loads them already). A
    LayerNorm's backward stored its normalized input and two products of the gradient
    in f32 for the kernel of the weight's gradient, 24 bytes an element written and
    read back where recomputing them reads 6."""
    other_readers: dict[SSAValue, set[int]] = {}  # value -> the other kernels reading it
    for v, k in plan.kernel_of.items():
        for value, _ in node_reads(v, k.domain, plan.realized):
            if plan.kernel_of.get(value) not in (None, k):
                other_readers.setdefault(value, set()).add(k.position)
    kept = {plan.source_of(v) for v in outputs}
    for item in plan.schedule:
        if isinstance(item, Operation):
            kept.update(plan.source_of(v) for v in item.operands)
    out: set[SSAValue] = set()
    for v in other_readers.keys() - kept:
        if not _movable(v) or prim.OPMATH_ROUNDING in v.owner.attributes:
            continue
        if any(DOT_ATTR in r.attributes or not is_inline(r) and not is_reduction(r) for r in readers(v)):
            continue
        leaves = _inline_inputs(v, plan.realized)
        if leaves is None or _bits_depend_on_kernel(v, leaves):
            continue
        if _input_bytes(v, leaves) <= _itemsize(v) * (1 + 1 / len(other_readers[v])):
            out.add(v)
    return out


def _movable(v: SSAValue) -> bool:
    """Elementwise math, no part of a matrix product, in a dtype a store does not round
    (a 16-bit value is stored rounded but read unrounded in its own kernel)."""
    op = v.owner
    return (isinstance(op, ELEMENTWISE) and DOT_ATTR not in op.attributes and NO_EPILOGUE_ATTR not in op.attributes
            and v.type.dtype not in SIXTEEN_BIT)


def _bits_depend_on_kernel(v: SSAValue, leaves: list[SSAValue]) -> bool:
    """Whether v's bits may depend on the kernel that computes it: a product its own
    op's add may fuse with (_may_contract), or a value read from a 16-bit one that a
    kernel computes, which is stored rounded but read unrounded by the kernel that
    computes it (emulate_precision_casts off)."""
    return _may_contract(v) or any(
        isinstance(x.owner, Operation) and not is_extern(x.owner) and isinstance(x.type, TensorType)
        and x.type.dtype in SIXTEEN_BIT for x in leaves)


def _may_contract(v: SSAValue) -> bool:
    """Whether v is a float product that an add, subtract or sum of its own aten op
    reads: computed where that reader is, the two may become one fused multiply-add
    (passes/fusion/contraction.py), whose bits differ from those of the stored
    product."""
    op = v.owner
    if op.name != "prim.mul":
        return False
    source = op.attributes.get("strata.source")
    return source is not None and any(
        r.attributes.get("strata.source") == source and r.name in ("prim.add", "prim.sub", "prim.sum") for r in readers(v))


def _inline_inputs(v: SSAValue, realized: set[SSAValue]) -> list[SSAValue] | None:
    """What computing realized value v inline reads (_inline_leaves of its operands)."""
    leaves: list[SSAValue] = []
    for operand in v.owner.operands:
        more = _inline_leaves(operand, realized)
        if more is None:
            return None
        leaves += [x for x in more if x not in leaves]
    return leaves


def _input_bytes(v: SSAValue, leaves: list[SSAValue]) -> float:
    """Bytes an element of v reads to compute it inline from `leaves`: their itemsizes,
    each by its share (_share)."""
    return sum(_itemsize(x) * _share(x, v) for x in leaves if isinstance(x.type, TensorType))


def _share(x: SSAValue, v: SSAValue) -> float:
    """Elements of x per element of v (1 where unknown): a broadcast input's share."""
    ratio = sympy.Mul(*[sym(d) for d in dims_of(x)]) / sympy.Mul(*[sym(d) for d in dims_of(v)])
    return float(ratio) if ratio.is_number and ratio.is_finite else 1.0  # an empty v: 1
