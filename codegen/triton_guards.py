"""Loads that a select discards where its condition says so, masked by that condition.

A cat fused into the kernel that reads it (passes/decompositions/shape.py
`_cat_as_reads`) reads every operand at each point, at a coordinate clamped into the
operand, and `where` keeps one of them. The clamped reads are valid but not free: a
matrix-vector product over the concatenated weights of several layers (what
matvec-to-reduction makes of sibling products) would fetch every weight at every row.
Masking each such load with the conditions under which its value is kept makes the
discarded lanes fetch nothing, and changes no value: a masked-off lane's load is one
`where` throws away.

A load is guarded when its value reaches a `where` only as one of the two selected
operands, through nothing but single uses (and conversions, which carry a discarded
value to a discarded value); each `where` on the way adds its condition (or the
condition's negation, for the second operand) to the load's guard.
"""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue

from strata.dialects import kernel
from strata.dialects.prim import ConvertElementTypeOp, WhereOp

# (condition, whether the load's value is kept where the condition holds)
Guard = list[tuple[SSAValue, bool]]


def load_guards(live: list[Operation]) -> dict[Operation, Guard]:
    """Each load of `live` whose value only selects keep: the conditions of its guard."""
    guards: dict[Operation, Guard] = {}
    for op in live:
        if isinstance(op, kernel.LoadOp):
            guard = _guard_of(op.result)
            if guard:
                guards[op] = guard
    return guards


def _guard_of(value: SSAValue) -> Guard:
    guard: Guard = []
    while value.has_one_use():
        user = value.get_user_of_unique_use()
        if isinstance(user, ConvertElementTypeOp):
            value = user.results[0]
            continue
        if not isinstance(user, WhereOp) or user.cond is value or user.a is user.b:
            break
        guard.append((user.cond, user.a is value))
        value = user.results[0]
    return guard
