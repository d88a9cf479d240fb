"""A torch.compile backend for pass tests: each captured graph is imported, a copy goes
through the passes under test, and every call interprets both, so that a test can
compare the values before and after on whatever inputs it calls with."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch._decomp import core_aten_decompositions
from torch._dynamo.backends.common import aot_autograd
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from strata.dialects.context import strata_context
from strata.frontend.capture.importer import ImportedGraph, import_graph
from strata.runtime.interpret import interpret
from strata.testing.closeness import assert_close


@dataclass
class Capture:
    """Records (imported graph, transformed module) per graph and (before, after)
    results per call. `compile(fn)` gives the function to call."""

    passes: Sequence[ModulePass]
    graphs: list[tuple[ImportedGraph, ModuleOp]] = field(default_factory=list)
    results: list[tuple[list[Any], list[Any]]] = field(default_factory=list)

    def compile(self, fn: Callable, dynamic: bool = False) -> Callable:
        backend = aot_autograd(fw_compiler=self._compile, decompositions=core_aten_decompositions())
        return torch.compile(fn, backend=backend, dynamic=dynamic, fullgraph=True)

    def _compile(self, gm: torch.fx.GraphModule, example_inputs: Any) -> Callable:
        graph = import_graph(gm)
        module = graph.module.clone()
        ctx = strata_context()
        for p in self.passes:
            p.apply(ctx, module)
        module.verify()
        self.graphs.append((graph, module))

        def run(*args: Any) -> list[Any]:
            inputs = [*args, *graph.constants]
            before = interpret(graph.module, inputs, graph.arg_symbols)
            after = interpret(module, inputs, graph.arg_symbols)
            self.results.append((before, after))
            return before

        return run

    def op_names(self) -> set[str]:
        """The names of the ops left in every transformed module."""
        return {op.name for _, m in self.graphs for op in m.walk()}


def transposed(t: torch.Tensor) -> torch.Tensor:
    """The same values with the last two dims' strides swapped."""
    return t.mT.contiguous().mT if t.dim() >= 2 else t


def run_case(
    passes: Sequence[ModulePass], fn: Callable, make: Callable, dtype: torch.dtype, dynamic: bool
) -> Capture:
    """Compiles `fn` (a testing.cases case) with `passes` and calls it on inputs of
    sizes (5, 7), then (3, 9) with transposed strides, then (1, 3), where torch
    specializes the size 1; values before and after the passes must agree."""
    torch._dynamo.reset()
    capture = Capture(passes)
    module = isinstance(fn, torch.nn.Module)
    compiled = capture.compile(fn.to(dtype) if module else fn, dynamic=dynamic)
    try:
        with torch.no_grad():
            compiled(*make(5, 7, dtype))
            compiled(*[transposed(t) for t in make(3, 9, dtype)])
            compiled(*make(1, 3, dtype))
    finally:
        if module:
            fn.float()
    assert len(capture.results) == 3
    for before, after in capture.results:
        assert_close(before, after)
    return capture
