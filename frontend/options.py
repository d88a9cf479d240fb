"""Compile options and modes, with torch.compile's names and meanings.

`strata.list_options()` lists every option with its default; `list_mode_options()`
what each mode sets. An unknown option, value or mode raises ValueError naming the
valid ones: a typo must never be silently ignored.
"""

from __future__ import annotations

from typing import Any

from strata.passes.registry import DEFAULT_PIPELINE

OPTIONS: dict[str, tuple[Any, str]] = {
    "codegen": (None, 'kernel code generator: "llvm" (CPU), "triton" (GPU; CPU tensors run in '
                      "Triton's interpreter), or None to follow the tensors' device"),
    "pipeline": (",".join(DEFAULT_PIPELINE), "the passes run on each graph, by name, comma-separated"),
    "trace.enabled": (False, "write each graph's IR after every level and its kernels to trace.dir"),
    "trace.dir": (None, "where traces go (default: ./strata_trace)"),
    "trace.graph_diagram": (False, "draw each fused graph (kernels, library calls, eager fallbacks, buffers) "
                                   "as graph.dot, .svg and .png in the trace folder (needs graphviz's dot "
                                   "for .svg and .png); turns tracing on"),
    "max_autotune": (False, "tune kernel configurations by timing them (set by the max-autotune modes)"),
    "triton.cudagraphs": (False, "replay compiled graphs as CUDA graphs (set by reduce-overhead and max-autotune)"),
    "epilogue_fusion": (True, "fuse pointwise epilogues into matmul templates under max_autotune"),
    "fallback_random": (False, "run random ops as eager does, bit for bit"),
    "emulate_precision_casts": (False, "round f16/bf16 intermediates inside a fused kernel after every op, "
                                       "as eager does (off: they stay in f32 and are rounded where stored, "
                                       "as TorchInductor does)"),
    "attention_patterns": (True, "run attention written out by hand (softmax(q @ kᵀ · s, causal mask or none) @ v) "
                                 "as one scaled_dot_product_attention call (frontend/attention_pattern.py)"),
    "verify": (True, "verify the IR after every pass"),
    "graph_cache": (True, "reuse a graph's lowering from the disk cache when the same graph was compiled "
                          "before (STRATA_CACHE_DIR)"),
    "capture_cache": (True, "with graph_cache: reuse a whole inference compile, AOTAutograd's trace "
                            "included, when Dynamo captured the same graph before"),
    "dynamo_cache": (True, "with capture_cache: keep Dynamo's transformed bytecode and guards on disk "
                           "(STRATA_CACHE_DIR/dynamo) and load them in a later process, which then runs no "
                           "Dynamo trace (frontend/dynamo_cache.py). The guards that say which object a name "
                           "refers to (ID_MATCH, CLOSURE_MATCH, ...) are saved with a description of the "
                           "object (a function by qualified name and code, a class or module by name) and "
                           "rebuilt on the calling frame's objects when they match it "
                           "(frontend/identity_guards.py). Saved only when every graph is an inference graph "
                           "the capture cache holds"),
}

MODES: dict[str, dict[str, Any]] = {
    "default": {},
    "reduce-overhead": {"triton.cudagraphs": True},
    "max-autotune": {"max_autotune": True, "triton.cudagraphs": True},
    "max-autotune-no-cudagraphs": {"max_autotune": True},
}

CHOICES: dict[str, tuple[Any, ...]] = {"codegen": (None, "llvm", "triton")}


def list_options() -> dict[str, Any]:
    """Every option and its default value."""
    return {k: v for k, (v, _) in OPTIONS.items()}


def describe_options() -> dict[str, str]:
    return {k: doc for k, (_, doc) in OPTIONS.items()}


def list_mode_options(mode: str | None = None) -> dict[str, Any]:
    """The options each mode sets (or those of one mode)."""
    if mode is None:
        return {m: dict(o) for m, o in MODES.items()}
    check_mode(mode)
    return dict(MODES[mode])


def check_mode(mode: str | None) -> None:
    if mode is not None and mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; strata's modes are: {', '.join(MODES)}")


def resolve(mode: str | None = None, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """The full option dict for a mode and user options (options win over the mode)."""
    check_mode(mode)
    resolved = list_options()
    resolved.update(MODES[mode or "default"])
    for key, value in (options or {}).items():
        if key not in OPTIONS:
            raise ValueError(f"unknown option {key!r}; strata's options are: {', '.join(OPTIONS)}")
        if key in CHOICES and value not in CHOICES[key]:
            raise ValueError(f"option {key!r} must be one of {CHOICES[key]}, not {value!r}")
        resolved[key] = value
    return resolved
