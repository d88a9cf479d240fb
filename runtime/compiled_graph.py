"""A `kernel.program` as a Python callable.

At construction every step of the program becomes a closure over precomputed data
(the compiled kernel, the symbol list, the output shapes as compiled lambdas), so a call
binds the shape symbols once and runs the steps: allocate a launch's outputs and call
its kernel; run a library call or view (prim reference = torch); run an eager fallback
(aten op). Inputs laid out differently from what the kernels were compiled for are
copied into that layout first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import sympy
import torch
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue

from strata.dialects import aten
from strata.dialects import kernel as kd
from strata.dialects.prim import PrimOp
from strata.dialects.types import DTYPES, Dim, TensorType, bound_symbols, sym
from strata.runtime.bindings import bind_symbols

Step = Callable[[dict, dict], None]


def size_fn(dims: Sequence[Dim]) -> Callable[[dict[str, int]], list[int]]:
    """A fast function from symbol bindings to concrete dims."""
    exprs = [sym(d) for d in dims]
    if all(e.is_Integer for e in exprs):
        fixed = [int(e) for e in exprs]
        return lambda env: fixed
    names = sorted({s.name for e in exprs for s in e.free_symbols})
    f = sympy.lambdify([sympy.Symbol(n, integer=True, nonnegative=True) for n in names], exprs, modules="math")
    return lambda env: [int(v) for v in f(*(env[n] for n in names))]


@dataclass
class CompiledGraph:
    """The callable for one kernel.program; `kernels` maps kernel names to compiled code."""

    module: ModuleOp
    compile_kernel: Callable[[kd.FuncOp], Callable[[list, list], None]]
    device: torch.device
    kernels: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.program = next(op for op in self.module.ops if isinstance(op, kd.ProgramOp))
        funcs = {op.sym_name.data: op for op in self.module.ops if isinstance(op, kd.FuncOp)}
        self.arg_types = [a.type for a in self.program.block.args]
        self.arg_symbols = self.program.symbol_names
        self.arg_layout = [
            (size_fn(t.dims), size_fn(s)) if isinstance(t, TensorType) else None
            for t, s in zip(self.arg_types, self.program.strides)
        ]
        self.steps: list[Step] = []
        for op in self.program.block.ops:
            if isinstance(op, kd.LaunchOp):
                self.steps.append(self._launch_step(op, funcs[op.callee.string_value()]))
            elif isinstance(op, kd.ReturnOp):
                self.results = list(op.values)
            elif isinstance(op, aten.AtenOp):
                self.steps.append(self._eager_step(op))
            elif isinstance(op, PrimOp):
                self.steps.append(self._library_step(op))
            else:
                raise ValueError(f"the runtime cannot run {op.name}")

    # ------------------------------------------------------------ steps
    def _launch_step(self, op: kd.LaunchOp, func: kd.FuncOp) -> Step:
        kernel = self.compile_kernel(func)
        self.kernels[func.sym_name.data] = kernel
        ins = list(op.args)
        outs = [(v, size_fn(v.type.dims), DTYPES[v.type.dtype]) for v in op.outs]
        names = func.symbol_names
        device = self.device

        def step(values: dict, env: dict) -> None:
            buffers = [values[v] for v in ins]
            for v, sizes, dtype in outs:
                t = torch.empty(sizes(env), dtype=dtype, device=device)
                values[v] = t
                buffers.append(t)
            kernel(buffers, [env[n] for n in names])

        return step

    def _library_step(self, op: PrimOp) -> Step:
        operands = list(op.operands)
        result = op.results[0]

        def step(values: dict, env: dict) -> None:
            with bound_symbols(env):
                values[result] = op.reference(*(values[v] for v in operands))

        return step

    def _eager_step(self, op: aten.AtenOp) -> Step:
        operands = list(op.operands)
        results = list(op.results)

        def step(values: dict, env: dict) -> None:
            outs = aten.call_eager(op, [values[v] for v in operands], env)
            for r, t in zip(results, outs):
                values[r] = t.contiguous() if isinstance(t, torch.Tensor) else t

        return step

    # ------------------------------------------------------------ calls
    def __call__(self, args: Sequence[Any]) -> list[Any]:
        env = bind_symbols(self.arg_types, args, self.arg_symbols)
        values: dict[SSAValue, Any] = {}
        for a, x, layout in zip(self.program.block.args, args, self.arg_layout):
            values[a] = _with_layout(x, layout, env) if layout is not None else x
        for step in self.steps:
            step(values, env)
        return [values[v] for v in self.results]


def _with_layout(x: torch.Tensor, layout, env: dict) -> torch.Tensor:
    sizes, strides = layout[0](env), layout[1](env)
    if all(st == s or n == 1 for st, s, n in zip(x.stride(), strides, sizes)):
        return x
    out = torch.empty_strided(sizes, strides, dtype=x.dtype, device=x.device)
    out.copy_(x)
    return out
