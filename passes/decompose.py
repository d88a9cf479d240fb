"""decompose: aten ops → prim ops, one rule per overload (passes/decompositions/).

An op without a rule, or whose rule declines, stays as it is and later runs eagerly.
What a rule builds replaces the op only if every new op verifies and each replacement
has the op's declared result type: a rule's mistake costs a fallback, never a wrong
result. Declines are logged at debug level with their reason.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import VerifyException

from strata.dialects.aten import AtenOp
from strata.dialects.prim import types_match
from strata.passes.decompositions import RULES
from strata.passes.decompositions.builder import Decline, PrimBuilder

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DecomposePass(ModulePass):
    name = "decompose"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in op.ops:
            if isinstance(fn, func.FuncOp):
                for inner in list(fn.body.walk()):
                    if isinstance(inner, AtenOp):
                        reason = decompose(inner)
                        if reason is not None:
                            log.debug("decompose: %s stays aten: %s", inner.name, reason)


def decompose(op: AtenOp) -> str | None:
    """Replaces `op` by prim ops; returns why not, when it stays."""
    rule = RULES.get(op.overload_name)
    if rule is None:
        return "no rule"
    b = PrimBuilder(op)
    try:
        values = rule(op, b)
        values = [values] if isinstance(values, SSAValue) else list(values)
        _check(op, b, values)
    except Decline as e:
        return str(e)
    Rewriter.insert_op(b.ops, InsertPoint.before(op))
    for result, value in zip(op.results, values):
        result.replace_all_uses_with(value)
    Rewriter.erase_op(op)
    return None


def _check(op: AtenOp, b: PrimBuilder, values: list[SSAValue]) -> None:
    for new in b.ops:
        try:
            new.verify()
        except VerifyException as e:
            raise Decline(f"the rule built an invalid {new.name}: {e}") from None
    if len(values) != len(op.results):
        raise Decline(f"the rule gave {len(values)} values for {len(op.results)} results")
    for i, (result, value) in enumerate(zip(op.results, values)):
        if not types_match(result.type, value.type):
            raise Decline(f"result {i} would be {value.type}, the op declares {result.type}")
