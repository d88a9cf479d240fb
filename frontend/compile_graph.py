"""Compiling one ATen FX graph: import, the pass pipeline, code generation, runtime.

This is the function AOTAutograd calls for each forward (and backward) graph. A graph
strata cannot represent at all runs eagerly, with one warning saying why; an op no
lowering covers runs as its eager kernel; a kernel a code generator rejects runs in the
kernel interpreter. Each of those is announced once, and none changes a result.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx
from xdsl.dialects.builtin import ModuleOp

from strata.dialects import aten
from strata.dialects import kernel as kd
from strata.dialects.context import strata_context
from strata.frontend.importer import UnsupportedGraph, import_graph
from strata.frontend.trace import Trace
from strata.passes.registry import PASSES
from strata.runtime.compiled_graph import CompiledGraph


class CompileError(Exception):
    """A pass failed on a graph; the message names the pass and the op."""


def device_of(example_inputs: Sequence[Any]) -> torch.device:
    for x in example_inputs:
        if isinstance(x, torch.Tensor):
            return x.device
    return torch.device("cpu")


def run_pipeline(module: ModuleOp, names: Sequence[str], verify: bool = True, trace: Trace | None = None) -> dict[str, float]:
    """Runs the named passes in order; returns the seconds each took."""
    ctx = strata_context()
    times: dict[str, float] = {}
    for name in names:
        if name not in PASSES:
            raise ValueError(f"unknown pass {name!r}; strata's passes are: {', '.join(PASSES)}")
        if name == "fuse" and trace is not None:
            trace.level("1_prim", module)
        start = time.perf_counter()
        try:
            PASSES[name]()().apply(ctx, module)
            if verify:
                module.verify()
        except Exception as e:
            raise CompileError(f"pass {name!r} failed: {e}") from e
        times[name] = times.get(name, 0.0) + time.perf_counter() - start
    return times


def kernel_compiler(codegen: str, device: torch.device, trace: Trace) -> Callable[[kd.FuncOp], Any]:
    """compile_kernel for the chosen back end, falling back to the kernel interpreter."""
    from strata.codegen.errors import CodegenError
    from strata.runtime.kernel_interpreter import run_kernel

    if codegen == "triton":
        from strata.codegen.triton_gpu import compile_kernel as triton_compile

        def generate(func: kd.FuncOp):
            return triton_compile(func, device=device.type)

        suffix = ".py"
    else:
        from strata.codegen.llvm_cpu import compile_kernel as generate

        suffix = ".ll"

    def compile_kernel(func: kd.FuncOp):
        try:
            compiled = generate(func)
        except CodegenError as e:
            warnings.warn(f"strata: {codegen} cannot compile kernel {func.sym_name.data} ({e}); it runs in the kernel interpreter")
            return lambda buffers, symbols: run_kernel(func, buffers, symbols)
        trace.kernel(func.sym_name.data, compiled.source, suffix)
        return compiled

    return compile_kernel


def compile_graph(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], options: dict[str, Any]) -> Callable:
    """The compiled callable for an ATen graph (boxed: it takes a list of arguments)."""
    try:
        imported = import_graph(gm)
    except UnsupportedGraph as e:
        warnings.warn(f"strata: this graph runs eagerly: {e}")
        return _boxed(lambda args: _as_list(gm(*args)))

    trace = Trace(options)
    module = imported.module
    trace.level("0_aten", module)
    names = [n.strip() for n in options["pipeline"].split(",") if n.strip()]
    run_pipeline(module, names, options["verify"], trace)
    trace.level("2_kernel", module)

    device = device_of(example_inputs)
    codegen = options["codegen"] or ("triton" if device.type == "cuda" else "llvm")
    _warn_fallbacks(module)
    compiled = CompiledGraph(module, kernel_compiler(codegen, device, trace), device)
    return _boxed(graph_outputs(compiled, imported))


def graph_outputs(compiled: CompiledGraph, imported) -> Callable[[list], list]:
    """The graph's callable in FX's calling convention: constants appended to the
    arguments; Nones and sizes put back among the tensors, where the graph returns them."""
    constants = imported.constants
    spec = imported.outputs
    if all(isinstance(s, int) and s == i for i, s in enumerate(spec)):
        return lambda args: compiled(list(args) + constants)
    from strata.runtime.bindings import bind_symbols
    from strata.runtime.index_eval import evaluate

    def call(args: list) -> list:
        full = list(args) + constants
        tensors = compiled(full)
        env = None
        out = []
        for s in spec:
            if s is None or isinstance(s, int):
                out.append(None if s is None else tensors[s])
            else:
                env = env or bind_symbols(compiled.arg_types, full, compiled.arg_symbols)
                out.append(evaluate(s, env))
        return out

    return call


def _warn_fallbacks(module: ModuleOp) -> None:
    names = sorted({op.overload_name for op in module.walk() if isinstance(op, aten.AtenOp)})
    for name in names:
        warnings.warn(f"strata: no lowering covers {name}; it runs as the eager kernel")


def _as_list(out: Any) -> list:
    return list(out) if isinstance(out, list | tuple) else [out]


def _boxed(fn: Callable[[list], list]) -> Callable:
    def call(args: list) -> list:
        return fn(args)

    call._boxed_call = True  # AOTAutograd passes the argument list itself
    return call
