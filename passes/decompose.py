"""decompose: aten ops → prim ops, one rule per overload (passes/decompositions/).

An op without a rule, or whose rule declines, stays as it is and later runs eagerly.
What a rule builds replaces the op only if every new op verifies and each replacement
has the op's declared result type: a rule's mistake costs a fallback, never a wrong
result. Declines are logged at debug level with their reason (STRATA_LOGS=+passes),
and reported to whoever listens through `DECLINES` (the compiler, for its warnings
and for strata.explain).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import VerifyException

from strata.dialects.aten import AtenOp
from strata.dialects.prim import types_match
from strata.dialects.prim_random import RandomSeedOp
from strata.passes.decompositions import RULES
from strata.passes.decompositions.builder import Decline, PrimBuilder
from strata.passes.decompositions.complex_values import COMPLEX_RULES, has_complex_values
from strata.passes.provenance import blame, source_of

log = logging.getLogger(__name__)

# (overload, strata.source text or None, reason) for each op that stays aten, appended
# to the list that `recording_declines` sets up; None when nobody listens.
DECLINES: contextvars.ContextVar[list[tuple[str, str | None, str]] | None] = contextvars.ContextVar(
    "strata_declines", default=None
)


@contextlib.contextmanager
def recording_declines() -> Iterator[list[tuple[str, str | None, str]]]:
    declines: list[tuple[str, str | None, str]] = []
    token = DECLINES.set(declines)
    try:
        yield declines
    finally:
        DECLINES.reset(token)


@dataclass(frozen=True)
class DecomposePass(ModulePass):
    """`fallback_random`: leave the ops that would draw random numbers aten, so that
    they run as eager's kernels, with eager's bits (the `fallback_random` option).
    `index_bounds_checks` off: a select at an int out of range reads the nearest
    element instead of raising (prim.check_scalar_index)."""

    name = "decompose"
    fallback_random: bool = False
    index_bounds_checks: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        sink = DECLINES.get()
        done: Counter[str] = Counter()
        for fn in op.ops:
            if isinstance(fn, func.FuncOp):
                for inner in list(fn.body.walk()):
                    if isinstance(inner, AtenOp):
                        name = inner.name
                        try:
                            reason = decompose(inner, self.fallback_random, self.index_bounds_checks)
                        except Exception as e:
                            blame(e, inner)  # the error message names the op and its source
                            raise
                        if reason is None:
                            done[name] += 1
                            continue
                        source = inner.attributes.get("strata.source")
                        if log.isEnabledFor(logging.DEBUG):
                            log.debug("%s stays aten: %s", source_of(inner) or name, reason)
                        if sink is not None:
                            sink.append((inner.overload_name, source.data if isinstance(source, StringAttr) else None, reason))
        if done and log.isEnabledFor(logging.DEBUG):
            log.debug("rewrote %s", ", ".join(f"{n} x{c}" if c > 1 else n for n, c in sorted(done.items())))


def decompose(op: AtenOp, fallback_random: bool = False, index_bounds_checks: bool = True) -> str | None:
    """Replaces `op` by prim ops; returns why not, when it stays. With
    `fallback_random`, a rule that draws random numbers is not applied."""
    if has_complex_values(op):  # only a complex rule reads complex values (complex_values.py)
        rule = COMPLEX_RULES.get(op.overload_name)
        if rule is None:
            return "no rule for complex values"
    else:
        rule = RULES.get(op.overload_name)
    if rule is None:
        return "no rule"
    b = PrimBuilder(op, index_bounds_checks)
    try:
        values = rule(op, b)
        values = [values] if isinstance(values, SSAValue) else list(values)
        _check(op, b, values)
    except Decline as e:
        _discard(b.ops)
        return str(e)
    if fallback_random and any(isinstance(new, RandomSeedOp) for new in b.ops):
        _discard(b.ops)
        return "fallback_random: random ops run as eager's kernels"
    Rewriter.insert_op(b.ops, InsertPoint.before(op))
    for result, value in zip(op.results, values):
        result.replace_all_uses_with(value)
    Rewriter.erase_op(op)
    return None


def _discard(ops: list[Operation]) -> None:
    """Drops the ops a rule built and did not use: never inserted, each still counts as
    a use of the values it reads, and a pass that walks those uses (simplify's rewriter,
    which revisits a changed value's users) would meet ops that are in no block."""
    for new in reversed(ops):
        new.erase(safe_erase=False)


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
