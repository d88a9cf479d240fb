"""Compiling one ATen FX graph: import, the pass pipeline, code generation, runtime.

This is the function AOTAutograd calls for each forward (and backward) graph. A graph
strata cannot represent at all runs eagerly, with one warning saying why; an op no
lowering covers runs as its eager kernel; a kernel a code generator rejects runs in the
kernel interpreter. Each of those is announced once, and none changes a result.

Everything here can be watched: each pass logs ops in and out and its time
(STRATA_LOGS=passes), each kernel its code generation and cache hit or miss
(`codegen`, `cache`), each graph a summary (`graphs`); strata.explain collects the
same summaries as data (frontend/inspection/report.py). A pass or code generator that raises is
reported as a CompileError naming the pass, the op and the user's source line.
"""

from __future__ import annotations

import itertools
import logging
import time
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.fx
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp

from strata.dialects import aten
from strata.dialects import kernel as kd
from strata.dialects import kernel_text
from strata.dialects.context import strata_context
from strata.dialects.types import TensorType, sym
from strata.frontend import pipeline_spec
from strata.frontend.caches import capture_cache
from strata.frontend.inspection import logs
from strata.frontend.inspection import report as reports
from strata.frontend.capture.effects import with_tokens
from strata.frontend.inspection.errors import CompileError, describe_failure, describe_kernel_failure, failing_op
from strata.frontend.capture.importer import IntComputation, ItemResult, OpaqueArgument, UnsupportedGraph, import_graph
from strata.frontend.capture.storage_offsets import guarded
from strata.frontend.device_inputs import on_device
from strata.frontend.inspection.trace import Trace
from strata.passes.decompose import recording_declines
from strata.passes.fusion.traffic import graph_bytes, program_bytes
from strata.passes.registry import PASSES
from strata.passes.specialize_symbols import specialized
from strata.runtime import cache, cuda_graphs, in_place
from strata.runtime.compiled_graph import CompiledGraph

__all__ = ["CompileError", "compile_graph", "run_pipeline"]

passes_log = logs.logger("passes")
ir_log = logs.logger("ir")
codegen_log = logs.logger("codegen")
cache_log = logs.logger("cache")
code_log = logs.logger("output_code")

_graph_numbers = itertools.count()


def device_of(example_inputs: Sequence[Any], gm: torch.fx.GraphModule | None = None) -> torch.device:
    """The inputs' device (an accelerator's when CPU tensors come beside its tensors, as
    index_put's CPU indices may); for a graph with no tensor input, that of the tensors
    it makes."""
    devices = [x.device for x in example_inputs if isinstance(x, torch.Tensor)]
    if devices:
        return next((d for d in devices if d.type != "cpu"), devices[0])
    for n in gm.graph.nodes if gm is not None else ():
        vals = n.meta.get("val")
        for v in vals if isinstance(vals, list | tuple) else [vals]:
            if isinstance(v, torch.Tensor):
                return v.device
    return torch.device("cpu")


def run_pipeline(
    module: ModuleOp,
    names: Sequence[str],
    verify: bool = True,
    trace: Trace | None = None,
    report: reports.GraphReport | None = None,
    pass_options: dict[str, dict[str, Any]] | None = None,
    step_options: Sequence[dict[str, Any]] | None = None,
) -> dict[str, float]:
    """Runs the named passes in order (with the options `pass_options` gives a pass
    by name, and over them those `step_options` gives the pass at each place, as the
    `pipeline` option's braces do); returns the seconds each took."""
    ctx = strata_context()
    times: dict[str, float] = {}
    count = passes_log.isEnabledFor(logging.INFO) or report is not None
    for i, name in enumerate(names):
        if name not in PASSES:
            raise ValueError(f"unknown pass {name!r}; strata's passes are: {', '.join(PASSES)}")
        if name == "fuse":
            if trace is not None:
                trace.level("1_prim", module)
            if report is not None:
                report.ops["prim"] = reports.count_ops(module)
                report.bytes_unfused = _graph_bytes(module, report)
        before = reports.count_ops(module) if count else None
        start = time.perf_counter()
        try:
            given = {**(pass_options or {}).get(name, {}), **(step_options[i] if step_options else {})}
            PASSES[name]()(**given).apply(ctx, module)
            if verify:
                module.verify()
        except Exception as e:
            raise describe_failure(f"pass {name!r}", e, failing_op(e)) from e
        seconds = time.perf_counter() - start
        times[name] = times.get(name, 0.0) + seconds
        if report is not None:
            report.pass_times.append((name, seconds))
        if before is not None and passes_log.isEnabledFor(logging.INFO):
            passes_log.info("%s: %s in %s", name, _ops_change(before, reports.count_ops(module)), logs.ms(seconds))
        if ir_log.isEnabledFor(logging.INFO):
            ir_log.info("after %s:\n%s", name, module)
    return times


def _ops_change(before: dict[str, int], after: dict[str, int]) -> str:
    """`183 ops -> 412 ops (aten 183 -> 2, prim 0 -> 410)`."""
    total = f"{sum(before.values())} ops -> {sum(after.values())} ops"
    changed = [
        f"{d} {before.get(d, 0)} -> {after.get(d, 0)}"
        for d in sorted(set(before) | set(after))
        if before.get(d, 0) != after.get(d, 0)
    ]
    return total + (f" ({', '.join(changed)})" if changed else ", unchanged")


def _graph_bytes(module: ModuleOp, report: reports.GraphReport) -> reports.Bytes | None:
    fns = [op for op in module.ops if isinstance(op, func.FuncOp)]
    return reports.as_bytes(graph_bytes(fns[0]), report.symbols) if fns else None


def _tuning(options: dict) -> tuple[bool, bool]:
    """(max_autotune, host_bound) for kernel_compiler: without CUDA graphs, every
    launch's host time is paid."""
    return options["max_autotune"], options["max_autotune"] and not options["triton.cudagraphs"]


def kernel_compiler(
    codegen: str, device: torch.device, trace: Trace, report: reports.GraphReport | None = None, max_autotune: bool = False,
    host_bound: bool = False,
) -> Callable[[kernel_text.Kernel], Any]:
    """compile_kernel for the chosen back end, falling back to the kernel interpreter.
    host_bound: max-autotune without CUDA graphs, whose tuner counts each candidate's
    host time too (triton_autotune)."""
    from strata.codegen.errors import CodegenError

    if codegen == "triton":
        from strata.codegen.triton_gpu import compile_kernel as triton_compile

        def generate(func: kernel_text.KernelText):
            return triton_compile(func, device=device.type, max_autotune=max_autotune, host_bound=host_bound)

        suffix = ".py"
    else:
        from strata.codegen.llvm_cpu import compile_kernel as generate

        suffix = ".ll"
    kernels = {k.name: k for k in report.kernels} if report is not None else {}
    # Kernels whose text is the same but for the name (one per layer of a model) are
    # compiled once per graph: a 12-layer model compiles and loads a layer's kernels once.
    same_code: dict[str, tuple[str, Any]] = {}
    # A graph read from a cache has one kernel.func per distinct kernel, launched many
    # times (graph_cache.merge_identical_kernels): each is printed and logged once.
    by_func: dict[kernel_text.Kernel, Any] = {}  # by identity (xDSL ops and KernelTexts hash so)

    def compile_kernel(kernel: kernel_text.Kernel):
        compiled = by_func.get(kernel)
        if compiled is not None:
            return compiled
        # A kernel.func is printed once, here; its generator keys its cache on that text.
        func = kernel_text.KernelText.of(kernel) if isinstance(kernel, kd.FuncOp) else kernel
        name = func.name
        text = func.text.replace(f"@{name} ", "@_ ", 1)
        if text in same_code:
            first, compiled = same_code[text]
            codegen_log.info("%s: the same code as %s", name, first)
            if name in kernels:
                kernels[name].codegen, kernels[name].compile_s, kernels[name].cache = codegen, 0.0, f"same code as {first}"
        else:
            compiled = compile_new(func)
            same_code[text] = (name, compiled)
        by_func[kernel] = compiled
        return compiled

    def compile_new(func: kernel_text.KernelText):
        name = func.name
        entry = kernels.get(name)
        writes = cache.writes
        start = time.perf_counter()
        try:
            compiled = generate(func)
        except CodegenError as e:
            warnings.warn(
                f"strata: {codegen} cannot compile kernel {name} ({e}); it runs in the kernel interpreter"
                f" [kernel from {', '.join(func.source_ops)}]"
            )
            codegen_log.info("%s: %s cannot compile it (%s); it runs in the kernel interpreter", name, codegen, e)
            if entry is not None:
                entry.codegen, entry.interpreted = codegen, str(e)
            from strata.runtime.kernel_interpreter import run_kernel  # xDSL's interpreters: slow to import

            parsed = kernel_text.as_func(func)
            return lambda buffers, symbols: run_kernel(parsed, buffers, symbols)
        except Exception as e:
            raise describe_kernel_failure(codegen, kernel_text.as_func(func), e) from e
        seconds = time.perf_counter() - start
        hit = cache.writes == writes
        # A kernel read from the cache has no source until asked for (LLVM: generating
        # it costs more than the rest of a warm compile), so only count when logged.
        wanted = entry is not None or codegen_log.isEnabledFor(logging.INFO)
        lines = compiled.source.count("\n") + 1 if wanted else 0
        codegen_log.info("%s: %s, %d lines, in %s; from %s", name, codegen, lines, logs.ms(seconds), ", ".join(func.source_ops))
        cache_log.info("%s: %s (%s)", name, "hit" if hit else "miss: generated and stored", codegen)
        if code_log.isEnabledFor(logging.INFO):
            code_log.info("%s (%s):\n%s", name, codegen, compiled.source)
        if entry is not None:
            entry.codegen, entry.compile_s, entry.cache, entry.lines = codegen, seconds, "hit" if hit else "miss", lines
        if trace.folder is not None:
            trace.kernel(name, compiled.source, suffix)
        return compiled

    return compile_kernel


def compile_graph(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], options: dict[str, Any], kind: str = "forward") -> Callable:
    """The compiled callable for an ATen graph (boxed: it takes a list of arguments)."""
    number = next(_graph_numbers)
    compile_id = _compile_id()
    label = f"graph {number}" + (f" ({compile_id})" if compile_id else "")
    with logs.graph_context(label):
        return _compile(gm, example_inputs, options, number, compile_id, kind)


def _compile(gm, example_inputs, options, number: int, compile_id: str | None, kind: str) -> Callable:
    label = logs.current_graph.get()
    started = time.perf_counter()
    report = reports.GraphReport(number, kind, compile_id, reports.captured_function(gm)) if reports.wanted() else None
    if _is_recompile():
        logs.logger("graphs").info("a recompile (Dynamo compile %s): TORCH_LOGS=recompiles says which guard failed", compile_id)
    try:
        imported = import_graph(gm)
    except UnsupportedGraph as e:
        warnings.warn(f"strata: this graph runs eagerly: {e}")
        if report is not None:
            report.eager_reason = str(e)
            report.total_s = time.perf_counter() - started
            reports.publish(report)
        return _boxed(lambda args: _as_list(gm(*args)))

    trace = Trace(options, number)
    module = imported.module
    if report is not None:
        report.import_s = time.perf_counter() - started
        report.symbols = reports.symbol_hints(gm)
        report.ops["aten"] = reports.count_ops(module)
        report.bytes_eager = _graph_bytes(module, report)
    trace.level("0_aten", module)
    device = device_of(example_inputs, gm)
    codegen = options["codegen"] or ("triton" if device.type == "cuda" else "llvm")
    steps = pipeline_spec.steps(options["pipeline"])  # checked when the options were resolved
    module, declines, kernels = _lowered(module, steps, options, codegen, device, trace, report)
    trace.level("2_kernel", module)
    if report is not None:
        report.ops["kernel"] = reports.count_ops(module)
        programs = [op for op in module.ops if isinstance(op, kd.ProgramOp)]
        if programs:
            report.bytes_fused = reports.as_bytes(program_bytes(programs[0]), report.symbols)
            reports.fill_program(report, module, declines)
    if options.get("trace.graph_diagram"):
        try:
            trace.diagram(module, declines)
        except Exception as e:  # a picture must never cost the compile
            warnings.warn(f"strata: trace.graph_diagram could not draw {label}: {type(e).__name__}: {e}")

    _warn_fallbacks(module, declines)
    codegen_start = time.perf_counter()
    funcs = None if kernels is None else {k.name: k for k in kernels}  # printed once, for the cache
    compiled = CompiledGraph(module, kernel_compiler(codegen, device, trace, report, *_tuning(options)), device,
                             funcs=funcs, written_back=_written_back(imported, kind), specialize=specialized)
    if report is not None:
        report.codegen_s = time.perf_counter() - codegen_start
        report.total_s = time.perf_counter() - started
        reports.publish(report)
    imported.constants = constants_on_device(imported.constants, compiled.program, device)
    # (the device copy of a 0-d input kept while its value repeats: not where effect
    # tokens stand among the inputs, which the program's arguments then do not match)
    call = on_device(graph_outputs(compiled, imported), example_inputs, device,
                     None if imported.effect_tokens else compiled.program)
    call = with_tokens(call, imported.effect_tokens)  # before on_device reads the args
    call = _in_cuda_graph(call, module, device, kind, options)
    safe = guarded(call, gm)  # eager where as_strided's input moved in its storage
    capture = capture_cache.current()
    if capture is not None and kind == "forward":
        if imported.effect_tokens or safe is not call:
            capture.refuse("effect tokens or a storage-offset guard")
        elif list(imported.outputs) != list(range(len(imported.outputs))):
            capture.refuse("an output that is not a tensor the program makes")
        else:
            capture_cache.keep_constants(capture, imported.constants)
            capture_cache.check_wrapper(gm, example_inputs, capture)
        capture.declines = declines
    return _boxed(safe)


def _written_back(imported, kind: str) -> dict[int, int]:
    """{program result: program argument} for the outputs AOTAutograd copies back into
    inputs (runtime/in_place.py); none where effect tokens shift the arguments."""
    if imported.effect_tokens:
        return {}
    spec = imported.outputs
    return {spec[o]: j for o, j in in_place.written_back(kind).items() if o < len(spec) and isinstance(spec[o], int)}


def _in_cuda_graph(call: Callable[[list], list], module: ModuleOp, device: torch.device, kind: str, options) -> Callable:
    # A graph that reads data to size or fill what follows (nonzero, item()) syncs
    # with the host on each call: no CUDA graph can record that, as in Inductor.
    from strata.runtime.data_dependent import reads_data_on_host

    if not options["triton.cudagraphs"]:
        return call
    if reads_data_on_host(module):
        cuda_graphs.log.info("no CUDA graph: the graph reads tensor data on the host (nonzero, item(), a size from data)")
        return call
    return cuda_graphs.wrap(call, device, kind, _fixed_shapes(module))


def _fixed_shapes(module: ModuleOp) -> bool:
    """Whether the compiled program's arguments have no shape symbols: static sizes and
    strides, nothing bound at a call."""
    programs = [op for op in module.ops if isinstance(op, kd.ProgramOp)]
    if len(programs) != 1 or any(programs[0].symbol_names):
        return False
    program = programs[0]
    sizes = [d for t in program.function_type.inputs.data if isinstance(t, TensorType) for d in t.dims]
    strides = [d for s in program.strides for d in s]
    return all(sym(d).is_Integer for d in sizes + strides)


def compile_captured(program: str, kernels: list[kernel_text.KernelText], declines: list, constants: list[torch.Tensor],
                     example_inputs: Sequence[Any], options: dict[str, Any]) -> Callable:
    """The compiled callable (boxed) for a program the capture cache stored
    (frontend/caches/capture_cache.py): no import, no pipeline, only kernels to load, each by
    its text (a kernel.func is parsed only where its code generator's cache misses).
    The graph's constant tensors follow the arguments, as graph_outputs passes them."""
    from strata.runtime import parsed_programs

    number = next(_graph_numbers)
    with logs.graph_context(f"graph {number}"):
        module = parsed_programs.parse(program)  # verified when it was written, unchanged since (its digest)
        device = device_of(example_inputs)
        codegen = options["codegen"] or ("triton" if device.type == "cuda" else "llvm")
        _warn_fallbacks(module, declines)
        trace = Trace(options, number)
        compile_kernel = kernel_compiler(codegen, device, trace, None, *_tuning(options))
        compiled = CompiledGraph(module, compile_kernel, device, funcs={k.name: k for k in kernels}, specialize=specialized)
        constants = constants_on_device(constants, compiled.program, device)
        call = on_device(lambda args: compiled(list(args) + constants), example_inputs, device, compiled.program)
        cache_log.info("graph: hit (the whole compile read from the capture cache)")
        return _boxed(_in_cuda_graph(call, module, device, "forward", options))


def constants_on_device(constants: list, program: kd.ProgramOp, device: torch.device) -> list:
    """The graph's tensor constants on its device. A constant torch made on the CPU (a
    0-d tensor a model builds in forward) mixes with CUDA tensors in eager; a kernel
    can read only its device's memory. One the program returns as it is stays put
    (eager returns it there)."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    returned = set(program.block.last_op.operands) if isinstance(program.block.last_op, kd.ReturnOp) else set()
    first = len(program.block.args) - len(constants)
    with unset_fake_temporarily():  # a compile runs under Dynamo's fake mode: these are real tensors
        return [
            c.to(device) if isinstance(c, torch.Tensor) and c.device != device and program.block.args[first + i] not in returned else c
            for i, c in enumerate(constants)
        ]


def pipeline_pass_options(options: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The options the compile options give passes of the pipeline, by pass name."""
    # fallback_random: random ops stay aten and run as eager's kernels.
    # index_bounds_checks: kernels check a user's indices as eager does (passes/fusion/gather.py),
    # and the program an int index (prim.check_scalar_index).
    return {
        "decompose": {
            "fallback_random": bool(options["fallback_random"]),
            "index_bounds_checks": bool(options["index_bounds_checks"]),
        },
        "fuse": {
            "emulate_precision_casts": bool(options["emulate_precision_casts"]),
            "index_bounds_checks": bool(options["index_bounds_checks"]),
        },
    }


def _lowered(module: ModuleOp, steps: list[tuple[str, dict[str, Any]]], options, codegen: str, device: torch.device,
             trace: Trace, report):
    """The kernel-level module for an aten module, the declines the decompositions
    gave, and its kernels' KernelTexts where the graph cache printed them (else None):
    from the graph cache (runtime/graph_cache.py) when this graph was lowered
    before, else by running the pipeline. A compile that traces or explains itself
    runs the pipeline, whose every level it records."""
    names, step_options = [n for n, _ in steps], [o for _, o in steps]
    pass_options = pipeline_pass_options(options)
    observed = trace.folder is not None or report is not None or options.get("trace.graph_diagram")
    capture = capture_cache.current()
    if observed or not options.get("graph_cache", True):
        if capture is not None:
            capture.refuse("a traced or reported compile")
        with recording_declines() as declines:
            run_pipeline(module, names, options["verify"], trace, report, pass_options, step_options)
        return module, declines, None
    from strata.runtime import graph_cache, parsed_programs

    key = graph_cache.key(str(module), names, codegen, device.type, options)
    hit = graph_cache.read(key)
    if hit is not None:
        cache_log.info("graph: hit (the pipeline's result read from the graph cache)")
        program, kernels, declines = hit
        if capture is not None:
            capture.program, capture.kernels = program, kernels
        return kernel_text.join(parsed_programs.parse(program), kernels), declines, kernels
    with recording_declines() as declines:
        run_pipeline(module, names, options["verify"], trace, report, pass_options, step_options)
    graph_cache.merge_identical_kernels(module)  # unobserved: no report names each kernel
    program, kernels = graph_cache.write(key, module, declines)
    parsed_programs.store(program, kernel_text.program_module(module))  # a warm compile's parse, done
    if capture is not None:
        capture.program, capture.kernels = program, kernels
    cache_log.info("graph: miss: lowered and stored")
    return module, declines, kernels


def graph_outputs(compiled: CompiledGraph, imported) -> Callable[[list], list]:
    """The graph's callable in FX's calling convention: constants appended to the
    arguments; Nones and sizes put back among the tensors, where the graph returns them."""
    constants = imported.constants
    spec = imported.outputs
    if all(isinstance(s, int) and s == i for i, s in enumerate(spec)):
        return lambda args: compiled(list(args) + constants)
    from strata.runtime.bindings import bind_symbols
    from strata.runtime.index_values import evaluate

    def call(args: list) -> list:
        full = list(args) + constants
        tensors = compiled(full)
        env = None
        out = []
        for s in spec:
            if s is None or isinstance(s, int):
                out.append(None if s is None else tensors[s])
            elif isinstance(s, OpaqueArgument):
                out.append(full[s.index])
            elif isinstance(s, ItemResult):
                out.append(int(tensors[s.index].item()))
            elif isinstance(s, IntComputation):
                out.append(s(full))
            else:
                env = env or bind_symbols(compiled.arg_types, full, compiled.arg_symbols)
                out.append(evaluate(s, env))
        return out

    return call


def _current_compile_id():
    try:
        from torch._guards import CompileContext

        return CompileContext.current_compile_id()
    except Exception:  # outside Dynamo (a graph compiled by hand)
        return None


def _compile_id() -> str | None:
    """Dynamo's id of the frame compile this graph belongs to (`0/0`: frame 0, first
    compile), as its logs and TORCH_LOGS print it."""
    cid = _current_compile_id()
    return str(cid) if cid is not None else None


def _is_recompile() -> bool:
    cid = _current_compile_id()
    return bool(getattr(cid, "frame_compile_id", 0))


def _warn_fallbacks(module: ModuleOp, declines: list[tuple[str, str | None, str]]) -> None:
    ops: dict[str, aten.AtenOp] = {}
    for op in module.walk():
        if isinstance(op, aten.AtenOp):
            ops.setdefault(op.overload_name, op)
    for name in sorted(ops):
        op = ops[name]
        reason = reports.fallback_reason(op, declines)
        if "fallback_random:" in reason:
            continue  # the user asked for eager random ops
        source = reports.source_text(op)
        where = f" at {source.partition(' @ ')[2]}" if source and " @ " in source else ""
        warnings.warn(f"strata: no lowering covers {name} ({reason}){where}; it runs as the eager kernel")


def _as_list(out: Any) -> list:
    return list(out) if isinstance(out, list | tuple) else [out]


def _boxed(fn: Callable[[list], list]) -> Callable:
    def call(args: list) -> list:
        return fn(args)

    call._boxed_call = True  # AOTAutograd passes the argument list itself
    return call
