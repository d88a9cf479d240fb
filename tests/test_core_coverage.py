"""Every Core ATen overload either has a decomposition rule or never reaches a graph
strata compiles (tools/core_coverage.py NEVER_IN_A_GRAPH); the latter claims, shown."""

from __future__ import annotations

import warnings

import torch

import strata
from strata.tools.core_coverage import NEVER_IN_A_GRAPH, without_rule


def _compiled_without_fallback(fn, *args, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an eager fallback warns
        return strata.compile(fn, **options)(*args)


def test_every_core_overload_has_a_rule_or_never_reaches_a_graph():
    assert without_rule() == []


def test_size_queries_become_expressions_not_ops(tmp_path):
    # With symbolic sizes, AOTAutograd's graph asks sym_size / sym_numel / sym_stride;
    # the importer turns each into the sympy expression its consumers record.
    def f(x):
        flat = x.reshape(x.shape[0] * x.shape[1])
        return flat * x.numel() + x.stride(0), torch.zeros(x.size(1))

    x = torch.randn(5, 3)
    options = {"trace.enabled": True, "trace.dir": str(tmp_path)}
    got = _compiled_without_fallback(f, x, dynamic=True, options=options)
    want = f(x)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    x2 = torch.randn(4, 7)
    got2 = strata.compile(f, dynamic=True)(x2)
    torch.testing.assert_close(got2[0], f(x2)[0])
    aten = "\n".join(p.read_text() for p in tmp_path.glob("graph_*/0_aten.mlir"))
    assert "aten." in aten and not any(name.removeprefix("aten::").split(".")[0] in aten for name in NEVER_IN_A_GRAPH)


def test_out_variants_arrive_functional():
    def f(a, b):
        return torch.atan2(a, b, out=torch.empty(4, 3)) * 2

    a, b = torch.randn(4, 3), torch.randn(4, 3)
    torch.testing.assert_close(_compiled_without_fallback(f, a, b), f(a, b))


def test_resize_breaks_the_graph_and_the_pieces_compile():
    def f(a):
        x = a.sin()
        x.resize_(2, 3)
        return x * 2

    a = torch.randn(4, 3)
    torch.testing.assert_close(_compiled_without_fallback(f, a), f(a))
