"""histogram's two overloads (explicit edges; a bin count with edges by linspace, f32):
compiled with no eager fallback and compared exactly with eager, values on the edges,
outside them, NaN and infinities included; with weights and density; and the
declines (f64 bin counts, a CUDA graph)."""

from __future__ import annotations

import math

import pytest
import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import StringAttr

import strata
from strata.testing.no_fallback import compiled
from strata.dialects.aten import AtenOp
from strata.passes.decompose import decompose
from strata.testing.single_op import single_op_module

NAN, INF = math.nan, math.inf
X = [0.0, 1.0, 2.5, 3.0, -1.0, 10.0, 7.25, NAN, INF, -INF, 4.0, 0.5, 9.999, 5.0]


def _compiled(fn, *args):
    return compiled(fn, *args)


def _same(got, want, exact=True):
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g, w, rtol=0 if exact else None, atol=0 if exact else None, equal_nan=True)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_histogram_with_explicit_edges(dtype):
    x = torch.tensor(X, dtype=dtype).reshape(2, 7)
    w = torch.rand(2, 7, dtype=dtype)
    for edges in ([0.0, 1.0, 2.5, 5.0, 10.0], [3.0, 3.0, 4.0], [-INF, 0.0, INF], [5.0, 1.0, 7.0]):
        e = torch.tensor(edges, dtype=dtype)
        fn = lambda x, e: torch.histogram(x, e)  # noqa: E731
        _same(_compiled(fn, x, e), fn(x, e))
        for density in (False, True):
            fn = lambda x, e, w: torch.histogram(x, e, weight=w, density=density)  # noqa: E731
            _same(_compiled(fn, x, e, w), fn(x, e, w), exact=False)


def test_histogram_with_a_bin_count_f32():
    torch.manual_seed(0)
    x = torch.tensor([v for v in X if math.isfinite(v)])
    cases = [(x, {"bins": 7}), (x, {"bins": 10, "range": (0.0, 10.0)}), (x, {"bins": 3, "range": (2.0, 2.0)}),
             (torch.randn(1000) * 1e3, {"bins": 101}), (torch.full((5,), 3.0), {"bins": 4}),
             (torch.empty(0), {"bins": 5}), (torch.tensor(X), {"bins": 9, "range": (-1.0, 10.0)}),
             (torch.rand(3, 40), {"bins": 33, "range": (0.1, 0.9)})]
    for y, kw in cases:
        fn = lambda y: torch.histogram(y, **kw)  # noqa: E731
        _same(_compiled(fn, y), fn(y))
    w = torch.rand(1000)
    y = torch.randn(1000)
    fn = lambda y, w: torch.histogram(y, bins=17, weight=w, density=True)  # noqa: E731
    _same(_compiled(fn, y, w), fn(y, w), exact=False)


def test_edges_on_random_ranges_are_eagers_bits():
    torch.manual_seed(1)
    for _ in range(20):
        lo = float(torch.randn(()) * 100)
        hi = lo + float(torch.rand(())) * 10 ** float(torch.randint(-3, 4, ()))
        bins = int(torch.randint(1, 300, ()))
        fn = lambda y: torch.histogram(y, bins=bins, range=(lo, hi))  # noqa: E731
        y = torch.rand(50) * (hi - lo) + lo
        _same(_compiled(fn, y), fn(y))


def _op(overload, inputs, device="cpu", **constants):
    module = single_op_module(overload, inputs, **constants)
    (fn,) = [o for o in module.walk() if isinstance(o, func.FuncOp)]
    fn.attributes["strata.device"] = StringAttr(device)
    (op,) = [o for o in module.walk() if isinstance(o, AtenOp)]
    return op


def test_declines():
    x = torch.rand(6, dtype=torch.float64)
    assert "fused multiply-adds" in decompose(_op("aten::histogram.bin_ct", [x], bins=4))
    assert decompose(_op("aten::histogram.bins_tensor", [x, torch.tensor([0.0, 0.5, 1.0], dtype=torch.float64)])) is None
    assert "no CUDA kernel" in decompose(_op("aten::histogram.bin_ct", [x.float()], "cuda", bins=4))
