"""Special functions computed by fixed Cephes formulas (passes/decompositions/special.py
and special_bessel.py) and erfcx (prim.erfcx, codegen/llvm_erfcx.py, triton_erfcx.py): compiled with no eager fallback allowed and compared with eager
on edge values (0, -0, signs, the formulas' break points, large |x|, inf, NaN), through
the LLVM generator and, for some, Triton's interpreter."""

from __future__ import annotations

import math
import warnings

import pytest
import torch

import strata

OPS = {
    "i0": torch.i0,
    "i0e": torch.special.i0e,
    "i1": torch.special.i1,
    "i1e": torch.special.i1e,
    "ndtri": torch.special.ndtri,
    "bessel_j0": torch.special.bessel_j0,
    "bessel_j1": torch.special.bessel_j1,
    "bessel_y0": torch.special.bessel_y0,
    "bessel_y1": torch.special.bessel_y1,
    "modified_bessel_i0": torch.special.modified_bessel_i0,
    "modified_bessel_i1": torch.special.modified_bessel_i1,
    "modified_bessel_k0": torch.special.modified_bessel_k0,
    "modified_bessel_k1": torch.special.modified_bessel_k1,
    "scaled_modified_bessel_k0": torch.special.scaled_modified_bessel_k0,
    "scaled_modified_bessel_k1": torch.special.scaled_modified_bessel_k1,
    "spherical_bessel_j0": torch.special.spherical_bessel_j0,
    "airy_ai": torch.special.airy_ai,
    "digamma": lambda x: torch.polygamma(0, x),
    "trigamma": lambda x: torch.special.polygamma(1, x),
    "erfcx": torch.special.erfcx,
    "log_ndtr": torch.special.log_ndtr,
}

# 0, signs, each formula's break points (2, 5, 8, +-2.09, 103.892) on both sides, the
# large and tiny, the non-finite.
EDGES = [
    0.0, -0.0, 1e-30, -1e-30, 1e-6, 2e-5, 0.5, -0.5, 1.0, -1.0, 2.0, 2.0001, 2.09, 2.0899, -2.09, -2.0901,
    4.9999, 5.0, 5.0001, 8.0, -8.0, 8.0001, 8.3203353, 30.0, 87.0, 100.0, 103.89, 104.0, 700.0, 750.0,
    1e4, -1e4, 1e8, 1e30, -3.0, -3.5, -30.0, -1e30, math.inf, -math.inf, math.nan,
]
PROBABILITIES = [0.0, 1.0, 1e-300, 1e-40, 1e-20, 1e-14, 0.1, 0.1353, 0.1354, 0.5, 0.8646, 0.8647, 0.999999, -0.1, 1.5]


def _inputs(name: str, dtype: torch.dtype) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    values = [torch.tensor(EDGES, dtype=torch.float64), torch.linspace(-12.0, 12.0, 241, dtype=torch.float64),
              torch.randn(64, generator=g, dtype=torch.float64) * 20]
    if name == "ndtri":
        values += [torch.tensor(PROBABILITIES, dtype=torch.float64), torch.rand(64, generator=g, dtype=torch.float64)]
    x = torch.cat(values)
    if dtype == torch.bool:
        return x > 0.5
    if not dtype.is_floating_point:
        return x.nan_to_num(0.0).clamp(-1000, 1000).round().to(dtype)
    return x.to(dtype)


def _compiled(fn, *args, codegen: str = "llvm"):
    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*no lowering covers.*")
        warnings.filterwarnings("error", message=".*runs eagerly.*")
        return strata.compile(fn, options={"codegen": codegen})(*args)


def _both(fn):
    """fn of an f32 and an f64 tensor at once: one compilation for both dtypes."""
    return lambda a, b: (fn(a), fn(b))


def _check(name: str, codegen: str = "llvm") -> None:
    fn = OPS[name]
    x32, x64 = _inputs(name, torch.float32), _inputs(name, torch.float64)
    got = _compiled(_both(fn), x32, x64, codegen=codegen)
    for g, x in zip(got, (x32, x64)):
        want = fn(x)
        assert g.dtype == want.dtype
        torch.testing.assert_close(g, want, equal_nan=True, msg=lambda m: f"{name} {x.dtype} {codegen}: {m}")


@pytest.mark.parametrize("name", OPS)
def test_matches_eager_in_f32_and_f64(name):
    _check(name)


@pytest.mark.parametrize("name", ["i1", "ndtri", "bessel_y1", "modified_bessel_k1", "airy_ai", "trigamma", "erfcx"])
def test_matches_eager_in_the_triton_interpreter(name):
    _check(name, codegen="triton")


@pytest.mark.parametrize("name", ["i0", "i1e", "ndtri", "bessel_j1", "modified_bessel_k0", "trigamma", "erfcx"])
def test_integer_and_bool_inputs_promote_to_float(name):
    fn = OPS[name]
    xi, xb = _inputs(name, torch.int64), _inputs(name, torch.bool)
    got = _compiled(lambda a, b: (fn(a), fn(b)), xi, xb)
    for g, x in zip(got, (xi, xb)):
        want = fn(x)
        assert g.dtype == want.dtype == torch.float32
        torch.testing.assert_close(g, want, equal_nan=True)


@pytest.mark.parametrize("name", ["i0", "i0e", "i1", "i1e", "trigamma"])
def test_half_precision_computes_in_f32(name):
    """Computed in f32 and rounded once: as eager where its kernel upcasts (i0, i1),
    and at least as close to the f64 values where it computes in f16/bf16 (i0e, i1e)."""
    fn = OPS[name]
    xh, xb = _inputs(name, torch.float16), _inputs(name, torch.bfloat16)
    got = _compiled(lambda a, b: (fn(a), fn(b)), xh, xb)
    for g, x in zip(got, (xh, xb)):
        want, exact = fn(x), fn(x.double())
        assert g.dtype == want.dtype
        tol = dict(rtol=1e-3, atol=1e-5) if x.dtype == torch.float16 else dict(rtol=1.6e-2, atol=1e-5)
        error, eager_error = (g.double() - exact).abs(), (want.double() - exact).abs()
        finite = exact.isfinite() & want.isfinite()
        slack = tol["atol"] + tol["rtol"] * exact.abs()
        assert bool((error <= eager_error + slack)[finite].all()), name
        torch.testing.assert_close(g[~finite], want[~finite], equal_nan=True)


def test_empty_and_zero_dim():
    fn = lambda e, s: (torch.special.i1e(e), torch.special.bessel_y0(s), torch.polygamma(1, s))  # noqa: E731
    e, s = torch.empty(0, 3), torch.tensor(0.25, dtype=torch.float64)
    got = _compiled(fn, e, s)
    for g, w in zip(got, fn(e, s)):
        assert g.shape == w.shape and g.dtype == w.dtype
        torch.testing.assert_close(g, w)

