"""schedule-collectives: each collective issued as early, and waited for as late, as
its data allows, so that the program computes while the network moves data.

On a kernel.program (after fuse), in order:
- each collective (dialects/prim_collectives.py) moves up to just after the last step
  that makes one of its operands, but never above the collective issued before it (the
  process group needs every rank to issue collectives in one order: each rank runs this
  same pass on the same program, so the order stays a function of the program) and
  never above a step that binds a shape symbol (nonzero, item()), which its sizes may
  read;
- each prim.wait moves down to just before the first step that reads its result (or
  the program's return).

Nothing else moves, so the program's other steps keep their order. A program without
collectives is left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation
from xdsl.passes import ModulePass

from strata.dialects import kernel as kd
from strata.dialects.prim_collectives import COLLECTIVE_OPS, WaitOp
from strata.dialects.prim_data_dependent import binds_symbols


@dataclass(frozen=True)
class ScheduleCollectivesPass(ModulePass):
    name = "schedule-collectives"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for program in op.ops:
            if isinstance(program, kd.ProgramOp):
                schedule(program.block)


def schedule(block: Block) -> None:
    ops = list(block.ops)
    if not any(isinstance(o, COLLECTIVE_OPS) for o in ops):
        return
    previous: Operation | None = None  # the collective issued before, or a step binding symbols
    for op in ops:
        if isinstance(op, COLLECTIVE_OPS):
            anchor = _latest([previous, *(v.owner for v in op.operands if isinstance(v.owner, Operation))], block)
            op.detach()
            if anchor is None:
                block.insert_op_before(op, block.first_op)
            else:
                block.insert_op_after(op, anchor)
            previous = op
        elif binds_symbols(op):
            previous = op if previous is None or _position(block)[op] > _position(block)[previous] else previous
    for op in ops:  # in program order: waits for collectives at one reader stay in issue order
        if isinstance(op, WaitOp):
            position = _position(block)
            first = min((u.operation for u in op.result.uses), key=position.__getitem__, default=None)
            if first is not None and position[first] > position[op] + 1:
                op.detach()
                block.insert_op_before(op, first)


def _position(block: Block) -> dict[Operation, int]:
    return {o: i for i, o in enumerate(block.ops)}


def _latest(candidates: list[Operation | None], block: Block) -> Operation | None:
    position = _position(block)
    present = [c for c in candidates if c is not None and c in position]
    return max(present, key=position.__getitem__, default=None)
