"""The meaning of a `kernel.program`: the compiled graph, run step by step.

Arguments bind the shape symbols; an input laid out otherwise than `arg_strides` says
is copied into that layout (as the runtime does); `kernel.launch` allocates its
outputs (contiguous) and runs the kernel.func it names; prim ops left in the program
(library calls, views) run their reference, aten ops (eager fallbacks) their eager
kernel; what a non-view op makes is contiguous, since kernels index it so;
`kernel.return` gives the results.

How a launch runs its kernel is a parameter (`KernelRunner`): the kernel interpreter
by default, compiled code in the code generators' tests and in the runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    register_impls,
)

from strata.dialects import kernel as kd
from strata.dialects import prim
from strata.dialects.types import DTYPES, TensorType, concrete
from strata.runtime.bindings import bind_symbols
from strata.runtime.interpreters import symbols
from strata.runtime.interpreters.kernel import KernelFunctions
from strata.runtime.allocation import as_sequence_major
from strata.runtime.layouts import launch_strides, result_format, sequence_major

# Runs one kernel.func on buffers (inputs, then preallocated outputs) and the values
# of its shape symbols.
KernelRunner = Callable[[Interpreter, kd.FuncOp, list[torch.Tensor], list[int]], None]


def interpret_kernel(interpreter: Interpreter, func: kd.FuncOp, buffers: list[torch.Tensor], symbol_values: list[int]) -> None:
    KernelFunctions().call_kernel(interpreter, func, buffers, symbol_values)


class ProgramFunctions(InterpreterFunctions):
    """kernel.launch and kernel.return, and `call_program`, which runs a whole
    kernel.program."""

    def __init__(self, run_kernel: KernelRunner = interpret_kernel, fill: float | None = None):
        """`fill`: a value to fill fresh outputs with before a launch (NaN, say), so
        that an element no store writes shows up; None leaves them uninitialized."""
        self.run_kernel = run_kernel
        self.fill = fill

    def call_program(self, interpreter: Interpreter, program: kd.ProgramOp, args: Sequence[Any]) -> list[Any]:
        block = program.block
        if len(args) != len(block.args):
            raise ValueError(f"kernel.program @{program.sym_name.data} takes {len(block.args)} arguments, got {len(args)}")
        types = [a.type for a in block.args]
        env = {**program.symbol_values, **bind_symbols(types, args, program.symbol_names)}
        values = [
            _with_layout(x, t, strides, env) if isinstance(t, TensorType) else x
            for x, t, strides in zip(args, types, program.strides)
        ]
        with symbols.binding(interpreter, env):
            return self._run_body(interpreter, program, values)

    def _run_body(self, interpreter: Interpreter, program: kd.ProgramOp, args: list[Any]) -> list[Any]:
        """The program's ops in order. Kernels index every tensor the program makes
        as contiguous, or in the layout the program names (runtime/layouts.py), so
        each op's results are made so, except those of views, which only feed
        library calls, eager ops and the results."""
        interpreter.push_scope(program.sym_name.data)
        try:
            interpreter.set_values(zip(program.block.args, args))
            for op in program.block.ops:
                inputs = interpreter.get_values(op.operands)
                if isinstance(op, kd.ReturnOp):
                    return list(inputs)
                results = interpreter.run_op(op, inputs)
                if isinstance(op, kd.LaunchOp):
                    pass  # laid out as the launch asked (run_launch)
                elif sequence_major(op):
                    results = tuple(as_sequence_major(r) for r in results)
                elif not isinstance(op, prim.VIEW_OPS):
                    fmt = result_format(op)
                    results = tuple(r.contiguous(memory_format=fmt) if isinstance(r, torch.Tensor) else r for r in results)
                interpreter.set_values(zip(op.results, results))
        finally:
            interpreter.pop_scope()
        raise ValueError(f"kernel.program @{program.sym_name.data} has no kernel.return")

    @impl(kd.LaunchOp)
    def run_launch(self, interpreter: Interpreter, op: kd.LaunchOp, args: PythonValues) -> PythonValues:
        func = interpreter.get_op_for_symbol(op.callee)
        if not isinstance(func, kd.FuncOp):
            raise ValueError(f"kernel.launch: @{op.callee.string_value()} is not a kernel.func")
        env = symbols.current(interpreter)
        outs = []
        updates = op.updates or [-1] * len(op.outs)
        for v, strides, j in zip(op.outs, launch_strides(op), updates):
            sizes = concrete(v.type.dims, env)
            if strides is None:
                t = torch.empty(sizes, dtype=DTYPES[v.type.dtype])
            else:  # a layout the fused program chose (passes/fusion/layouts.py)
                t = torch.empty_strided(sizes, concrete(strides, env), dtype=DTYPES[v.type.dtype])
            if j != -1:  # an output that updates operand j starts as its elements
                t.copy_(args[j])
            elif self.fill is not None:
                t.fill_(self.fill if t.dtype.is_floating_point else 0)
            outs.append(t)
        missing = [n for n in func.symbol_names if n not in env]
        if missing:
            raise ValueError(f"kernel.launch @{func.sym_name.data}: no value bound for {', '.join(missing)}")
        self.run_kernel(interpreter, func, [*args, *outs], [env[n] for n in func.symbol_names])
        return tuple(outs)


register_impls(ProgramFunctions)


def _with_layout(x: torch.Tensor, t: TensorType, strides: Sequence, env: dict[str, int]) -> torch.Tensor:
    """x in the layout the kernels were compiled for (a copy, unless it already is)."""
    sizes, want = concrete(t.dims, env), concrete(strides, env)
    if not isinstance(x, torch.Tensor) or len(want) != x.dim():
        return x
    if all(st == s or n == 1 for st, s, n in zip(x.stride(), want, sizes)):
        return x
    out = torch.empty_strided(sizes, want, dtype=x.dtype, device=x.device)
    out.copy_(x)
    return out
