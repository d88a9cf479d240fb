"""Sibling row products: the one-row products of one vector by weights of different
widths (a decode step's q, k and v projections) as one product over the weights
concatenated along n, each weight read in place, and each product a slice of it.

On a GPU each one-row product is a reduction kernel bound by its weight's bytes
(matvec-to-reduction). Products of one width share a kernel already (one domain), but
q (heads × head_dim wide) and k, v (kv_heads × head_dim) do not: each layer paid one
launch, and one kernel's fixed cost, more than its bytes need. Concatenated, they are
one reduction over one domain: each point of n reads the weight it falls in
(decompositions/shape.py `cat_as_reads`), and the GPU kernel's masks keep the other
weights' loads from fetching anything (codegen/triton_guards.py).

What is merged: products (prim.mm, no bias) of the same row `a`, whose weights are
graph arguments (or views of them: weights, ready before anything runs) of one dtype and
one static k, at most POINTWISE_CAT_OPERANDS at a time, and only a group whose widths
are not all equal. A product with an epilogue, an elementwise op reading all of it
(through views and conversions), stays out: in its own kernel that op is computed
where the sum is (SwiGLU's silu(w1·x) · w3·x, a GELU), and read from a slice of a longer
result it would be a kernel of its own. q and k are read by their rotary embedding at
pairs of positions, which never fuses into the product, and v by the KV cache's write.
"""

from __future__ import annotations

from collections.abc import Callable

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from strata.dialects import prim
from strata.dialects.types import numel, sym
from strata.passes.matmul_to_dot import products_summed

WEIGHT_VIEWS = (prim.PermuteOp, prim.ReshapeOp)


def merge_sibling_row_products(module: ModuleOp, eligible: Callable[[prim.MmOp], bool]) -> None:
    """Merges each group of sibling row products (see above) that `eligible` allows."""
    for block in {op.parent_block() for op in module.walk() if isinstance(op, prim.MmOp)}:
        groups: dict[tuple, list[prim.MmOp]] = {}
        for op in block.ops:
            if isinstance(op, prim.MmOp) and eligible(op) and _weight_chain(op.b) is not None and not _has_epilogue(op):
                k = sym(op.b.type.dims[0])
                if k.is_Integer and sym(op.b.type.dims[1]).is_Integer:
                    groups.setdefault((op.a, int(k), op.b.type.dtype), []).append(op)
        for ops in groups.values():
            if len(ops) < 2:
                continue
            # (decompose's builders import torch: only where there is something to merge,
            # so that strata-opt runs this pass on other programs without it)
            from strata.passes.decompositions.shape import POINTWISE_CAT_OPERANDS

            for start in range(0, len(ops), POINTWISE_CAT_OPERANDS):
                chunk = ops[start : start + POINTWISE_CAT_OPERANDS]
                if len({int(sym(op.b.type.dims[1])) for op in chunk}) > 1:
                    _merge(block, chunk)


def _has_epilogue(op: prim.MmOp) -> bool:
    """Whether an elementwise op reads all of op's result, through views and
    conversions (it would fuse into op's kernel, after the sum)."""
    elements = numel(op.result.type.dims)
    stack = [op.result]
    while stack:
        for use in stack.pop().uses:
            user = use.operation
            if isinstance(user, (*WEIGHT_VIEWS, prim.ConvertElementTypeOp)):
                stack.append(user.results[0])
            elif isinstance(user, prim.ElementwiseOp | prim.WhereOp) and sym(numel(user.results[0].type.dims)) == sym(elements):
                return True
    return False


def _weight_chain(b: SSAValue) -> list[Operation] | None:
    """The views from a graph argument up to b (b itself an argument: none); None if b
    is not views of an argument."""
    chain: list[Operation] = []
    while not isinstance(b, BlockArgument):
        if not isinstance(b.owner, WEIGHT_VIEWS):
            return None
        chain.append(b.owner)
        b = b.owner.operands[0]
    return chain[::-1]


def _merge(block: Block, products: list[prim.MmOp]) -> None:
    from strata.passes.decompositions.builder import PrimBuilder
    from strata.passes.decompositions.shape import cat_as_reads

    first = products[0]
    position = {op: i for i, op in enumerate(block.ops)}
    weights = [_before(block, position, op.b, first) for op in products]
    widths = [int(sym(w.type.dims[1])) for w in weights]
    k = weights[0].type.dims[0]
    b = PrimBuilder.for_rewrite(first.attributes.get("strata.source"))
    concatenated = cat_as_reads(b, weights, 1, [k, sum(widths)], [op.attributes.get("strata.source") for op in products])
    b.tag(first.attributes.get("strata.source"))
    total = products_summed(b.add, first.a, concatenated).results[0]
    dtype = first.result.type.dtype
    if dtype != "f32":
        total = b.add(prim.ConvertElementTypeOp(total, dtype))
    offset = 0
    slices = []
    for op, n in zip(products, widths):
        b.tag(op.attributes.get("strata.source"))
        slices.append(b.add(prim.SliceOp(total, [0, offset], [1, offset + n], [1, 1])))
        offset += n
    Rewriter.insert_op(b.ops, InsertPoint.before(first))
    for op, value in zip(products, slices):
        op.result.replace_all_uses_with(value)
        views = _weight_chain(op.b) or []
        Rewriter.erase_op(op)
        for view in reversed(views):  # the weight's views no one reads now
            if view.results[0].uses:
                break
            Rewriter.erase_op(view)


def _before(block: Block, position: dict[Operation, int], w: SSAValue, anchor: Operation) -> SSAValue:
    """The weight w, defined before `anchor`: its views cloned there where they come
    after it (views of an argument, so nothing else moves)."""
    chain = _weight_chain(w)
    assert chain is not None
    if not chain or position.get(chain[-1], len(position)) < position[anchor]:
        return w
    value = chain[0].operands[0]
    for view in chain:
        clone = view.clone()
        clone.operands = [value]
        Rewriter.insert_op(clone, InsertPoint.before(anchor))
        value = clone.results[0]
    return value
