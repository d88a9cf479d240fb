"""Floats Dynamo specialized while tracing (a LayerNorm's eps under dynamic=True) are
named to AOTAutograd before it runs, so the frame is traced once, not twice; a float
that really varies still does, as under aot_eager."""

from __future__ import annotations

import torch
from torch._dynamo.utils import counters

import strata
from strata.testing.models import TransformerBlock


def _fresh() -> None:
    torch._dynamo.reset()
    counters.clear()


def test_layer_norm_eps_costs_no_second_trace():
    _fresh()
    torch.manual_seed(0)
    model = TransformerBlock(d=32, heads=4)
    compiled = strata.compile(model, dynamic=True)
    x = torch.randn(2, 5, 32, requires_grad=True)
    out = compiled(x)
    out.square().sum().backward()
    # One trace: AOTAutograd ran once (torch's restart would run it a second time).
    assert counters["aot_autograd"]["total"] == 1
    assert counters["stats"]["unique_graphs"] == 1
    grad, x.grad = x.grad, None
    want = model(x)
    want.square().sum().backward()
    torch.testing.assert_close(out, want, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(grad, x.grad, atol=1e-5, rtol=1e-4)


def test_a_changed_eps_is_guarded():
    _fresh()
    torch.manual_seed(0)
    model = torch.nn.LayerNorm(16)
    compiled = strata.compile(model, dynamic=True)
    x = torch.randn(3, 16) * 1e-2  # small enough for eps to matter
    torch.testing.assert_close(compiled(x), model(x))
    model.eps = 1e-2
    torch.testing.assert_close(compiled(x), model(x))
    assert counters["stats"]["unique_graphs"] == 2


def _graphs_for_scales(backend: str) -> int:
    _fresh()

    def scaled(x, s: float):
        return torch.sin(x) * s

    if backend == "strata":
        compiled = strata.compile(scaled, dynamic=True)
    else:
        compiled = torch.compile(scaled, backend=backend, dynamic=True)
    x = torch.randn(8)
    for s in (0.5, 1.5, -2.0):
        torch.testing.assert_close(compiled(x, s), scaled(x, s))
    return counters["stats"]["unique_graphs"]


def test_a_float_argument_is_as_dynamic_as_under_aot_eager():
    assert _graphs_for_scales("strata") == _graphs_for_scales("aot_eager")


def test_a_float_result_follows_each_call_with_the_caches_on(tmp_path, monkeypatch):
    """`-f` of a float argument: AOTAutograd specializes f (the program returns -2.0,
    under a guard), a key made from Dynamo's graph cannot tell 2.0 from 0.5, and a
    capture read back would skip the trace that guards it: such a compile is never
    stored. Two processes' worth: the second compiler finds the first's caches."""
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))

    def f(x, v):
        return x / v, -v

    x = torch.ones(4)
    for _ in range(2):  # the second time round, everything the caches hold is read back
        _fresh()
        compiled = torch.compile(f, backend="strata", dynamic=True)
        for v in (2.0, 0.5, 1e6):
            out, neg = compiled(x, v)
            assert neg == -v
            torch.testing.assert_close(out, x / v)
