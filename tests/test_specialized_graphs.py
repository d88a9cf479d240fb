"""Graphs of symbolic sizes specialized to the bindings they meet again
(runtime/specialized_graphs.py, passes/specialize_symbols.py): for any sizes, the
specialized graph computes exactly what the symbolic one computes (the same kernels
on the same values), it takes the static paths (no size worked out per call), it is
built on a binding's second call and not before, no kernel is compiled for it, and a
wrong argument still gets the symbolic graph's error."""

from __future__ import annotations

import contextlib

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import strata
from strata.dialects.types import TensorType
from strata.runtime import compiled_graph, specialized_graphs
from strata.testing.models import TransformerBlock


@contextlib.contextmanager
def recording_graphs():
    """The CompiledGraphs made inside the block, in order."""
    made = []
    post_init = compiled_graph.CompiledGraph.__post_init__

    def recording(self):
        post_init(self)
        made.append(self)

    compiled_graph.CompiledGraph.__post_init__ = recording
    try:
        yield made
    finally:
        compiled_graph.CompiledGraph.__post_init__ = post_init


@pytest.fixture
def graphs():
    with recording_graphs() as made:
        yield made


def views_products_reductions(x: torch.Tensor, w: torch.Tensor):
    h = torch.relu(x @ w)
    s = torch.softmax(h, dim=-1)
    c = torch.cat([s, x], dim=1)
    return c.transpose(1, 2).contiguous()[:, :, 1:], c.sum(dim=(0, 1)), h.mean()


def _symbolic(graphs):
    return [g for g in graphs if g.binding is None and g.specializations is not None]


@settings(max_examples=12, deadline=None)
@given(st.lists(st.tuples(st.integers(2, 9), st.integers(2, 9)), min_size=1, max_size=3))
def test_a_specialized_graph_computes_what_the_symbolic_one_computes(sizes):
    with recording_graphs() as made:  # not a fixture: one list per example
        torch._dynamo.reset()
        f = strata.compile(views_products_reductions, dynamic=True)
        w = torch.randn(8, 8)
        for b, t in sizes:
            x = torch.randn(b, t, 8)
            first = f(x, w)  # the binding's first call: the symbolic steps
            second = f(x, w)  # its second: the specialized graph, built now
            for a, s, e in zip(first, second, views_products_reductions(x, w)):
                assert torch.equal(a, s)
                torch.testing.assert_close(s, e, rtol=1e-5, atol=1e-5)
        # Dynamo may trace again (two sizes equal at first share a symbol, then part)
        built = [g for graph in _symbolic(made) for g in graph.specializations.graphs.values()]
        assert len(built) == len(set(sizes))
        for specialized in built:
            assert specialized.binding is not None and "(env)" not in specialized.runner_source


def test_training_specializes_forward_and_backward(graphs):
    torch._dynamo.reset()
    torch.manual_seed(0)
    model = TransformerBlock(d=32, heads=4)
    reference = TransformerBlock(d=32, heads=4)
    reference.load_state_dict(model.state_dict())
    compiled = strata.compile(model, dynamic=True)
    x = torch.randn(3, 7, 32)
    for _ in range(3):
        for m, fn in ((model, compiled), (reference, reference)):
            m.zero_grad()
            fn(x).square().sum().backward()
        for p, q in zip(model.parameters(), reference.parameters()):
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5)
    symbolic = _symbolic(graphs)
    assert len(symbolic) == 2  # forward and backward
    for graph in symbolic:
        (specialized,) = graph.specializations.graphs.values()
        assert set(specialized.binding.values()) >= {3, 7}


def test_a_binding_met_once_is_not_specialized_and_kernels_are_not_recompiled(graphs, monkeypatch):
    torch._dynamo.reset()
    f = strata.compile(views_products_reductions, dynamic=True)
    w = torch.randn(8, 8)
    f(torch.randn(2, 3, 8), w)
    f(torch.randn(4, 5, 8), w)
    (graph,) = _symbolic(graphs)
    assert not graph.specializations.graphs
    compiled = dict(graph.kernels)
    calls = []
    monkeypatch.setattr(graph, "compile_kernel", lambda func: calls.append(func))
    f(torch.randn(4, 5, 8), w)
    (specialized,) = graph.specializations.graphs.values()
    assert not calls  # every kernel is the symbolic graph's own
    assert all(specialized.kernels[name] is compiled[name] for name in specialized.kernels)


def test_at_most_max_kept_specializations(graphs, monkeypatch):
    monkeypatch.setattr(specialized_graphs, "MAX_KEPT", 2)
    torch._dynamo.reset()
    f = strata.compile(views_products_reductions, dynamic=True)
    w = torch.randn(8, 8)
    for t in (3, 4, 5):
        x = torch.randn(2, t, 8)
        for _ in range(3):
            torch.testing.assert_close(f(x, w)[1], views_products_reductions(x, w)[1], rtol=1e-5, atol=1e-5)
    (graph,) = _symbolic(graphs)
    assert len(graph.specializations.graphs) == 2


def test_a_wrong_argument_gets_the_symbolic_graphs_error(graphs):
    torch._dynamo.reset()
    f = strata.compile(views_products_reductions, dynamic=True)
    w = torch.randn(8, 8)
    x = torch.randn(2, 3, 8)
    f(x, w)
    f(x, w)
    (graph,) = _symbolic(graphs)
    assert graph.specializations.graphs
    (binding,) = [g.binding for g in graph.specializations.graphs.values()]
    args = [*(binding[n] for n in graph.arg_symbols if n), x, w]  # the symbols' values first, as Dynamo passes them
    assert [isinstance(a, torch.Tensor) for a in args] == [isinstance(t, TensorType) for t in graph.arg_types]
    graph(args)  # right: the specialized graph runs it
    args[-2] = torch.randn(6, 8)
    with pytest.raises(ValueError, match="expected a tensor of rank 3"):
        graph(args)


def test_the_binding_key_reads_each_symbol_where_the_entry_binds_it():
    from strata.dialects.types import symbol

    s0, s1 = symbol("s0"), symbol("s1")
    names, key = specialized_graphs.binding_key(
        [TensorType([s1, 4], "f32"), "index", TensorType([s1, s0 * 2], "f32")], ["", "s0", ""])
    assert names == ("s0", "s1")
    assert key([torch.empty(5, 4), 7, torch.empty(5, 14)]) == (7, 5)
    assert specialized_graphs.binding_key([TensorType([3, 4], "f32")], [""]) is None


def test_a_specialization_that_fails_to_build_leaves_the_symbolic_graph(graphs, monkeypatch):
    torch._dynamo.reset()
    f = strata.compile(views_products_reductions, dynamic=True)
    w, x = torch.randn(8, 8), torch.randn(2, 3, 8)
    f(x, w)
    (graph,) = _symbolic(graphs)

    def failing(binding):
        raise RuntimeError("no")

    monkeypatch.setattr(graph.specializations, "build", failing)
    with pytest.warns(UserWarning, match="no specialized graph for"):
        got = f(x, w)
    for g, e in zip(got, views_products_reductions(x, w)):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(f(x, w)[1], views_products_reductions(x, w)[1], rtol=1e-5, atol=1e-5)
