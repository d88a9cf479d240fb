"""Hurwitz zeta, polygamma of order >= 2 and the orthogonal polynomials of
torch.special (dialects/prim_special_loops.py): compiled with no eager fallback, through
the LLVM code generator and through Triton's interpreter, and compared with eager on
the edges of each (n < 0, n = 0 and 1, large n, NaN and infinite n, |x| = 1, zeta's
negative non-integer q that runs its first loop long)."""

from __future__ import annotations

import math
import warnings

import pytest
import torch

import strata
from strata.dialects.prim_special_loops import POLYNOMIALS, SPECIAL_LOOP_OPS, degree
from strata.testing.checks import mismatch

NAN, INF = math.nan, math.inf
BACKENDS = {"llvm": {}, "triton": {"codegen": "triton"}}


def _compiled(fn, *args, options=None):
    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*no lowering covers.*")
        warnings.filterwarnings("error", message=".*runs eagerly.*")
        warnings.filterwarnings("error", message=".*kernel interpreter.*")
        return strata.compile(fn, options=options or {})(*args)


def _check(got, want, exact=None):
    assert got.dtype == want.dtype and got.shape == want.shape
    problem = mismatch([want], [got], exact)
    assert problem is None, problem


def _grid(xs, ns, dtype):
    """Every x against every n, as an [len(xs), len(ns)] pair of tensors."""
    x = torch.tensor(xs, dtype=dtype)[:, None].expand(len(xs), len(ns))
    n = torch.tensor(ns, dtype=dtype)[None, :].expand(len(xs), len(ns))
    return x.contiguous(), n.contiguous()


def _eager(name, x, n):
    """torch.special.<name>, but NaN where x is NaN and n >= 1: there several of
    ATen's kernels return a variable their loop never set (prim_special_loops.py)."""
    return SPECIAL_LOOP_OPS[name][3](x, n)


# x: 0, ±1 (each polynomial's ends), 1/2 (the shifted ones' middle), inside and outside
# [-1, 1], large, ±inf, NaN. n: negative, 0, 1, past each trigonometric threshold,
# large, fractional (truncated), NaN and inf (ATen's degree is then negative).
XS = [-0.0, 0.0, 1.0, -1.0, 0.5, 0.25, -0.3, 0.9, 1.5, -2.5, 8.4, 1e3, INF, -INF, NAN]
NS = [-3.0, 0.0, 1.0, 2.0, 2.7, 5.0, 7.0, 9.0, 12.0, 40.0, 200.0, 600.0, NAN, INF]


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_llvm(name):
    for dtype in (torch.float32, torch.float64):
        x, n = _grid(XS, NS, dtype)
        fn = getattr(torch.special, name)
        _check(_compiled(fn, x, n), _eager(name, x, n))


@pytest.mark.parametrize("name", POLYNOMIALS)
def test_polynomial_triton(name):
    # Triton's interpreter runs each loop step in numpy: moderate degrees only.
    x, n = _grid(XS, [-3.0, 0.0, 1.0, 2.0, 5.0, 7.0, 9.0, 13.0, 40.0, NAN], torch.float32)
    fn = getattr(torch.special, name)
    _check(_compiled(fn, x, n, options=BACKENDS["triton"]), _eager(name, x, n))


def test_polynomial_x_nan_is_nan_where_the_recurrence_runs():
    x, n = _grid([NAN], [-1.0, 0.0, 1.0, 2.0, 9.0], torch.float32)
    got = _compiled(torch.special.chebyshev_polynomial_u, x, n)
    assert got[0, :2].tolist() == [0.0, 1.0] and got[0, 2:].isnan().all()
    assert degree(torch.tensor([NAN, INF, -INF, 3.9, -2.5, 1e30])).tolist() == [-(2**63)] * 3 + [3, -2, -(2**63)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_polynomials_promote_integers_and_take_scalars(backend):
    options = BACKENDS[backend]
    x = torch.tensor([-2, -1, 0, 1, 3], dtype=torch.int32)
    n = torch.tensor([4, 0, 3, 9, 2])
    for fn in (torch.special.chebyshev_polynomial_t, torch.special.legendre_polynomial_p, torch.special.hermite_polynomial_h):
        _check(_compiled(fn, x, n, options=options), fn(x, n))
        _check(_compiled(fn, x > 0, n > 2, options=options), fn(x > 0, n > 2))
        _check(_compiled(lambda x: fn(x, 3), x.double(), options=options), fn(x.double(), 3))
    # fused with other math, over a broadcast, on a 0-d tensor, on an empty one
    f = lambda x, n: torch.special.laguerre_polynomial_l(x * 0.5, n + 1).sin()  # noqa: E731
    a, b = torch.linspace(-3, 3, 12).reshape(3, 4), torch.arange(4.0)
    _check(_compiled(f, a, b, options=options), f(a, b))
    z = torch.tensor(0.75)
    _check(_compiled(torch.special.shifted_chebyshev_polynomial_w, z, torch.tensor(11.0), options=options),
           torch.special.shifted_chebyshev_polynomial_w(z, torch.tensor(11.0)))
    e = torch.empty(0, 3)
    _check(_compiled(torch.special.chebyshev_polynomial_v, e, e, options=options), torch.special.chebyshev_polynomial_v(e, e))


# zeta(x, q): x below 1, at 1 (a pole), fractional and integer; q zero and negative
# integers (poles), negative non-integers (the long first loop: q = -1000.5 runs about a
# thousand steps), tiny, large, infinite, NaN.
ZETA_X = [0.5, 1.0, 1.5, 2.0, 3.0, 4.5, 10.0, 50.0, INF, NAN, -1.0]
ZETA_Q = [-1000.5, -7.5, -3.0, -2.25, -0.5, 0.0, -0.0, 1e-3, 0.5, 1.0, 2.0, 7.3, 100.0, 1e6, INF, -INF, NAN]


@pytest.mark.parametrize("backend", BACKENDS)
def test_zeta(backend):
    options = BACKENDS[backend]
    qs = ZETA_Q if backend == "llvm" else [q for q in ZETA_Q if q != -1000.5] + [-40.5]
    for dtype in (torch.float32, torch.float64):
        x, q = _grid(ZETA_X, qs, dtype)
        _check(_compiled(torch.special.zeta, x, q, options=options), torch.special.zeta(x, q))
    xi, qi = torch.tensor([2, 3, 4, 1]), torch.tensor([1, -2, 5, 3], dtype=torch.int32)
    _check(_compiled(torch.special.zeta, xi, qi, options=options), torch.special.zeta(xi, qi))
    _check(_compiled(torch.special.zeta, xi > 2, qi > 0, options=options), torch.special.zeta(xi > 2, qi > 0))


POLYGAMMA_X = [-8.5, -4.5, -2.25, -1.0, -0.0, 0.0, 1e-3, 0.5, 1.0, 2.0, 3.6, 9.0, 1e4, INF, -INF, NAN]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("n", [2, 3, 4, 7, 40])
def test_polygamma(backend, n):
    """A more accurate result than eager's passes by the float64 yardstick: eager's
    half-precision kernel sums zeta in f32, which cancels for negative x."""
    options = BACKENDS[backend]
    dtypes = (torch.float32, torch.float64, torch.float16, torch.bfloat16) if backend == "llvm" else (torch.float32, torch.float16)
    fn = lambda x: torch.polygamma(n, x)  # noqa: E731
    for dtype in dtypes:
        x = torch.tensor(POLYGAMMA_X).to(dtype)
        _check(_compiled(fn, x, options=options), fn(x), lambda: [fn(x.double())])
    x = torch.tensor([-3, 0, 1, 2, 7], dtype=torch.int64)
    _check(_compiled(fn, x, options=options), fn(x), lambda: [fn(x.double())])
    _check(_compiled(fn, x > 0, options=options), fn(x > 0), lambda: [fn((x > 0).double())])


def test_polygamma_orders_zero_and_one_stay_with_their_rules():
    x = torch.tensor([-2.5, 0.5, 3.0])
    for n in (0, 1, 2):
        _check(_compiled(lambda x: torch.special.polygamma(n, x), x), torch.special.polygamma(n, x))
