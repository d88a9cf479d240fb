"""The program's collectives (dialects/prim_collectives.py) as steps: an issue calls
torch's functional collective, which starts the communication and returns its result
at once; prim.wait calls wait_tensor, after which the result may be read. Between the
two the program's other steps run (passes/schedule_collectives.py orders them so).
Operands are made contiguous first, as the process group needs them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from strata.dialects.prim_collectives import WaitOp, functional
from strata.dialects.types import bound_symbols

Step = Callable[[list, dict], None]


def communication_step(op: Any, slot: Callable[[Any], int]) -> Step:
    operands = [slot(v) for v in op.operands]
    results = [slot(r) for r in op.results]
    if isinstance(op, WaitOp):
        wait = functional("wait_tensor")
        (x,), (r,) = operands, results

        def wait_step(regs: list, env: dict) -> None:
            regs[r] = wait(regs[x])

        return wait_step
    issue = functional(op.FUNCTIONAL)
    coalesced = op.COALESCED
    try:
        fixed = op.call_args()  # the group, sizes: read once, unless they are symbolic
    except Exception:  # symbolic split sizes (all_to_all): read under each call's bindings
        fixed = None

    def issue_step(regs: list, env: dict) -> None:
        xs = [_contiguous(regs[i]) for i in operands]
        if fixed is None:
            with bound_symbols(env):
                extra = op.call_args()
        else:
            extra = fixed
        out = issue(xs, *extra) if coalesced else issue(*xs, *extra)
        if coalesced:
            for r, t in zip(results, out):
                regs[r] = t
        else:
            regs[results[0]] = out

    return issue_step


def _contiguous(x: torch.Tensor) -> torch.Tensor:
    return x if x.is_contiguous() else x.contiguous()
