"""Compile options and modes, with torch.compile's names and meanings.

`strata.list_options()` lists every option with its default; `list_mode_options()`
what each mode sets. Each option declares the values it takes beside its default and
its text, and `resolve` (run by strata.compile and make_backend, before anything is
traced) checks them: an unknown option, a value of the wrong type or outside an
option's choices, or an unknown mode raises ValueError naming the option, the value
and what is allowed (TypeError where `options` itself is no dict, or `mode` no str).
A typo must never be silently ignored, nor `"false"` be taken for true.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from strata.frontend import pipeline_spec
from strata.passes.registry import DEFAULT_PIPELINE


@dataclass(frozen=True)
class Values:
    """The values an option takes: `text` names them in an error; `admits` says
    whether a value is one."""

    text: str
    types: tuple[type, ...] = ()
    choices: tuple[Any, ...] = ()

    def admits(self, value: Any) -> bool:
        if self.choices:
            return any(value is c or (type(value) is type(c) and value == c) for c in self.choices)
        return isinstance(value, self.types)

    def check(self, name: str, value: Any) -> None:
        if not self.admits(value):
            raise ValueError(f"option {name!r} must be {self.text}, not {_shown(value)}{self.advice(value)}")

    def advice(self, value: Any) -> str:
        return ""


def one_of(*choices: Any) -> Values:
    return Values("one of " + ", ".join(map(repr, choices)), choices=choices)


class Bools(Values):
    """True or False only: any non-empty string is truthy, so `"false"` would turn the
    option on. The error says which bool a string or number was likely meant as."""

    def advice(self, value: Any) -> str:
        meant = _meant_bool(value)
        if meant is None:
            return ": write True or False"
        given = f"the string {value!r}" if isinstance(value, str) else repr(value)
        return f": write {meant}, not {given}"


class Pipeline(Values):
    """A pass pipeline as strata-opt's -p takes it (frontend/pipeline_spec.py)."""

    def check(self, name: str, value: Any) -> None:
        super().check(name, value)
        try:
            pipeline_spec.parse(value)
        except ValueError as e:
            raise ValueError(f"option {name!r} is not a pipeline strata can run ({value!r}): {e}") from None


class ExtraPasses(Values):
    """Passes to insert into the pipeline, by position (frontend/pipeline_spec.py)."""

    def check(self, name: str, value: Any) -> None:
        super().check(name, value)
        try:
            pipeline_spec.extra_specs(value)  # the positions are checked where the pipeline is known (resolve)
        except ValueError as e:
            raise ValueError(f"option {name!r} cannot insert {value!r}: {e}") from None


BOOL = Bools("a bool", (bool,))
PATH = Values("a path (a str or os.PathLike) or None", (str, os.PathLike, type(None)))
PIPELINE = Pipeline("a str of pass names separated by commas, as strata-opt's -p takes", (str,))
EXTRA_PASSES = ExtraPasses("a dict of positions to passes, as in {'after:simplify': 'my-pass{option=1}'}", (Mapping,))


@dataclass(frozen=True)
class Option:
    default: Any
    values: Values
    doc: str


OPTIONS: dict[str, Option] = {
    "codegen": Option(None, one_of(None, "llvm", "triton"),
                      'kernel code generator: "llvm" (CPU), "triton" (GPU; CPU tensors run in Triton\'s '
                      "interpreter), or None to follow the tensors' device"),
    "pipeline": Option(",".join(DEFAULT_PIPELINE), PIPELINE,
                       "the passes run on each graph, by name, comma-separated; a pass's options in braces, "
                       "as strata-opt's -p takes them (fuse{emulate_precision_casts=true})"),
    "extra_passes": Option({}, EXTRA_PASSES,
                           "passes inserted into the pipeline next to a pass that runs once in it, without "
                           "restating it: {'after:simplify': 'my-pass', 'before:fuse': 'other{option=1}'}; "
                           "strata.compile folds them into 'pipeline', which then names every pass that runs"),
    "trace.enabled": Option(False, BOOL, "write each graph's IR after every level and its kernels to trace.dir"),
    "trace.dir": Option(None, PATH, "where traces go (default: ./strata_trace)"),
    "trace.graph_diagram": Option(False, BOOL, "draw each fused graph (kernels, library calls, eager fallbacks, "
                                               "buffers) as graph.dot, .svg and .png in the trace folder (needs "
                                               "graphviz's dot for .svg and .png); turns tracing on"),
    "max_autotune": Option(False, BOOL, "tune kernel configurations by timing them (set by the max-autotune modes)"),
    "triton.cudagraphs": Option(False, BOOL, "replay compiled graphs as CUDA graphs (set by reduce-overhead and "
                                             "max-autotune)"),
    "epilogue_fusion": Option(True, BOOL, "under max_autotune, fuse what follows a matrix product or a 2-d "
                                          "convolution (bias, batch norm, activation, residual add, cast) into its "
                                          "Triton template (off: the product is stored and they run as separate "
                                          "kernels)"),
    "fallback_random": Option(False, BOOL, "run random ops as eager does, bit for bit"),
    "emulate_precision_casts": Option(False, BOOL, "round f16/bf16 intermediates inside a fused kernel after every "
                                                   "op, as eager does (off: they stay in f32 and are rounded where "
                                                   "stored, as TorchInductor does)"),
    "index_bounds_checks": Option(True, BOOL, "check every index a program reads at (advanced indexing, gather, "
                                              "index_select, embedding, embedding_bag, index_put, a select at an "
                                              "int from item()) as eager does: "
                                              "an index out of range raises IndexError (off: it reads the nearest "
                                              "element of its dim, and kernels carry no check)"),
    "attention_patterns": Option(True, BOOL, "run attention written out by hand (softmax(q @ kᵀ · s, causal mask or "
                                             "none) @ v) as one scaled_dot_product_attention call: the pass "
                                             "recognize-attention in inference graphs, a rewrite of Dynamo's graph "
                                             "in training ones (off: the pass leaves the pipeline)"),
    "verify": Option(True, BOOL, "verify the IR after every pass"),
    "graph_cache": Option(True, BOOL, "reuse a graph's lowering from the disk cache when the same graph was "
                                      "compiled before (STRATA_CACHE_DIR)"),
    "capture_cache": Option(True, BOOL, "with graph_cache: reuse a whole inference compile, AOTAutograd's trace "
                                        "included, when Dynamo captured the same graph before"),
    "dynamo_cache": Option(True, BOOL, "with capture_cache: keep Dynamo's transformed bytecode and guards on disk "
                                       "(STRATA_CACHE_DIR/dynamo) and load them in a later process, which then runs "
                                       "no Dynamo trace (frontend/caches/dynamo_cache.py). The guards that say which object "
                                       "a name refers to (ID_MATCH, CLOSURE_MATCH, ...) are saved with a description "
                                       "of the object (a function by qualified name and code, a class or module by "
                                       "name) and rebuilt on the calling frame's objects when they match it "
                                       "(frontend/caches/identity_guards.py). Saved only when every graph is an inference "
                                       "graph the capture cache holds"),
}

MODES: dict[str, dict[str, Any]] = {
    "default": {},
    "reduce-overhead": {"triton.cudagraphs": True},
    "max-autotune": {"max_autotune": True, "triton.cudagraphs": True},
    "max-autotune-no-cudagraphs": {"max_autotune": True},
}

def list_options() -> dict[str, Any]:
    """Every option and its default value."""
    return {k: o.default for k, o in OPTIONS.items()}


def describe_options() -> dict[str, str]:
    return {k: o.doc for k, o in OPTIONS.items()}


def list_mode_options(mode: str | None = None) -> dict[str, Any]:
    """The options each mode sets (or those of one mode)."""
    if mode is None:
        return {m: dict(o) for m, o in MODES.items()}
    check_mode(mode)
    return dict(MODES[mode])


def check_mode(mode: str | None) -> None:
    # A TypeError for a mode that is no string, as Python raises for an argument of the
    # wrong type (torch.compile raises RuntimeError("Unrecognized mode=5")).
    if mode is not None and not isinstance(mode, str):
        raise TypeError(f"mode must be a str (one of {', '.join(MODES)}) or None, not {_shown(mode)}")
    if mode is not None and mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; strata's modes are: {', '.join(MODES)}")


def resolve(mode: str | None = None, options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The full option dict for a mode and user options (options win over the mode),
    every value checked against what its option takes."""
    check_mode(mode)
    # torch.compile has no check of its own here (Inductor's fails in options.items()
    # with an AttributeError); a TypeError is what Python raises for such an argument.
    if options is not None and not isinstance(options, Mapping):
        raise TypeError(f"options must be a dict of option names to values, not {_shown(options)}; "
                        f"strata's options are: {', '.join(OPTIONS)}")
    resolved = list_options()
    resolved.update(MODES[mode or "default"])
    for key, value in (options or {}).items():
        if key not in OPTIONS:
            raise ValueError(f"unknown option {key!r}; strata's options are: {', '.join(OPTIONS)}")
        OPTIONS[key].values.check(key, value)
        resolved[key] = value
    if not resolved["attention_patterns"]:
        resolved["pipeline"] = pipeline_spec.without(resolved["pipeline"], pipeline_spec.ATTENTION_PASS)
    if resolved["max_autotune"]:
        resolved["pipeline"] = with_matmul_templates(resolved)
    if resolved["extra_passes"]:
        # into the pipeline they go, checked against it (a user's pipeline may lack a
        # pass the default has), so that the resolved options name every pass that runs
        try:
            resolved["pipeline"] = pipeline_spec.insert(resolved["pipeline"], resolved["extra_passes"])
        except ValueError as e:
            raise ValueError(f"option 'extra_passes' cannot insert {resolved['extra_passes']!r}: {e}") from None
        resolved["extra_passes"] = {}
    return resolved


def with_matmul_templates(resolved: Mapping[str, Any]) -> str:
    """The pipeline with matmul-to-dot before the lowering (max-autotune's matmul
    templates), carrying epilogue_fusion; for the Triton generator on any device."""
    if pipeline_spec.MATMUL_PASS in [s.name for s in pipeline_spec.parse(resolved["pipeline"])]:
        return resolved["pipeline"]  # the user placed it
    options = [f"epilogue_fusion={str(resolved['epilogue_fusion']).lower()}"]
    if resolved["codegen"] == "triton":
        options.append('target="triton"')
    spec = f"{pipeline_spec.MATMUL_PASS}{{{' '.join(options)}}}"
    return pipeline_spec.insert(resolved["pipeline"], {f"before:{pipeline_spec.LOWERING_PASS}": spec})


def _shown(value: Any) -> str:
    """`'false' (str)`: the value and its type, which an error must show together."""
    text = repr(value)
    return f"{text[:80]}... ({type(value).__name__})" if len(text) > 80 else f"{text} ({type(value).__name__})"


_TRUE_WORDS = {"true", "yes", "on", "1"}
_FALSE_WORDS = {"false", "no", "off", "0", ""}


def _meant_bool(value: Any) -> bool | None:
    """The bool a string or number was likely meant as, or None."""
    word = str(value).strip().lower() if isinstance(value, str | int | float) else None
    if word in _TRUE_WORDS or (not isinstance(value, str) and value == 1):
        return True
    if word in _FALSE_WORDS or (not isinstance(value, str) and value == 0):
        return False
    return None
