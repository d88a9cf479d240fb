"""strata's reference interpreters, on xDSL's interpreter framework.

Each dialect's meaning is a set of `InterpreterFunctions`:

- `AtenFunctions` (aten.py): every aten op runs its eager torch kernel;
- `PrimFunctions` (prim.py): every prim op runs its `reference`;
- `KernelFunctions` (kernel.py): a kernel.func walks its iteration domain;
- `ProgramFunctions` (program.py): a kernel.program allocates, launches, returns.

`reference_interpreter(module)` is an `xdsl.interpreter.Interpreter` with all of them
(and xDSL's own `func` functions). The functions below run a module's graph, one
kernel, or a program; shape symbols are bound from the inputs, as the runtime does.
A lowering is correct when these give the same values before and after it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter
from xdsl.interpreters.func import FuncFunctions

from strata.dialects import kernel as kd
from strata.runtime.bindings import bind_symbols
from strata.runtime.interpreters import symbols
from strata.runtime.interpreters.aten import AtenFunctions
from strata.runtime.interpreters.kernel import KernelFunctions
from strata.runtime.interpreters.prim import PrimFunctions
from strata.runtime.interpreters.program import KernelRunner, ProgramFunctions, interpret_kernel

__all__ = [
    "AtenFunctions",
    "KernelFunctions",
    "KernelRunner",
    "PrimFunctions",
    "ProgramFunctions",
    "interpret",
    "interpret_module",
    "reference_interpreter",
    "run_kernel",
    "run_program",
]


def reference_interpreter(module: ModuleOp, program: ProgramFunctions | None = None) -> Interpreter:
    """An interpreter for `module` that knows every strata op; `program` says how
    kernel launches run (by default in the kernel interpreter)."""
    interpreter = Interpreter(module)
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(AtenFunctions())
    interpreter.register_implementations(PrimFunctions())
    interpreter.register_implementations(KernelFunctions())
    interpreter.register_implementations(program or ProgramFunctions())
    return interpreter


def graph_func(module: ModuleOp) -> func.FuncOp:
    """The module's func.func (the graph, at the aten and prim levels)."""
    for op in module.ops:
        if isinstance(op, func.FuncOp):
            return op
    raise ValueError("the module has no func.func to interpret")


def program_op(module: ModuleOp) -> kd.ProgramOp:
    for op in module.ops:
        if isinstance(op, kd.ProgramOp):
            return op
    raise ValueError("the module has no kernel.program to interpret")


def interpret(module: ModuleOp, args: Sequence[Any], arg_symbols: Sequence[str | None] = ()) -> list[Any]:
    """The results of the module's func.func (aten and prim ops) on `args`; an `index`
    argument binds the shape symbol `arg_symbols` names for it."""
    fn = graph_func(module)
    interpreter = reference_interpreter(module)
    env = bind_symbols([a.type for a in fn.body.block.args], args, arg_symbols)
    with symbols.binding(interpreter, env):
        return list(interpreter.run_ssacfg_region(fn.body, tuple(args), fn.sym_name.data))


def run_kernel(func_op: kd.FuncOp, buffers: Sequence[torch.Tensor], symbol_values: Sequence[int]) -> None:
    """Runs one kernel.func on buffers (inputs, then outputs, written in place) and
    the values of its shape symbols, in `func_op.symbols` order."""
    module = func_op.get_toplevel_object()
    interpreter = reference_interpreter(module if isinstance(module, ModuleOp) else ModuleOp([]))
    KernelFunctions().call_kernel(interpreter, func_op, list(buffers), list(symbol_values))


def run_program(module: ModuleOp, args: Sequence[Any], run_kernel: KernelRunner = interpret_kernel, fill: float | None = None) -> list[Any]:
    """The results of the module's kernel.program on `args`; `run_kernel` runs each
    launched kernel (the kernel interpreter by default), `fill` initializes fresh
    outputs (see ProgramFunctions)."""
    functions = ProgramFunctions(run_kernel, fill)
    interpreter = reference_interpreter(module, functions)
    return functions.call_program(interpreter, program_op(module), args)


def interpret_module(module: ModuleOp, args: Sequence[Any], arg_symbols: Sequence[str | None] = ()) -> list[Any]:
    """The results of a module at any level: its kernel.program if it has one (after
    `fuse`), else its func.func."""
    if any(isinstance(op, kd.ProgramOp) for op in module.ops):
        return run_program(module, args)
    return interpret(module, args, arg_symbols)
