"""The reference interpreter of the aten and prim levels.

It walks a `func.func` and runs each aten op as its eager kernel and each prim op as
its reference implementation: a lowering is correct when interpreting before and after
it gives the same values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from strata.dialects import aten
from strata.dialects.prim import PrimOp
from strata.dialects.types import bound_symbols
from strata.runtime.bindings import bind_symbols


def graph_func(module: ModuleOp) -> func.FuncOp:
    for op in module.ops:
        if isinstance(op, func.FuncOp):
            return op
    raise ValueError("the module has no func.func to interpret")


def interpret(module: ModuleOp, args: Sequence[Any], arg_symbols: Sequence[str | None] = ()) -> list[Any]:
    fn = graph_func(module)
    block = fn.body.block
    bindings = bind_symbols([a.type for a in block.args], args, arg_symbols)
    env = dict(zip(block.args, args))
    with bound_symbols(bindings):
        for op in block.ops:
            if isinstance(op, func.ReturnOp):
                return [env[v] for v in op.arguments]
            operands = [env[v] for v in op.operands]
            if isinstance(op, aten.AtenOp):
                results = aten.call_eager(op, operands, bindings)
            elif isinstance(op, PrimOp):
                results = [op.reference(*operands)]
            else:
                raise ValueError(f"the reference interpreter cannot run {op.name}")
            env.update(zip(op.results, results))
    raise ValueError("func.func without func.return")
