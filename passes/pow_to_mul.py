"""pow-to-mul: pow(x, 2) → mul(x, x), where the exponent is a constant 2.

A product is cheaper than a power, and it is how eager computes x ** 2 (decompose
lowers aten.pow.Tensor_Scalar with exponent 2 to the same product)."""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriter, PatternRewriteWalker
from xdsl.pattern_rewriter import RewritePattern, op_type_rewrite_pattern

from strata.dialects import prim
from strata.passes.provenance import with_source

POW, MUL = prim.ELEMENTWISE_OPS["pow"], prim.ELEMENTWISE_OPS["mul"]


def constant_of(v: SSAValue) -> float | int | bool | None:
    """The value every element of v has, if v is a prim.full (perhaps broadcast)."""
    op = v.owner
    while isinstance(op, prim.BroadcastInDimOp):
        op = op.x.owner
    return op.scalar if isinstance(op, prim.FullOp) else None


class PowOfTwoToMul(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: POW, rewriter: PatternRewriter) -> None:
        x, exponent = op.args
        c = constant_of(exponent)
        if c is None or isinstance(c, bool) or c != 2 or x.type != op.result.type:
            return
        rewriter.replace(op, with_source(op, MUL(x, x)))  # the aten op it came from, for traces and errors


@dataclass(frozen=True)
class PowToMulPass(ModulePass):
    name = "pow-to-mul"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(GreedyRewritePatternApplier([PowOfTwoToMul()])).rewrite_module(op)
