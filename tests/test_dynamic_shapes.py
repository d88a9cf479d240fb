"""Dynamic shapes as torch.compile defines them: a GPT block, forward and backward, over
12 sequence lengths and 5 batch sizes (0 and 1, and sizes that are no multiple of any
block size among them). strata must compile no more graphs than Dynamo itself needs
(the count under backend="aot_eager"), generate no kernel for a new size once a graph
is dynamic, and match eager everywhere, gradients too."""

from __future__ import annotations

import pytest
import torch
from torch._dynamo.utils import counters

import strata
from strata.frontend import compile_graph as compile_graph_module
from strata.testing.models import TransformerBlock

SEQUENCE_LENGTHS = (1, 2, 3, 5, 7, 8, 13, 16, 17, 31, 33, 40)
BATCH_SIZES = (0, 1, 2, 3, 5)


def _step(model, compiled, x):
    """Forward and backward of sum(out²): the result and the input's gradient."""
    x.grad = None
    out = compiled(x.requires_grad_())  # the same tensor: torch._dynamo.mark_dynamic marks it
    out.square().sum().backward()
    return out.detach(), x.grad


def _run(backend, sizes, dynamic=None, mark=None):
    """Runs a fresh GPT block compiled with `backend` over `sizes`; returns the unique
    graphs Dynamo compiled and, with the eager results beside them, the worst errors."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = TransformerBlock(d=32, heads=4)
    compiled = strata.compile(model, dynamic=dynamic) if backend == "strata" else torch.compile(model, backend=backend, dynamic=dynamic)
    before = counters["stats"]["unique_graphs"]
    worst = 0.0
    for b, t in sizes:
        x = torch.randn(b, t, 32)
        if mark is not None:
            torch._dynamo.mark_dynamic(x, mark)
        got, got_grad = _step(model, compiled, x)
        model.zero_grad()
        want, want_grad = _step(model, model, x)
        model.zero_grad()
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(got_grad, want_grad, atol=1e-5, rtol=1e-4)
    return counters["stats"]["unique_graphs"] - before


@pytest.fixture
def strata_compiles(monkeypatch):
    """The graphs strata lowered, and the kernels its code generators were asked for."""
    seen = {"graphs": 0, "kernels": 0}
    lower, kernel_compiler = compile_graph_module._compile, compile_graph_module.kernel_compiler

    def counting_lower(*args, **kwargs):
        seen["graphs"] += 1
        return lower(*args, **kwargs)

    def counting_kernel_compiler(*args, **kwargs):
        compile_kernel = kernel_compiler(*args, **kwargs)

        def counted(func):
            seen["kernels"] += 1
            return compile_kernel(func)

        return counted

    monkeypatch.setattr(compile_graph_module, "_compile", counting_lower)
    monkeypatch.setattr(compile_graph_module, "kernel_compiler", counting_kernel_compiler)
    return seen


def test_automatic_dynamic_compiles_no_more_than_dynamo_needs(strata_compiles):
    sizes = [(b, t) for t in SEQUENCE_LENGTHS for b in BATCH_SIZES]
    dynamo_graphs = _run("aot_eager", sizes)
    strata_graphs = _run("strata", sizes)
    assert strata_graphs <= dynamo_graphs, (strata_graphs, dynamo_graphs)
    # Dynamo specializes sizes 0 and 1, then goes dynamic: a handful of graphs for 60 sizes.
    assert dynamo_graphs < 10
    # strata lowers the graphs Dynamo made (a forward and a backward each), nothing more:
    # no size of the 60 made it specialize or recompile behind Dynamo's back.
    assert strata_compiles["graphs"] <= 2 * strata_graphs


def test_a_dynamic_graph_generates_no_kernel_for_a_new_size(strata_compiles):
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = TransformerBlock(d=32, heads=4)
    compiled = strata.compile(model, dynamic=True)
    for i, (b, t) in enumerate([(2, 3), (3, 7), (5, 17), (4, 40), (7, 33)]):
        x = torch.randn(b, t, 32)
        got, got_grad = _step(model, compiled, x)
        model.zero_grad()
        want, want_grad = _step(model, model, x)
        model.zero_grad()
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)
        torch.testing.assert_close(got_grad, want_grad, atol=1e-5, rtol=1e-4)
        if i == 0:
            first = dict(strata_compiles)
            assert first["graphs"] == 2 and first["kernels"] > 0  # forward and backward
    assert strata_compiles == first


def test_mark_dynamic_makes_that_dim_symbolic(strata_compiles):
    sizes = [(b, 8) for b in (2, 3, 5, 9, 12)]
    graphs = _run("strata", sizes, mark=0)
    assert graphs == 1
    assert strata_compiles["graphs"] == 2  # one forward, one backward, for every batch size


def test_static_compiles_once_per_size():
    sizes = [(2, 3), (2, 5), (2, 6)]
    assert _run("strata", sizes, dynamic=False) == 3
