"""igamma / igammac (prim.igamma, prim.igammac: ATen's series, continued fraction and
asymptotic series) and histc (bins by ATen's CPU rule, then a scatter-add), compiled
with no eager fallback and compared with eager: through the LLVM code generator and
through Triton's interpreter, on the edges of each (a = 0, x = 0, infinities, NaN,
large a near x for the asymptotic series; values on histc's edges and outside them)."""

from __future__ import annotations

import math

import pytest
import torch

import strata
from strata.testing.no_fallback import compiled
from strata.testing.checks import mismatch

NAN, INF = math.nan, math.inf
BACKENDS = {"llvm": {}, "triton": {"codegen": "triton"}}


def _compiled(fn, *args, options=None):
    return compiled(fn, *args, options=options)


def _check(got, want, exact=None):
    assert got.dtype == want.dtype and got.shape == want.shape
    problem = mismatch([want], [got], exact)
    assert problem is None, problem


def _grid(xs, ys, dtype):
    x = torch.tensor(xs, dtype=dtype)[:, None].expand(len(xs), len(ys))
    y = torch.tensor(ys, dtype=dtype)[None, :].expand(len(xs), len(ys))
    return x.contiguous(), y.contiguous()


# a: 0 (a boundary), tiny, around 1, the asymptotic band (20 < a < 200, > 200), huge,
# inf, negative, NaN. x: 0, the series' regimes (<= 0.5, (0.5, 1.1], > 1.1), near a,
# far from a, inf, negative, NaN.
A = [0.0, -0.0, 1e-3, 0.1, 0.5, 1.0, 2.5, 10.0, 19.0, 25.0, 50.0, 150.0, 250.0, 1000.0, 1e5, INF, -1.0, NAN]
X = [0.0, 1e-4, 0.3, 0.5, 0.7, 1.0, 1.05, 1.2, 3.0, 10.0, 24.0, 30.0, 55.0, 140.0, 260.0, 990.0, 1010.0, 1e5, INF, -2.0, NAN]


@pytest.mark.parametrize("fn", [torch.igamma, torch.igammac])
def test_igamma_llvm(fn):
    for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        a, x = _grid(A, X, dtype)
        _check(_compiled(fn, a, x), fn(a, x), lambda: [fn(a.double(), x.double())])


@pytest.mark.parametrize("fn", [torch.igamma, torch.igammac])
def test_igamma_random_regimes(fn):
    """Random points in each regime, f32 and f64: every path and loop length."""
    g = torch.Generator().manual_seed(0)
    n = 500
    a = torch.cat([torch.rand(n, generator=g) * 3, torch.rand(n, generator=g) * 60, torch.rand(n, generator=g) * 600])
    near = 1 + 0.4 * (torch.rand(2 * n, generator=g) - 0.5)
    x = torch.cat([torch.rand(n, generator=g) * 4, a[n:] * near])
    for dtype in (torch.float32, torch.float64):
        _check(_compiled(fn, a.to(dtype), x.to(dtype)), fn(a.to(dtype), x.to(dtype)), lambda: [fn(a.double(), x.double())])


@pytest.mark.parametrize("fn", [torch.igamma, torch.igammac])
def test_igamma_triton(fn):
    # Triton's interpreter runs each loop step in numpy: a smaller grid.
    a, x = _grid([0.0, 0.5, 2.5, 25.0, 250.0, INF, -1.0, NAN], [0.0, 0.3, 0.7, 3.0, 24.0, 260.0, INF, NAN], torch.float32)
    _check(_compiled(fn, a, x, options=BACKENDS["triton"]), fn(a, x), lambda: [fn(a.double(), x.double())])
    a, x = a.double(), x.double()
    _check(_compiled(fn, a, x, options=BACKENDS["triton"]), fn(a, x))


@pytest.mark.parametrize("backend", BACKENDS)
def test_igamma_promotes_broadcasts_and_fuses(backend):
    options = BACKENDS[backend]
    a = torch.tensor([0.5, 1.0, 4.0, 9.0])
    x = torch.tensor([[0.2], [1.5], [7.0]], dtype=torch.float64)
    _check(_compiled(torch.igamma, a, x, options=options), torch.igamma(a, x))  # f32 with f64
    ai = torch.tensor([1, 2, 3, 5])
    _check(_compiled(torch.igammac, ai, a, options=options), torch.igammac(ai, a))  # int with float
    h = a.half()
    _check(_compiled(torch.igamma, h, torch.tensor(2.0), options=options), torch.igamma(h, torch.tensor(2.0)))  # 0-d
    f = lambda a, x: torch.special.gammainc(a * 2, x).exp() + torch.special.gammaincc(a, x + 1)  # noqa: E731
    _check(_compiled(f, a, a.flip(0), options=options), f(a, a.flip(0)))
    e = torch.empty(0, 3)
    _check(_compiled(torch.igamma, e, e, options=options), torch.igamma(e, e))


def test_igamma_integer_operands_stay_with_eager():
    """Eager has no integer kernel; the rule declines, so the compiled call raises as eager does."""
    ai = torch.tensor([1, 2, 3])
    with pytest.raises(Exception, match="not implemented for 'Long'"), pytest.warns(UserWarning, match="integer or bool operands"):
        strata.compile(torch.igamma)(ai, ai)


# values on histc's edges (lo, hi, and inner edges), just inside and outside them, NaN
# and infinities (skipped)
HIST_X = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, -1.0, 6.0, NAN, 2.5, 0.999, 4.9999, INF, -INF, 1.0 / 3, 2.0 / 3, -0.0]
HIST_ARGS = [dict(bins=5, min=0, max=5), dict(bins=3, min=0, max=1), dict(bins=7, min=-1, max=6), dict(bins=4, min=2, max=2), dict(bins=10)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_histc(backend):
    options = BACKENDS[backend]
    dtypes = (torch.float32, torch.float64, torch.float16, torch.bfloat16) if backend == "llvm" else (torch.float32, torch.float16)
    for dtype in dtypes:
        x = torch.tensor(HIST_X, dtype=dtype)
        for kw in HIST_ARGS:
            fn = lambda x: torch.histc(x, **kw)  # noqa: E731
            # a range taken from the data: eager raises where it is not finite
            y = x.nan_to_num(0.0, 0.0, 0.0) if kw.get("min", 0) == kw.get("max", 0) else x
            _check(_compiled(fn, y, options=options), fn(y))
        fn = lambda x: torch.histc(x, bins=13)  # noqa: E731
        for y in (torch.randn(3, 50).to(dtype), torch.tensor(7.0, dtype=dtype), torch.empty(0, dtype=dtype), torch.full((4,), 3.0, dtype=dtype)):
            _check(_compiled(fn, y, options=options), fn(y))


def test_a_gpu_graph_leaves_igamma_to_eager():
    # ATen's asymptotic series unrolls to 625 steps of Triton code: a minute to compile
    # for a GPU, so a CUDA graph keeps eager's kernel (as Inductor does).
    from xdsl.dialects import func
    from xdsl.dialects.builtin import StringAttr

    from strata.dialects.aten import AtenOp
    from strata.passes.decompose import decompose
    from strata.testing.single_op import single_op_module

    def one_op(overload: str, device: str) -> AtenOp:
        module = single_op_module(overload, [torch.rand(3) + 1, torch.rand(3)])
        (fn,) = [o for o in module.walk() if isinstance(o, func.FuncOp)]
        fn.attributes["strata.device"] = StringAttr(device)
        (op,) = [o for o in module.walk() if isinstance(o, AtenOp)]
        return op

    for overload in ("aten::igamma", "aten::igammac"):
        assert decompose(one_op(overload, "cpu")) is None  # lowered
        assert "over a minute to compile for a GPU" in decompose(one_op(overload, "cuda"))
