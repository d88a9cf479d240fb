"""torch.export → a strata package (strata.aot.compile_and_package).

The exported program is decomposed with the table the JIT backend gives AOTAutograd
(frontend/backend.py), imported, lowered by the same pipeline and compiled by the same
code generators as a JIT compile of the graph; then, instead of a callable, its kernel
program is written as data (runtime/package_plan.py), with every kernel's machine code,
the weights and the manifest (runtime/package_format.py). Dims marked with
torch.export.Dim stay symbolic through every level: the package serves every size
their ranges allow, with no compile at load.
"""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path
from typing import Any

import sympy
import torch

import strata
from strata.dialects import kernel as kd
from strata.frontend import options as opts
from strata.frontend import pipeline_spec
from strata.frontend.attention.attention import keep_attention_whole
from strata.frontend.backend import _core_aten_decompositions
from strata.frontend.compile_graph import (
    _warn_fallbacks,
    device_of,
    kernel_compiler,
    pipeline_pass_options,
    run_pipeline,
)
from strata.frontend.capture.importer import ItemResult, UnsupportedGraph, import_graph
from strata.frontend.inspection.trace import Trace
from strata.passes.decompose import recording_declines
from strata.runtime import package_format, package_llvm
from strata.runtime.compiled_graph import CompiledGraph
from strata.runtime.package_format import PackagingError
from strata.runtime.package_plan import ProgramPlan, dtype_name, encode_value, int_code

_WEIGHT_KINDS = ("PARAMETER", "BUFFER", "CONSTANT_TENSOR")


def compile_and_package(exported_program: Any, path: str | os.PathLike, options: dict[str, Any] | None = None) -> Path:
    """Compiles `exported_program` (a torch.export.ExportedProgram) ahead of time and
    writes the package to `path`; returns the path. `options` are strata.compile's.
    A program strata cannot package raises PackagingError saying why."""
    return package_format.write(path, *package_parts(exported_program, options))


def package_bytes(exported_program: Any, options: dict[str, Any] | None = None) -> bytes:
    """The package compile_and_package writes, as bytes."""
    return package_format.serialize(*package_parts(exported_program, options))


def _without_matmul_templates(resolved: dict[str, Any], for_triton: bool) -> dict[str, Any]:
    """The options with max-autotune's matmul-to-dot taken out: a package's launchers
    are checked against a grammar of sizes, tiles and launches (runtime/package_triton.py)
    that a template's library tile (a torch.matmul call) is not in, so a package keeps
    its products as library calls; said where the pass would have made templates."""
    if pipeline_spec.MATMUL_PASS not in [s.name for s in pipeline_spec.parse(resolved["pipeline"])]:
        return resolved
    if for_triton:
        warnings.warn("strata: a package keeps matrix products as library calls (cuBLAS, oneDNN); max-autotune's "
                      "Triton matmul templates are not packaged; its other kernels are tuned as usual", stacklevel=3)
    return {**resolved, "pipeline": pipeline_spec.without(resolved["pipeline"], pipeline_spec.MATMUL_PASS)}


def _without_folded_attention(resolved: dict[str, Any], cuda: bool) -> dict[str, Any]:
    """On a GPU, the options with fold-grouped-attention taken out: a package runs its
    attention as torch's SDPA (no compiler in the serving process, so no split-key decode
    attention, runtime/decode_attention.py), and cuDNN's attention over folded rows is
    slower than over repeated heads (docs/performance-history.md, 2026-11-26, fourth)."""
    name = "fold-grouped-attention"
    if not cuda or name not in [s.name for s in pipeline_spec.parse(resolved["pipeline"])]:
        return resolved
    return {**resolved, "pipeline": pipeline_spec.without(resolved["pipeline"], name)}


def package_parts(exported_program: Any, options: dict[str, Any] | None) -> tuple[dict, dict, dict[str, bytes]]:
    """(manifest, program, files) of the package of `exported_program`."""
    from torch.export import ExportedProgram
    from torch.utils._pytree import treespec_dumps

    if not isinstance(exported_program, ExportedProgram):
        raise TypeError(f"compile_and_package takes a torch.export.ExportedProgram, not {type(exported_program).__name__}")
    started = time.perf_counter()
    resolved = opts.resolve(None, options)
    # Attention stays one op, as in a JIT compile (frontend/attention/attention.py): rewritten on a
    # functional copy of the program, before the decompositions would write it out.
    ep = exported_program.run_decompositions({})
    if keep_attention_whole(ep.graph_module):
        ep = _retraced(ep)
    ep = ep.run_decompositions(_core_aten_decompositions())
    inputs, weights, arguments = _inputs(ep)
    _check_outputs(ep)
    gm = ep.graph_module
    constant_outputs = _constant_outputs(gm)
    try:
        imported = import_graph(gm)
    except UnsupportedGraph as e:
        raise PackagingError(f"strata cannot represent this program: {e}") from None
    if imported.effect_tokens:
        raise PackagingError("the program has side effects (effect tokens), which a package does not hold")
    placeholders = [n.meta.get("val") for n in gm.graph.nodes if n.op == "placeholder"]
    device = device_of(placeholders, gm)
    codegen = resolved["codegen"] or ("triton" if device.type == "cuda" else "llvm")
    resolved = _without_matmul_templates(resolved, device.type == "cuda" or codegen == "triton")
    resolved = _without_folded_attention(resolved, device.type == "cuda")
    module = imported.module
    steps = pipeline_spec.steps(resolved["pipeline"])
    with recording_declines() as declines:
        run_pipeline(module, [n for n, _ in steps], resolved["verify"], None, None, pipeline_pass_options(resolved),
                     [o for _, o in steps])
    _warn_fallbacks(module, declines)
    compile_kernel = kernel_compiler(codegen, device, Trace(resolved), None, resolved["max_autotune"])
    compiled = CompiledGraph(module, compile_kernel, device)
    constants = [t.detach() for t in imported.constants]
    if codegen == "triton":  # Triton compiles a kernel at its first launch: launch each once
        compiled([*_example_arguments(ep, arguments), *constants])
    funcs = {op.sym_name.data: op for op in module.ops if isinstance(op, kd.FuncOp)}
    plan = ProgramPlan(compiled.program, funcs, compiled.kernels, device)
    files: dict[str, bytes] = {}
    kernels = _kernels(plan, codegen, device, files, _symbols(ep))
    weights = [_weight(w["name"], w["kind"], w["tensor"], files) for w in weights]
    for i, t in enumerate(constants):
        weights.append(_weight(f"graph_constant_{i}", "CONSTANT_TENSOR", t, files))
        arguments.append({"weight": f"graph_constant_{i}"})
    manifest = {
        "strata": strata.__version__,
        "torch": torch.__version__,
        "device": device.type,
        "target": _target(codegen, device, kernels, files),
        "inputs": [_input_spec(spec, plan.plan["arguments"]) for spec in inputs],
        "symbols": _symbols(ep),
        "outputs": [{"constant": encode_value(constant_outputs[i])} if i in constant_outputs else _output_spec(s)
                    for i, s in enumerate(imported.outputs)],
        "in_spec": treespec_dumps(ep.call_spec.in_spec),
        "out_spec": treespec_dumps(ep.call_spec.out_spec),
        "arguments": arguments,
        "weights": weights,
        "kernels": kernels,
        "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "compile_s": round(time.perf_counter() - started, 3),
    }
    return manifest, plan.plan, files


def _retraced(ep):
    """`ep` after attention was rewritten: strata::sdpa's result is laid out as torch's
    fused kernels' is not, so a `view` torch.export chose for their layout becomes a
    `reshape` (the same values: the program mutates nothing), which the decompositions
    make a view again wherever the new layout allows."""
    for n in ep.graph_module.graph.nodes:
        if n.op == "call_function" and n.target is torch.ops.aten.view.default:
            n.target = torch.ops.aten.reshape.default
    ep.graph_module.recompile()
    return ep


def _inputs(ep) -> tuple[list[dict | None], list[dict], list[dict]]:
    """The user inputs' specs (with the program argument each is, where it is one);
    the weights; and what each program argument is ({"input": j} or {"weight": name})."""
    from torch.export.graph_signature import InputKind

    specs, weights, arguments = [], [], []
    placeholders = {n.name: n for n in ep.graph_module.graph.nodes if n.op == "placeholder"}
    user = 0
    for spec in ep.graph_signature.input_specs:
        kind = spec.kind.name
        if spec.kind == InputKind.USER_INPUT:
            val = placeholders[spec.arg.name].meta.get("val")
            if not isinstance(val, torch.Tensor | torch.SymInt | int | float | bool | str | type(None)):
                raise PackagingError(f"input {spec.arg.name!r} is a {type(val).__name__}, which a package does not take")
            specs.append({"name": spec.arg.name, "index": user, "val": val, "argument": len(arguments)})
            if isinstance(val, torch.Tensor | torch.SymInt):
                arguments.append({"input": user})
            else:  # specialized by torch.export: written into the graph (_inline_constants)
                _inline_constant(placeholders[spec.arg.name], val)
            user += 1
        elif kind in _WEIGHT_KINDS:
            tensor = ep.state_dict.get(spec.target)
            if tensor is None:
                tensor = ep.constants.get(spec.target)
            if not isinstance(tensor, torch.Tensor):
                raise PackagingError(f"{kind.lower()} {spec.target!r} is not a tensor the program holds")
            weights.append({"name": spec.target, "kind": kind, "tensor": tensor})
            arguments.append({"weight": spec.target})
        else:
            raise PackagingError(f"input {spec.arg.name!r} is a {kind}, which a package does not hold")
    return specs, weights, arguments


def _inline_constant(node: torch.fx.Node, value: Any) -> None:
    """A placeholder torch.export specialized to `value`: its readers take the value."""
    def put(a: Any) -> Any:
        return value if a is node else a

    for user in list(node.users):
        user.args = torch.fx.node.map_aggregate(user.args, put)
        user.kwargs = torch.fx.node.map_aggregate(user.kwargs, put)
    node.graph.erase_node(node)


def _constant_outputs(gm: torch.fx.GraphModule) -> dict[int, Any]:
    """The outputs torch.export made constants (a float the program computed from
    constants), by position; the graph returns None in their place."""
    output = next(n for n in gm.graph.nodes if n.op == "output")
    values = list(output.args[0]) if isinstance(output.args[0], list | tuple) else [output.args[0]]
    constants = {i: v for i, v in enumerate(values) if isinstance(v, int | float | bool | str)}
    if constants:
        output.args = ([None if i in constants else v for i, v in enumerate(values)],)
    return constants


def _check_outputs(ep) -> None:
    from torch.export.graph_signature import OutputKind

    for spec in ep.graph_signature.output_specs:
        if spec.kind in (OutputKind.BUFFER_MUTATION, OutputKind.USER_INPUT_MUTATION):
            what = "buffer" if spec.kind == OutputKind.BUFFER_MUTATION else "input"
            raise PackagingError(f"the program writes to its {what} {spec.target!r}: a package runs programs that "
                                 "change none of their inputs or buffers")
        if spec.kind != OutputKind.USER_OUTPUT:
            raise PackagingError(f"the program returns a {spec.kind.name} ({spec.target!r}), which a package does not hold")


def _example_arguments(ep, arguments: list[dict]) -> list[Any]:
    from torch.utils._pytree import tree_flatten

    users, _ = tree_flatten(ep.example_inputs)
    weights = {**ep.state_dict, **ep.constants}
    return [users[a["input"]] if "input" in a else weights[a["weight"]] for a in arguments]


def _weight(name: str, kind: str, tensor: torch.Tensor, files: dict[str, bytes]) -> dict:
    """A weight's manifest entry; its bytes (row-major, little-endian) go in `files`."""
    t = tensor.detach().to("cpu").contiguous()
    file = f"weights/{len(files):04d}_{_safe(name)}.bin"
    files[file] = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""
    return {"name": name, "kind": kind, "file": file, "dtype": dtype_name(t.dtype), "shape": list(t.shape),
            "device": str(tensor.device)}


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)[:80]


def _kernels(plan: ProgramPlan, codegen: str, device: torch.device, files: dict[str, bytes],
             ranges: dict[str, list]) -> dict[str, dict]:
    kernels = {}
    for name, (compiled, func) in plan.kernels.items():
        if codegen == "llvm":
            meta, kernel_files = package_llvm.pack_kernel(name, compiled, func)
            files.update(kernel_files)
        else:
            from strata.runtime import package_triton

            # the symbols' ranges: the launcher's tiles for sizes the example did not have
            meta, kernel_files = package_triton.pack_kernel(compiled, device, ranges=ranges)
            named = {k: f"kernels/{name}/{k}" for k in kernel_files}
            files.update({named[k]: data for k, data in kernel_files.items()})
            meta = {"kind": "triton", "meta": meta, "files": named}
        kernels[name] = meta
    return kernels


def _target(codegen: str, device: torch.device, kernels: dict[str, dict], files: dict[str, bytes]) -> dict:
    if codegen == "llvm":
        target: dict[str, Any] = {"cpu": package_llvm.target()}
        if any(k["threads"] == "pool" for k in kernels.values()):
            pool, pool_files = package_llvm.pack_pool()
            files.update(pool_files)
            target["pool"] = pool
        return target
    from strata.runtime import package_triton

    return {"gpu": package_triton.target_of(device)}


def _input_spec(spec: dict, arguments: list[dict]) -> dict:
    val = spec["val"]
    if not isinstance(val, torch.Tensor | torch.SymInt):  # torch.export specialized it: the call must pass it
        return {"name": spec["name"], "index": spec["index"], "kind": "constant", "value": val}
    argument = arguments[spec["argument"]]
    if isinstance(val, torch.SymInt):
        return {"name": spec["name"], "index": spec["index"], "kind": "int", "symbol": argument.get("symbol")}
    return {"name": spec["name"], "index": spec["index"], "kind": "tensor", "dtype": dtype_name(val.dtype),
            "device": val.device.type, "shape": [d if isinstance(d, int) else str(d) for d in val.shape],
            "size_code": argument["sizes"], "bind": argument["bind"]}


def _symbols(ep) -> dict[str, list[int | None]]:
    """Each shape symbol's range, as torch.export proved it (None: unbounded)."""
    return {str(s): [_bound(r.lower), _bound(r.upper)] for s, r in ep.range_constraints.items()}


def _bound(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError, AttributeError):  # torch's int_oo, sympy's oo
        return None


def _output_spec(spec: Any) -> Any:
    if spec is None or isinstance(spec, int):
        return spec if spec is None else {"result": spec}
    if isinstance(spec, sympy.Expr):
        return {"int": int_code(spec)}
    if isinstance(spec, ItemResult):
        raise PackagingError("the program returns an int read from a tensor (item()), which a package does not hold yet")
    raise PackagingError(f"the program returns {spec!r}, which a package does not hold")
