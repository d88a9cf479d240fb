"""Convolutions (plain, transposed, with a bias inside the call), batch norm in
f16/bf16 and _batch_norm_with_update, adaptive max pooling in 3-d and grid sampling:
compiled with no eager fallback allowed and compared with eager, edge values
included; the pointwise lowerings also through the Triton interpreter."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from strata.testing.no_fallback import compiled as _compiled
from strata.testing.no_fallback import same


def _same(got, want, exact: bool = False):
    same(got, want, exact)


HALF = (torch.float16, torch.bfloat16)


# ---------------------------------------------------------------- convolutions
CONVOLUTIONS = {
    "conv1d": lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1),
    "conv2d_groups": lambda x, w, b: F.conv2d(x, w, b, padding=1, groups=2),
    "conv3d": lambda x, w, b: F.conv3d(x, w, b, dilation=2),
    "conv_transpose1d": lambda x, w, b: F.conv_transpose1d(x, w, b, stride=2, padding=1, output_padding=1),
    "conv_transpose2d_groups": lambda x, w, b: F.conv_transpose2d(x, w, b, stride=(2, 1), groups=2, dilation=(1, 2)),
    "conv_transpose3d": lambda x, w, b: F.conv_transpose3d(x, w, b, stride=2, output_padding=1),
}
SHAPES = {  # x, w, bias
    "conv1d": ([2, 4, 9], [6, 4, 3], [6]),
    "conv2d_groups": ([2, 4, 5, 6], [6, 2, 3, 3], [6]),
    "conv3d": ([1, 2, 6, 5, 6], [3, 2, 2, 2, 2], [3]),
    "conv_transpose1d": ([2, 4, 7], [4, 3, 3], [3]),
    "conv_transpose2d_groups": ([2, 4, 4, 5], [4, 3, 2, 3], [6]),
    "conv_transpose3d": ([1, 2, 3, 2, 3], [2, 3, 2, 2, 2], [3]),
}


@pytest.mark.parametrize("name", CONVOLUTIONS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.int64])
def test_convolutions_match_eager(name, dtype):
    torch.manual_seed(0)
    xs, ws, bs = SHAPES[name]
    make = (lambda s: torch.randint(-4, 5, s, dtype=dtype)) if dtype == torch.int64 else (lambda s: torch.randn(s).to(dtype))
    x, w, b = make(xs), make(ws), make(bs)
    fn = CONVOLUTIONS[name]
    # f16/bf16 and i64 give eager's bits: the bias is added inside torch's own call
    _same(_compiled(fn, x, w, b), fn(x, w, b), exact=dtype not in (torch.float32, torch.float64))
    _same(_compiled(lambda x, w: fn(x, w, None), x, w), fn(x, w, None), exact=dtype not in (torch.float32, torch.float64))


@pytest.mark.parametrize("dtype", [torch.float16, torch.int64])
def test_chained_convolutions_between_kernels(dtype):
    """Two 2-d convolutions with a relu between (channels-last buffers), a transposed
    one after them, in half precision and in integers, edge values in the input."""
    torch.manual_seed(0)
    make = (lambda *s: torch.randint(-3, 4, s, dtype=dtype)) if dtype == torch.int64 else (lambda *s: torch.randn(*s).to(dtype))
    x, w1, b1, w2, w3 = make(2, 3, 6, 6), make(4, 3, 3, 3), make(4), make(4, 4, 1, 1), make(4, 2, 2, 2)
    if dtype.is_floating_point:
        x[0, 0, 0, :3] = torch.tensor([0.0, -0.0, 1000.0])

    def fn(x, w1, b1, w2, w3):
        y = torch.relu(F.conv2d(x, w1, b1, padding=1))
        return F.conv_transpose2d(F.conv2d(y, w2), w3, stride=2)

    _same(_compiled(fn, x, w1, b1, w2, w3), fn(x, w1, b1, w2, w3))


def test_empty_batch_convolution():
    x, w, b = torch.randn(0, 2, 5), torch.randn(2, 3, 3), torch.randn(3)
    fn = lambda x, w, b: F.conv_transpose1d(x, w, b)  # noqa: E731
    _same(_compiled(fn, x, w, b), fn(x, w, b))


# ---------------------------------------------------------------- batch norm
def _batch_norm_case(dtype, shape=(4, 3, 37), seed=0):
    torch.manual_seed(seed)
    x = (torch.randn(shape) * 3 + torch.randn(1, shape[1], *[1] * (len(shape) - 2)) * 5).to(dtype)
    c = shape[1]
    return x, torch.randn(c).to(dtype), torch.randn(c).to(dtype), torch.randn(c).to(dtype), (torch.rand(c) + 0.5).to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, *HALF])
@pytest.mark.parametrize("training", [True, False])
def test_native_batch_norm_and_running_statistics(dtype, training):
    """Results, saved statistics and the updated running buffers. bf16 reproduces
    eager's c10::BFloat16 arithmetic on the statistics bit for bit."""
    x, w, b, rm, rv = _batch_norm_case(dtype)

    def fn(x, w, b, rm, rv):
        return torch.native_batch_norm(x, w, b, rm, rv, training, 0.3, 1e-3)

    rm_c, rv_c = rm.clone(), rv.clone()
    got = _compiled(fn, x, w, b, rm_c, rv_c)
    want = fn(x, w, b, rm, rv)
    _same(got, want)
    _same([rm_c, rv_c], [rm, rv], exact=dtype == torch.bfloat16)


@pytest.mark.parametrize("dtype", [torch.float64, *HALF])
def test_batch_norm_with_update(dtype):
    x, w, b, rm, rv = _batch_norm_case(dtype, (3, 4, 2, 5), seed=1)

    def fn(x, w, b, rm, rv):
        return torch.ops.aten._batch_norm_with_update(x, w, b, rm, rv, 0.1, 1e-5)

    rm_c, rv_c = rm.clone(), rv.clone()
    got = _compiled(fn, x, w, b, rm_c, rv_c)
    want = fn(x, w, b, rm, rv)
    _same(got, want)
    _same([rm_c, rv_c], [rm, rv])


@pytest.mark.parametrize("dtype", HALF)
def test_half_batch_norm_modules_and_instance_norm(dtype):
    x, w, b, rm, rv = _batch_norm_case(dtype, (2, 3, 4, 5), seed=2)
    fn = lambda x, w, b, rm, rv: F.batch_norm(x, rm, rv, w, b, training=True, momentum=0.5)  # noqa: E731
    _same(_compiled(fn, x, w, b, rm.clone(), rv.clone()), fn(x, w, b, rm.clone(), rv.clone()))
    fn = lambda x, w, b, rm, rv: F.instance_norm(x, rm, rv, w, b, use_input_stats=True, momentum=0.2)  # noqa: E731
    _same(_compiled(fn, x, w, b, rm.clone(), rv.clone()), fn(x, w, b, rm.clone(), rv.clone()))


def test_batch_norm_of_half_input_and_f32_parameters_follows_the_graphs_types():
    """Autocast's batch norm: eager saves f32 statistics, torch's fake kernel (and so
    the traced graph, and the backward traced against it) says f16: the output and the
    running statistics are eager's, the saved statistics eager's rounded to f16."""
    x = torch.randn(2, 3, 4).half()
    rm, rv = torch.zeros(3), torch.ones(3)
    fn = lambda x, rm, rv: torch.native_batch_norm(x, None, None, rm, rv, True, 0.1, 1e-5)  # noqa: E731
    rm_c, rv_c = rm.clone(), rv.clone()
    got, want = _compiled(fn, x, rm_c, rv_c), fn(x, rm, rv)
    _same(got[0], want[0])
    _same([rm_c, rv_c], [rm, rv])
    for g, w in zip(got[1:], want[1:]):
        assert g.dtype == torch.float16 and w.dtype == torch.float32
        _same(g, w.half())


@pytest.mark.parametrize("codegen", ["llvm", "triton"])
def test_batch_norm_through_both_code_generators(codegen):
    x, w, b, rm, rv = _batch_norm_case(torch.bfloat16, (2, 3, 9), seed=3)
    x[0, 0, :3] = torch.tensor([0.0, 300.0, -300.0])

    def fn(x, w, b, rm, rv):
        return torch.native_batch_norm(x, w, b, rm, rv, True, 0.1, 0.0)

    rm_c, rv_c = rm.clone(), rv.clone()
    _same(_compiled(fn, x, w, b, rm_c, rv_c, codegen=codegen), fn(x, w, b, rm, rv))
    _same([rm_c, rv_c], [rm, rv], exact=True)


# ---------------------------------------------------------------- adaptive max pooling
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("size", [(2, 3, 2), (3, 2, 3)])
def test_adaptive_max_pool3d_with_ties_and_nan(dtype, size):
    torch.manual_seed(0)
    x = torch.randint(0, 3, (2, 3, 4, 5, 3)).to(dtype)
    x[0, 0, 1, 2, 0] = float("nan")
    x[1, 2, 0, 0, 0] = float("inf")
    fn = lambda x: F.adaptive_max_pool3d(x, size, return_indices=True)  # noqa: E731
    _same(_compiled(fn, x), fn(x), exact=True)
    fn = lambda x: F.adaptive_max_pool3d(x[0], size)  # noqa: E731
    _same(_compiled(fn, x), fn(x), exact=True)


# ---------------------------------------------------------------- grid sampling
def _grid(*shape, dtype=torch.float32, seed=0):
    torch.manual_seed(seed)
    g = torch.rand(*shape) * 2.6 - 1.3
    flat = g.view(-1)
    flat[:6] = torch.tensor([-1.0, 1.0, 0.0, float("nan"), float("inf"), -1e10])
    return g.to(dtype)


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_2d_matches_eager(mode, padding, align):
    x = torch.randn(2, 3, 5, 7)
    g = _grid(2, 4, 6, 2)
    fn = lambda x, g: F.grid_sample(x, g, mode=mode, padding_mode=padding, align_corners=align)  # noqa: E731
    _same(_compiled(fn, x, g), fn(x, g))


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("padding", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sample_3d_matches_eager(mode, padding, align):
    x = torch.randn(2, 2, 3, 4, 5, dtype=torch.float64)
    g = _grid(2, 3, 2, 4, 3, dtype=torch.float64, seed=1)
    fn = lambda x, g: F.grid_sample(x, g, mode=mode, padding_mode=padding, align_corners=align)  # noqa: E731
    _same(_compiled(fn, x, g), fn(x, g))


@pytest.mark.parametrize("dtype", HALF)
def test_half_grid_sample_is_as_accurate_as_eager(dtype):
    """Eager's f16/bf16 kernel rounds every step; strata computes in f32 and rounds
    once: the result is within tolerance of eager's, or closer to the f64 result."""
    x = torch.randn(1, 2, 6, 5).to(dtype)
    g = _grid(1, 5, 4, 2, dtype=dtype)[..., :].clone()
    g[0, 0, :2] = 0.3
    fn = lambda x, g: F.grid_sample(x, g, mode="bilinear", padding_mode="border", align_corners=False)  # noqa: E731
    got, want = _compiled(fn, x, g), fn(x, g)
    exact = fn(x.double(), g.double())
    assert got.dtype == dtype
    err_got, err_eager = (got.double() - exact).abs(), (want.double() - exact).abs()
    rtol, atol = torch.testing._comparison.default_tolerances(want)
    assert bool((((got.double() - want.double()).abs() <= atol + rtol * exact.abs()) | (err_got <= err_eager) | (got == want) | (got.isnan() & want.isnan())).all())


@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_through_triton(mode):
    x = torch.randn(1, 2, 4, 5)
    g = _grid(1, 3, 4, 2, seed=2)
    fn = lambda x, g: F.grid_sample(x, g, mode=mode, padding_mode="reflection", align_corners=False)  # noqa: E731
    _same(_compiled(fn, x, g, codegen="triton"), fn(x, g))
