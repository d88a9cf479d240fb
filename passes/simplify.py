"""simplify: folds of identity views and conversions, view-chain collapse, checks of
indices that cannot be out of range, common subexpression elimination and dead-code
elimination, over `func.func` bodies.

Only prim ops (Pure) are merged or folded. An unused aten op is deleted only when its
schema says it writes nothing and draws no random numbers: an in-place op, or a
random one (whose draws move the generator that later ops read), always stays, and so
does one that checks the indices it is given (it raises for one out of range).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from strata.dialects.lazy_torch import torch
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    GreedyRewritePatternApplier,
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.rewriter import Rewriter
from xdsl.traits import is_side_effect_free

from strata.dialects import prim
from strata.passes.provenance import with_source
from strata.dialects.prim_indexing import CheckIndexOp
from strata.dialects.aten import AtenOp, torch_overload
from strata.dialects.types import TensorType
from strata.passes.value_ranges import provably_in_range

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SimplifyPass(ModulePass):
    name = "simplify"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        debug = log.isEnabledFor(logging.DEBUG)
        before = _count_ops(op) if debug else 0
        PatternRewriteWalker(
            GreedyRewritePatternApplier(
                [FoldBroadcast(), FoldConvert(), FoldPermute(), FoldReshape(), FoldCheckIndex()]
            ),
            apply_recursively=True,
        ).rewrite_module(op)
        folded = before - _count_ops(op) if debug else 0
        merged = deleted = 0
        for fn in op.ops:
            if isinstance(fn, func.FuncOp):
                for block in fn.body.blocks:
                    merged += eliminate_common_subexpressions(block)
                    deleted += eliminate_dead_code(block)
        if debug:
            log.debug(
                "folds removed %d ops (identity views and conversions, view chains); cse merged %d; dce deleted %d",
                folded,
                merged,
                deleted,
            )


def _count_ops(module: ModuleOp) -> int:
    return sum(1 for _ in module.walk())


# ---------------------------------------------------------------- folds
def _replace(rewriter: PatternRewriter, op: Operation, value: SSAValue) -> None:
    """Replaces op's one result by `value` (of the same type)."""
    rewriter.replace(op, [], [value])


class FoldBroadcast(RewritePattern):
    """An identity broadcast is its operand; a broadcast of a broadcast is one."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: prim.BroadcastInDimOp, rewriter: PatternRewriter) -> None:
        dims = prim.ints_of(op.broadcast_dimensions)
        if op.x.type == op.result.type and dims == tuple(range(len(dims))):
            _replace(rewriter, op, op.x)
        elif isinstance(inner := op.x.owner, prim.BroadcastInDimOp):
            # Each dim of the inner operand is 1 or its inner target, which is 1 or
            # the outer target: so it broadcasts to the outer target directly.
            composed = [dims[d] for d in prim.ints_of(inner.broadcast_dimensions)]
            new = prim.BroadcastInDimOp(inner.x, prim.dims_of(op.shape), composed)
            rewriter.replace(op, with_source(op, new))


# Conversions that lose nothing: a round trip through one of these is the identity.
_WIDER = {
    "i1": {"u8", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"},
    "u8": {"i16", "i32", "i64", "f16", "bf16", "f32", "f64"},
    "i8": {"i16", "i32", "i64", "f16", "bf16", "f32", "f64"},
    "i16": {"i32", "i64", "f32", "f64"},
    "i32": {"i64", "f64"},
    "f16": {"f32", "f64"},
    "bf16": {"f32", "f64"},
    "f32": {"f64"},
}


class FoldConvert(RewritePattern):
    """A conversion to the operand's own dtype, or back from a lossless widening."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: prim.ConvertElementTypeOp, rewriter: PatternRewriter) -> None:
        if op.x.type == op.result.type:
            _replace(rewriter, op, op.x)
            return
        inner = op.x.owner
        if isinstance(inner, prim.ConvertElementTypeOp) and inner.x.type == op.result.type:
            original = inner.x.type
            if isinstance(original, TensorType) and inner.dtype.data in _WIDER.get(original.dtype, ()):
                _replace(rewriter, op, inner.x)


class FoldCheckIndex(RewritePattern):
    """A check of an index that cannot be out of range (an iota within the dim, a
    clamp, a remainder by the size: passes/value_ranges.py) is the index itself."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: CheckIndexOp, rewriter: PatternRewriter) -> None:
        if provably_in_range(op):
            _replace(rewriter, op, op.index)


class FoldPermute(RewritePattern):
    """An identity permutation is its operand; two permutations are one."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: prim.PermuteOp, rewriter: PatternRewriter) -> None:
        perm = prim.ints_of(op.dims)
        if perm == tuple(range(len(perm))):
            _replace(rewriter, op, op.x)
        elif isinstance(inner := op.x.owner, prim.PermuteOp):
            first = prim.ints_of(inner.dims)
            rewriter.replace(op, with_source(op, prim.PermuteOp(inner.x, [first[p] for p in perm])))


class FoldReshape(RewritePattern):
    """A reshape to the operand's shape is the operand; two reshapes are one."""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: prim.ReshapeOp, rewriter: PatternRewriter) -> None:
        if op.x.type == op.result.type:
            _replace(rewriter, op, op.x)
        elif isinstance(inner := op.x.owner, prim.ReshapeOp):
            rewriter.replace(op, with_source(op, prim.ReshapeOp(inner.x, prim.dims_of(op.shape))))


# ---------------------------------------------------------------- cse and dce
def eliminate_common_subexpressions(block: Block) -> int:
    """Merges side-effect-free ops with equal names, properties, operands and result
    types. Unlike xDSL's cse it ignores attributes: ops from two aten ops differ in
    their `strata.source` and are still one computation (a conversion keeps
    `strata.opmath_rounding` only if every one merged into it had it). Returns how
    many it merged."""
    seen: dict[tuple, Operation] = {}
    merged = 0
    for op in list(block.ops):
        if op.regions or not op.results or not is_side_effect_free(op):
            continue
        key = (op.name, tuple(sorted(op.properties.items())), tuple(op.operands), tuple(op.result_types))
        first = seen.setdefault(key, op)
        if first is not op:
            if prim.OPMATH_ROUNDING not in op.attributes:
                # one of them is a cast the program asked for: the merged op rounds always
                first.attributes.pop(prim.OPMATH_ROUNDING, None)
            for old, new in zip(op.results, first.results):
                old.replace_all_uses_with(new)
            Rewriter.erase_op(op)
            merged += 1
    return merged


def eliminate_dead_code(block: Block) -> int:
    """Deletes unused ops that are safe to drop, last first, so chains go at once.
    Returns how many it deleted."""
    deleted = 0
    for op in reversed(list(block.ops)):
        if op.results and all(not r.uses for r in op.results) and _droppable(op):
            Rewriter.erase_op(op)
            deleted += 1
    return deleted


# aten ops left to eager that check the indices they are given: unused, they still
# raise for an index out of range (eager's index_select into an empty dim, whose
# result a later op did not need).
_CHECKS_INDICES = ("aten::index_select", "aten::embedding", "aten::index.", "aten::gather", "aten::take",
                   "aten::index_put", "aten::scatter", "aten::embedding_bag", "aten::_embedding_bag")


def _droppable(op: Operation) -> bool:
    if isinstance(op, AtenOp):
        overload = torch_overload(op.overload_name)
        if op.overload_name.startswith(_CHECKS_INDICES):
            return False
        return not overload._schema.is_mutable and torch.Tag.nondeterministic_seeded not in overload.tags
    return not op.regions and is_side_effect_free(op)
