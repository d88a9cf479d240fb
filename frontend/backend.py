"""The Dynamo backend: `torch.compile(f, backend="strata")`.

Registered through the `torch_dynamo_backends` entry point, so torch finds it by name
without strata being imported. Dynamo hands over a Torch-level FX graph; AOTAutograd
with Core ATen decompositions turns it into functional ATen graphs (forward, and
backward when gradients are needed), each compiled by compile_graph.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Mapping
from typing import Any

import torch

from strata.frontend import options as opts
from strata.frontend.attention.attention import is_training, keep_attention_whole
from strata.frontend.attention.attention_pattern import recognize_attention
from strata.frontend.attention.attention_training import attention_for_training
from strata.frontend.caches import capture_cache
from strata.frontend.caches import dynamo_cache
from strata.frontend.packaging.aot_function import compile_serializable, in_aot_compile
from strata.frontend.compile_graph import compile_captured, compile_graph
from strata.frontend.capture.specialized_floats import mark_specialized_floats


def make_backend(mode: str | None = None, options: Mapping[str, Any] | None = None) -> StrataBackend:
    """A Dynamo backend with these settings (options are checked now, not at first call)."""
    return StrataBackend(mode, options)


class StrataBackend:
    """The backend Dynamo calls with each captured graph. A class at module level, not
    a closure, so that a compiled module pickles as torch.compile's does: its
    OptimizedModule pickles the Dynamo context, which holds the backend."""

    compiler_name = "strata"  # the name torch prints in its logs
    # Slots, not a __dict__: Dynamo's debug wrapper copies a backend's __dict__ into its
    # own (functools.wraps), and would keep and pickle AOTAutograd's compiler with it.
    __slots__ = ("mode", "options", "_aot")

    def __init__(self, mode: str | None = None, options: Mapping[str, Any] | None = None) -> None:
        self.mode = mode
        self.options = opts.resolve(mode, options)
        self._aot = None

    def __getstate__(self) -> dict[str, Any]:
        # The settings only: AOTAutograd's compiler is made again where it is loaded.
        return {"mode": self.mode, "options": self.options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.mode, self.options, self._aot = state["mode"], state["options"], None

    def __call__(self, gm: torch.fx.GraphModule, example_inputs):
        resolved = self.options
        mark_specialized_floats(example_inputs)  # no second Dynamo trace for them
        if in_aot_compile():  # torch's aot_compile: a package, which it serializes
            return compile_serializable(gm, example_inputs, resolved)
        if is_training(example_inputs):
            if resolved["attention_patterns"]:
                # before AOTAutograd differentiates it: an inference graph's attention
                # is found at the aten level (the pass recognize-attention)
                recognize_attention(gm)
            attention_for_training(gm)
            return self._traced(gm, example_inputs)
        key = _capture_key(gm, example_inputs, resolved)
        if key is not None:
            hit = capture_cache.read(key)
            if hit is not None:
                dynamo_cache.record(gm, key, example_inputs, resolved)
                return capture_cache.as_dynamo_callable(compile_captured(*hit, example_inputs, resolved))
        keep_attention_whole(gm)
        if key is None:
            return self._traced(gm, example_inputs)
        with capture_cache.capturing() as capture:
            compiled = self._traced(gm, example_inputs)  # eager: nothing captured, nothing written
        if capture_cache.write(key, capture):
            dynamo_cache.record(gm, key, example_inputs, resolved)
        return compiled

    def _traced(self, gm: torch.fx.GraphModule, example_inputs):
        """The graph through AOTAutograd and strata; run as Dynamo traced it where one of
        torch's decompositions, traced by AOTAutograd, asks a question of a value item()
        read that it cannot answer (a guard on an unbacked symbol: TorchInductor raises
        there too)."""
        from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

        try:
            return self.aot()(gm, example_inputs)
        except GuardOnDataDependentSymNode as e:
            warnings.warn(f"strata: this graph runs eagerly: AOTAutograd could not trace it "
                          f"({str(e).splitlines()[0]})")
            return gm.forward

    def aot(self):
        """AOTAutograd with strata compiling its graphs, made at the first graph that
        needs it: a compile served whole by the caches (dynamo_cache) never runs
        AOTAutograd, whose import is a tenth of a second."""
        if self._aot is None:
            self._aot = _aot_autograd(self.options)
        return self._aot


def _aot_autograd(resolved: dict[str, Any]):
    from torch._dynamo.backends.common import aot_autograd
    from torch._functorch.partitioners import min_cut_rematerialization_partition

    return aot_autograd(
        fw_compiler=functools.partial(_compile_graph_with, resolved, "forward"),
        bw_compiler=functools.partial(_compile_graph_with, resolved, "backward"),
        # What the forward saves for the backward: a min-cut that recomputes cheap
        # pointwise values instead of keeping them alive.
        partition_fn=min_cut_rematerialization_partition,
        decompositions=_core_aten_decompositions(),
    )


# Ops strata lowers itself, more exactly than torch's decompositions: addcdiv and
# addcmul round once in f16/bf16, where div, mul and add would round after each;
# select_scatter checks its index as eager does (torch's where(arange == index)
# matches nothing at an index out of range, and raises nothing).
_KEPT_WHOLE = ("addcdiv", "addcmul", "select_scatter")


@functools.cache
def _core_aten_decompositions() -> dict:
    """torch builds this table anew on each call (a fifth of a second): once per process."""
    from torch._decomp import core_aten_decompositions

    from strata.frontend.capture.roll_layout import roll_in_eager_layout

    table = core_aten_decompositions()
    for name in _KEPT_WHOLE:
        table.pop(getattr(torch.ops.aten, name).default, None)
    table[torch.ops.aten.roll.default] = roll_in_eager_layout  # whole, in eager's layout
    return table


def _capture_key(gm: torch.fx.GraphModule, example_inputs, options: dict[str, Any]) -> str | None:
    """The capture cache's key for an inference graph, or None where it is not used:
    turned off, observed (a trace or report wants every level), or a graph it cannot
    key (frontend/caches/capture_cache.py)."""
    from strata.frontend.inspection import report as reports

    observed = reports.wanted() or options.get("trace.enabled") or options.get("trace.graph_diagram")
    if not (options.get("graph_cache", True) and options.get("capture_cache", True)) or observed:
        return None
    if not any(isinstance(x, torch.Tensor) for x in example_inputs):
        return None  # the device comes from the graph's own tensors: compile as usual
    return capture_cache.key(gm, example_inputs, options)


def _compile_graph_with(options: dict[str, Any], kind: str, gm: torch.fx.GraphModule, example_inputs):
    return compile_graph(gm, example_inputs, options, kind)


def strata_backend(gm: torch.fx.GraphModule, example_inputs, mode: str | None = None, options: dict[str, Any] | None = None):
    """The entry point torch calls for backend="strata" (mode and options from torch.compile).

    torch keeps the mode and options of a backend found by name and hands them over
    only here, at the first call (torch._TorchCompileWrapper): no strata code runs at
    `torch.compile(..., backend="strata", options=...)` to check them sooner. They are
    checked first thing here, before any graph is imported; strata.compile checks them
    when called."""
    backend = make_backend(mode, options)
    if (options or {}).get("dynamo_cache"):
        # Dynamo has traced by the time a backend is called: only strata.compile can load.
        warnings.warn("strata: dynamo_cache works through strata.compile only; torch.compile ignores it")
    return backend(gm, example_inputs)
