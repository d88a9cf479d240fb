"""Which user indices no kernel would check: the checks that must run on their own.

A prim.check_index is checked where a kernel computes it, element by element. Fused
into a gather, it runs only at the elements the gather is computed at, and eager
checks every index the user gave, whatever is read: `x[i][:0]`, `x[i][::2]`, an
embedding into rows of width 0 and a gather whose result is dead read fewer elements
than the index holds (or none), yet eager raises for an index out of range there.

A realized value is computed at every element of its domain (plan.py). So a check is
*covered* when its every element is read on the way to some realized value: through
ops that read each element of an operand to compute their whole result (elementwise
math, conversions, permutes, reshapes, a gather's index, a reduction's input), and
broadcasts whose new dims are provably non-empty. A slice, a gather's `x` (read at
positions held elsewhere) or a broadcast into a dim that may be 0 read only some.
The checks that are not covered become results of their own (fuse.py): a kernel over
the index computes and checks each element, as eager does; the gather reads the
checked buffer. Covered checks, the common case (an embedding that feeds the model),
cost nothing more than before.
"""

from __future__ import annotations

from xdsl.ir import Operation, SSAValue

from strata.dialects import prim
from strata.dialects.prim_indexing import CheckIndexOp, GatherOp
from strata.dialects.types import sym
from strata.passes.fusion.plan import choose_realized, is_reduction

# Ops that read every element of each operand to compute every element of their result.
_READS_ALL = (prim.ElementwiseOp, prim.WhereOp, prim.ConvertElementTypeOp, prim.PermuteOp, prim.ReshapeOp, CheckIndexOp)


def unchecked_indices(ops: list[Operation], outputs: list[SSAValue]) -> list[SSAValue]:
    """The prim.check_index results some of whose elements no kernel computes, given the
    values the plan realizes for `outputs` (worked out only where there is a check)."""
    checks = [op for op in ops if isinstance(op, CheckIndexOp)]
    if not checks:
        return []
    realized = choose_realized(ops, outputs)
    return [op.result for op in checks if not _covered(op.result, realized, {})]


def _covered(v: SSAValue, realized: set[SSAValue], seen: dict[SSAValue, bool]) -> bool:
    if v in realized:
        return True
    if v in seen:
        return seen[v]
    seen[v] = False  # a value is not its own reader
    seen[v] = any(_reads_all(use.operation, use.index) and
                  (is_reduction(use.operation) or any(_covered(r, realized, seen) for r in use.operation.results))
                  for use in v.uses)
    return seen[v]


def _reads_all(op: Operation, operand: int) -> bool:
    """Whether computing every element of op's result reads every element of its
    operand number `operand`."""
    if is_reduction(op):
        return True
    if isinstance(op, GatherOp):
        return op.operands[operand] is op.index
    if isinstance(op, prim.BroadcastInDimOp):
        kept = prim.ints_of(op.broadcast_dimensions)
        x_dims = op.x.type.dims
        for i, d in enumerate(op.result.type.dims):
            grows = i not in kept or x_dims[kept.index(i)] == 1
            if grows and not _nonempty(d):
                return False
        return True
    return isinstance(op, _READS_ALL)


def _nonempty(d) -> bool:
    return bool(sym(d).is_positive)
