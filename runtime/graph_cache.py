"""The on-disk cache of whole graphs: aten module in, kernel-level module out.

A warm compile (a second process compiling the same model) would otherwise run the
pass pipeline again only to find every kernel in the kernel cache: for a small graph
the passes are most of strata's compile time. The pipeline is a pure function of the
aten module's text (types, strides, symbols and source locations included) and the
pass list, so that text, the pass list, the back end and a digest of strata's own
source are the key, and the kernel-level module is the value, as the text of its program
and of each kernel.func printed on its own (dialects/kernel_text.py: a warm compile
parses only the program), with the reasons the decompositions gave for the ops they
left to eager (their warnings name them).

An entry is written to a temporary name and renamed into place (runtime/cache.py); one
that does not parse, or whose text does not match its digest, is a miss, and the graph is compiled afresh.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import pathlib

from xdsl.dialects.builtin import ModuleOp

from strata.dialects.kernel_text import KernelText, split
from strata.runtime import cache

KIND = "graphs"
SUFFIX = ".json"
log = logging.getLogger("strata.cache")

# The folders whose code decides what the pipeline makes of a graph.
_SOURCE_FOLDERS = ("dialects", "passes", "frontend")


@functools.cache
def source_digest() -> str:
    """A digest of the compiler's Python source above code generation: a change to any
    pass or dialect never serves a program it would no longer produce."""
    root = pathlib.Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for folder in _SOURCE_FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()


def key(aten_text: str, pipeline: list[str], codegen: str, device: str, options: dict) -> str:
    """Every option but tracing's and the caches' is part of the key: any of them may change what the
    passes do (fallback_random keeps random ops eager, for one)."""
    settings = cache.settings_key(options, ("capture_cache", "dynamo_cache"))
    return cache.cache_key(KIND, aten_text, ",".join(pipeline), codegen, device, settings, source_digest())


def read_program(kind: str, key: str, with_constants: bool = False) -> tuple | None:
    """The program text, kernels and declines stored under `key` in the cache folder
    `kind` (and the constants stored beside them, with_constants), or None: a missing
    entry, or one that does not decode or whose text does not match its digest (a
    corrupt or foreign entry: the caller compiles afresh)."""
    data = cache.read(kind, key, SUFFIX)
    if data is None:
        return None
    try:
        entry = json.loads(data)
        program, kernels, constants = entry["program"], entry["kernels"], entry.get("constants", [])
        if _digest(program, kernels, constants) != entry["digest"]:
            raise ValueError("the entry's digest does not match its text")
        declines = [(str(a), None if b is None else str(b), str(c)) for a, b, c in entry["declines"]]
        found = str(program), [KernelText.from_json(k) for k in kernels], declines
        return (*found, constants) if with_constants else found
    except Exception as e:  # noqa: BLE001
        log.info("%s cache entry %s is unreadable (%s: %s); compiling afresh", kind, key, type(e).__name__, e)
        return None


def write_program(kind: str, key: str, program: str, kernels: list[KernelText], declines: list,
                  constants: list | None = None) -> None:
    stored = [k.to_json() for k in kernels]
    entry = {"program": program, "kernels": stored, "digest": _digest(program, stored, constants),
             "declines": [list(d) for d in declines]}
    if constants:
        entry["constants"] = constants
    cache.store(kind, key, SUFFIX, json.dumps(entry).encode())


def _digest(program: str, kernels: list[dict], constants: list | None = None) -> str:
    parts = [program, kernels, constants] if constants else [program, kernels]
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def read(graph_key: str) -> tuple[str, list[KernelText], list[tuple[str, str | None, str]]] | None:
    """The program text, kernels and declines stored under `graph_key`, or None; the
    module is `kernel_text.join(program, kernels)`. Verified when it was written, and
    unchanged since (the digest): the verifiers would cost a third of a warm compile."""
    return read_program(KIND, graph_key)


def merge_identical_kernels(module: ModuleOp) -> int:
    """Keeps one kernel.func of each set whose code is the same but for the name (one
    per layer of a model: GPT-2's 84 launches run 19 kernels) and points every launch
    at it; returns how many it removed. The cached text, the parse of a warm compile
    and the printing of each kernel for its cache key shrink by as much."""
    from strata.dialects import kernel as kd

    first: dict[str, str] = {}
    renamed: dict[str, str] = {}
    for func in [op for op in module.ops if isinstance(op, kd.FuncOp)]:
        name = func.sym_name.data
        text = str(func).replace(f"@{name} ", "@_ ", 1)
        if text in first:
            renamed[name] = first[text]
            module.body.block.erase_op(func)
        else:
            first[text] = name
    if renamed:
        from xdsl.dialects.builtin import SymbolRefAttr

        for op in module.walk():
            if isinstance(op, kd.LaunchOp) and op.callee.string_value() in renamed:
                op.callee = SymbolRefAttr(renamed[op.callee.string_value()])
    return len(renamed)


def write(graph_key: str, module: ModuleOp, declines: list[tuple[str, str | None, str]]) -> tuple[str, list[KernelText]]:
    """Stores the module as its program's text and its kernels' (kernel_text.split);
    returns them."""
    program, kernels = split(module)
    write_program(KIND, graph_key, program, kernels, declines)
    return program, kernels
