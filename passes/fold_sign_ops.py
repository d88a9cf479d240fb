"""fold-sign-ops: -(-x) is x, |-x| and ||x|| are |x|.

Exact for every dtype prim negates: a float's sign bit flips twice (NaN and -0.0
included), and an integer's two's-complement negation wraps the same way both times
(-(-INT_MIN) is INT_MIN, |-x| is |x| there too)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriter, PatternRewriteWalker
from xdsl.pattern_rewriter import RewritePattern

from strata.dialects import prim
from strata.passes.provenance import with_source

NEG, ABS = prim.ELEMENTWISE_OPS["neg"], prim.ELEMENTWISE_OPS["abs"]


class FoldSignOp(RewritePattern):
    """neg(neg(x)) → x; abs(neg(x)) and abs(abs(x)) → abs(x)."""

    def match_and_rewrite(self, op, rewriter: PatternRewriter) -> None:
        if type(op) not in (NEG, ABS):
            return
        inner = op.args[0].owner
        if type(inner) is NEG and type(op) is NEG:
            rewriter.replace(op, [], [inner.args[0]])
        elif type(inner) is NEG and type(op) is ABS:
            rewriter.replace(op, with_source(op, ABS(inner.args[0])))  # keeps the aten op it came from
        elif type(inner) is ABS and type(op) is ABS:
            rewriter.replace(op, [], [inner.results[0]])


@dataclass(frozen=True)
class FoldSignOpsPass(ModulePass):
    name = "fold-sign-ops"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(GreedyRewritePatternApplier([FoldSignOp()]), apply_recursively=True).rewrite_module(op)
