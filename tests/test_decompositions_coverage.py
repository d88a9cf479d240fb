"""Decomposition rules for overloads the OpInfo sweep found falling back (norms.py,
contractions.py, elementwise_float.py, copies.py, creation.py's empty): each op compiled
by strata on CPU with warnings as errors, so that an eager fallback fails the test, and
compared with eager, including NaN, signed zeros, empty tensors and reduced precision."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
import torch.nn.functional as F

import strata


def _check(fn, *args, atol=None, rtol=None):
    torch._dynamo.reset()
    want = fn(*args)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no eager fallback allowed
        got = strata.compile(fn, dynamic=False)(*args)
    torch.testing.assert_close(got, want, atol=atol, rtol=rtol, equal_nan=True)


def _special(dtype, shape=(4, 6)):
    x = torch.randn(shape, dtype=torch.float64).to(dtype)
    flat = x.view(-1)
    flat[:5] = torch.tensor([0.0, -0.0, math.nan, math.inf, -math.inf], dtype=dtype)
    return x


# ---------------------------------------------------------------- norms
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("ord", [2, 1, math.inf, -math.inf, 0, 3, 0.5, -1.5])
def test_vector_norm_orders(ord, dtype):
    x = torch.randn(5, 7, dtype=dtype)
    _check(lambda x: torch.linalg.vector_norm(x, ord), x)
    _check(lambda x: torch.linalg.vector_norm(x, ord, dim=1, keepdim=True), x)
    _check(lambda x: torch.linalg.vector_norm(x, ord, dim=(0, 1)), x)


@pytest.mark.parametrize("ord", [2, 1, math.inf, -math.inf, 0, 3])
def test_vector_norm_nan_inf_and_size_one_dims(ord):
    x = _special(torch.float32)
    _check(lambda x: torch.linalg.vector_norm(x, ord, dim=0), x)
    # over a size-1 dim eager returns |x| (no square or root: no overflow)
    big = torch.tensor([[3e30], [-2e-30], [math.nan], [0.0]])
    _check(lambda x: torch.linalg.vector_norm(x, ord, dim=1), big)
    _check(lambda x: torch.linalg.vector_norm(x, ord), torch.tensor(-3e30))


def test_vector_norm_dtype_argument_and_empty():
    x = torch.randn(3, 5, dtype=torch.float16)
    _check(lambda x: torch.linalg.vector_norm(x, 2, dim=1, dtype=torch.float32), x)
    _check(lambda x: torch.linalg.vector_norm(x, 3.5, dtype=torch.float64), x)
    e = torch.randn(0, 4)
    _check(lambda x: torch.linalg.vector_norm(x, 2, dim=0), e)
    _check(lambda x: torch.linalg.vector_norm(x, 0), e)
    _check(lambda x: torch.linalg.vector_norm(x, math.inf, dim=1), e)


def test_norm_front_ends():
    x = torch.randn(4, 5)
    _check(lambda x: torch.linalg.norm(x), x)
    _check(lambda x: torch.linalg.matrix_norm(x, "fro"), x)
    _check(lambda x: torch.linalg.matrix_norm(x, 1), x)
    _check(lambda x: torch.norm(x, p=3, dim=1), x)


# ---------------------------------------------------------------- products
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int64])
def test_addmv_addbmm(dtype):
    def make(*shape):
        return torch.randint(-5, 5, shape).to(dtype) if not dtype.is_floating_point else torch.randn(shape).to(dtype)

    s, m, v = make(6), make(6, 4), make(4)
    tol = {"atol": 2e-2, "rtol": 2e-2} if dtype == torch.bfloat16 else {}
    _check(lambda s, m, v: torch.addmv(s, m, v), s, m, v, **tol)
    _check(lambda s, m, v: torch.addmv(s, m, v, beta=0.2 if dtype.is_floating_point else 2, alpha=3), s, m, v, **tol)
    b1, b2, bias = make(3, 6, 4), make(3, 4, 5), make(5)
    _check(lambda s, a, b: torch.addbmm(s, a, b), bias, b1, b2, **tol)
    _check(lambda s, a, b: torch.addbmm(s, a, b, beta=2, alpha=0.5 if dtype.is_floating_point else 3), bias, b1, b2, **tol)


def test_integer_scaling_factors_truncate_as_in_eager():
    s, m, v = torch.tensor([7, -9, 5]), torch.tensor([[3, 4], [-5, 6], [7, 8]]), torch.tensor([1, -2])
    _check(lambda s, m, v: torch.addmv(s, m, v, beta=1.7, alpha=2.5), s, m, v)


def test_beta_zero_ignores_nan_and_empty_products():
    s = torch.full((3,), math.nan)
    m, v = torch.randn(3, 4), torch.randn(4)
    _check(lambda s, m, v: torch.addmv(s, m, v, beta=0), s, m, v)
    _check(lambda s, m, v: torch.addmv(s, m, v, beta=0.5, alpha=math.nan), torch.randn(3), torch.randn(3, 0), torch.randn(0))
    _check(lambda s, a, b: torch.addbmm(s, a, b, beta=2), torch.randn(3, 5), torch.randn(0, 3, 4), torch.randn(0, 4, 5))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_bilinear(dtype):
    def make(*shape):
        return torch.randint(-3, 3, shape).to(dtype) if not dtype.is_floating_point else torch.randn(shape).to(dtype)

    x1, x2, w, bias = make(5, 3), make(5, 4), make(2, 3, 4), make(2)
    _check(lambda a, b, w, c: F.bilinear(a, b, w, c), x1, x2, w, bias)
    _check(lambda a, b, w: F.bilinear(a, b, w), make(2, 5, 3), make(2, 5, 4), w)


# ---------------------------------------------------------------- elementwise
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool])
def test_fmax_fmin_copysign_angle(dtype):
    if dtype.is_floating_point:
        x, y = _special(dtype), _special(dtype).flip(0)
    else:
        x, y = torch.randint(-3, 3, (4, 6)).to(dtype), torch.randint(-3, 3, (6,)).to(dtype)
    _check(torch.fmax, x, y)
    _check(torch.fmin, x, y)
    _check(torch.copysign, x, y)
    _check(torch.angle, x)


def test_copysign_scalar_and_mixed_dtypes():
    x = _special(torch.float32)
    _check(lambda x: torch.copysign(x, -0.0), x)
    _check(lambda x, y: torch.copysign(x, y), torch.randint(-3, 3, (4, 6)), x.to(torch.float16))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64])
def test_ldexp(dtype):
    x = torch.randn(4, 5).to(dtype) if dtype.is_floating_point else torch.randint(-9, 9, (4, 5))
    e = torch.randint(-4, 5, (5,))
    _check(torch.ldexp, x, e)
    _check(torch.ldexp, x, e.to(torch.float16))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("decimals", [0, 2, 3, -1, -3])
def test_round_decimals(decimals, dtype):
    x = (torch.randn(64, dtype=torch.float64) * 2000).to(dtype)
    x[:4] = torch.tensor([math.nan, math.inf, -0.0, 2.5])
    _check(lambda x: torch.round(x, decimals=decimals), x)


# ---------------------------------------------------------------- views and copies
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_view_copies(dtype):
    x = torch.randn(4, 6, 5).to(dtype)
    _check(lambda x: torch.ops.aten.view_copy(x, [6, 4, 5]), x)
    _check(lambda x: torch.permute_copy(x, (2, 0, 1)), x)
    _check(lambda x: torch.narrow_copy(x, 1, -4, 3), x)
    _check(lambda x: torch.unbind_copy(x, 1), x)
    _check(lambda x: x.unfold(1, 3, 2), x)
    _check(lambda x: x.unfold(-1, 5, 1), x)
    _check(lambda x: x.unfold(0, 0, 3), x)


@pytest.mark.parametrize("offset, dims", [(0, (0, 1)), (2, (0, 1)), (-1, (0, 1)), (1, (2, 0)), (-2, (1, 2))])
def test_diagonal_scatter(offset, dims):
    x = torch.randn(4, 5, 3)
    src = torch.diagonal(x, offset, *dims).clone().normal_()
    _check(lambda x, s: torch.diagonal_scatter(x, s, offset, *dims), x, src)


def test_as_strided_scatter_and_circular_pad():
    x = torch.randn(4, 6)
    _check(lambda x, s: torch.as_strided_scatter(x, s, (3, 2), (4, 2), 1), x, torch.randn(3, 2))
    _check(lambda x: F.pad(x, (1, 2, 2, 1), mode="circular"), torch.randn(1, 2, 3, 4))
    _check(lambda x: x.new_empty_strided((2, 3), (1, 2)).shape, x)


def test_as_strided_without_storage_offset_of_a_contiguous_input():
    x = torch.randn(16)
    _check(lambda x: torch.as_strided(x, (3, 3), (4, 1)) * 2, x)
    _check(lambda x: torch.as_strided_copy(x, (2, 2, 2), (1, 4, 8)), x)


def test_ldexp_follows_eagers_steps():
    x = torch.tensor([0.5, 3.0, -1.0009765625], dtype=torch.float16)
    _check(torch.ldexp, x, torch.tensor([16.0, 1.0, -24.0], dtype=torch.float16))  # 2^16 overflows f16
    _check(torch.ldexp, x, torch.tensor([16, 1, -24]))
    _check(torch.ldexp, x, torch.tensor(3))
