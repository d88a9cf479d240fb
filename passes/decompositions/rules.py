"""The table of decomposition rules: aten overload name → rule.

A rule gets the aten op and a `PrimBuilder` positioned at it, and returns the values
that replace the op's results (one per result), or raises `Decline` to leave the op as
it is (it then runs eagerly). Families register their rules with `@decomposes`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from xdsl.ir import SSAValue

from strata.dialects.aten import AtenOp

if TYPE_CHECKING:
    from strata.passes.decompositions.builder import PrimBuilder

Rule = Callable[[AtenOp, "PrimBuilder"], SSAValue | Sequence[SSAValue]]

RULES: dict[str, Rule] = {}


def decomposes(*overloads: str) -> Callable[[Rule], Rule]:
    """Registers a rule for each qualified overload name ("aten::add.Tensor")."""

    def register(rule: Rule) -> Rule:
        for name in overloads:
            if name in RULES:
                raise ValueError(f"two decomposition rules for {name}")
            RULES[name] = rule
        return rule

    return register
