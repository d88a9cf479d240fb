"""Running prim's data-dependent ops (dialects/prim_data_dependent.py) in a compiled
graph: torch's kernel, then the symbol it binds, in the call's bindings, which the
kernels and allocations after it read (their sizes are functions of the bindings)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sympy
import torch
from xdsl.ir import Operation

from strata.dialects.prim_data_dependent import (
    AssertScalarOp,
    CheckScalarIndexOp,
    ItemOp,
    NonzeroOp,
    RandpermOp,
    check_condition,
)
from strata.dialects.types import TensorType, sym

Step = Callable[[list, dict], None]


def data_dependent_step(op: Operation, slot: Callable[[Any], int], device: torch.device) -> Step:
    """The runtime step of one data-dependent op; `slot` gives an SSA value's register."""
    operands = [slot(v) for v in op.operands]
    result = slot(op.results[0]) if op.results else None
    if isinstance(op, NonzeroOp):
        (x,) = operands
        name = op.symbol.data

        def nonzero(regs: list, env: dict) -> None:
            out = torch.nonzero(regs[x])
            env[name] = out.shape[0]
            regs[result] = out.contiguous()  # torch's CPU kernel writes it column-major

        return nonzero
    if isinstance(op, ItemOp):
        (x,) = operands
        name = op.symbol.data

        def item(regs: list, env: dict) -> None:
            value = regs[x].item()
            regs[result] = env[name] = int(value) if isinstance(value, bool) else value

        return item
    if isinstance(op, AssertScalarOp):
        condition, message = op.condition.data, op.message.data

        def check(regs: list, env: dict) -> None:
            check_condition(condition, message, env)

        return check
    if isinstance(op, CheckScalarIndexOp):
        from strata.runtime.index_values import evaluate

        index, size = (sym(e) for e in op.bounds)
        name = op.symbol.data

        def check_index(regs: list, env: dict) -> None:
            env[name] = op.wrapped(evaluate(index, env), evaluate(size, env))

        return check_index
    if isinstance(op, RandpermOp):

        def randperm(regs: list, env: dict) -> None:
            from strata.dialects.types import bound_symbols

            with bound_symbols(env):
                regs[result] = op.reference(device=device)

        return randperm
    raise ValueError(f"the runtime cannot run {op.name}")


def unbound_result_dims(op: Operation, bound: set[str]) -> list[tuple[int, int, str]]:
    """(result, dim, symbol) for each result dim that is a symbol no argument binds:
    an eager op's data-dependent size (a nonzero that stayed aten), which its result
    binds when it runs."""
    out = []
    for j, r in enumerate(op.results):
        if isinstance(r.type, TensorType):
            for k, d in enumerate(r.type.dims):
                if isinstance(d, sympy.Symbol) and d.name not in bound:
                    out.append((j, k, d.name))
    return out


def reads_data_on_host(module: Operation) -> bool:
    """Whether the kernel-level module runs a data-dependent op (dialects/
    prim_data_dependent.py) or binds a size from an eager op's result."""
    from strata.dialects.aten import AtenOp
    from strata.dialects.prim_data_dependent import DATA_DEPENDENT_OPS, binds_symbols

    return any(
        isinstance(op, DATA_DEPENDENT_OPS) or (isinstance(op, AtenOp) and binds_symbols(op)) for op in module.walk()
    )
