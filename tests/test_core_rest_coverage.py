"""The last Core ATen overloads given rules (normalization_backward.py,
batch_norm_legit.py, segment_reduce.py, embedding_bag.py): each compiled with no eager
fallback allowed and compared with eager, NaN and inf included.

Most of these overloads never reach a strata.compile graph (torch's Core ATen
decompositions rewrite them first), so `_compiled_aten` traces the aten call itself
with make_fx and compiles that graph as the backend would."""

from __future__ import annotations

import math
import warnings

import pytest
import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx

import strata
from strata.frontend.compile_graph import compile_graph
from strata.frontend.options import resolve

aten = torch.ops.aten
DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


def _compiled_aten(fn, *args, codegen=None):
    gm = make_fx(fn)(*args)
    options = resolve(None, {"codegen": codegen} if codegen else None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an eager fallback is a failure here
        return compile_graph(gm, list(args), options)(list(args))


def _compiled(fn, *args):
    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return strata.compile(fn, dynamic=False)(*args)


def _close(got, want, exact_ints=True):
    want = [w for w in (want if isinstance(want, tuple | list) else [want]) if w is not None]
    got = [g for g in got if g is not None][: len(want)]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g, w, equal_nan=True)


# ---------------------------------------------------------------- norm backward
def _truth(fn, *args):
    """fn in f64, rounded to the inputs' dtype: eager's f16/bf16 backward kernels
    round partial sums that ours keep in f32, so the exact value is the reference."""
    dtype = args[0].dtype
    out = fn(*[a.double() if isinstance(a, torch.Tensor) else a for a in args])
    return [None if o is None else o.to(dtype) for o in out]


@pytest.mark.parametrize("dtype", DTYPES)
def test_layer_norm_backward(dtype):
    x = torch.randn(3, 4, 6, dtype=dtype) * 3
    w, bias = torch.randn(6, dtype=dtype), torch.randn(6, dtype=dtype)
    _, mean, rstd = aten.native_layer_norm(x, [6], w, bias, 1e-5)
    g = torch.randn_like(x)
    full = lambda g, x, m, r, w, b: aten.native_layer_norm_backward(g, x, [6], m, r, w, b, [True, True, True])  # noqa: E731
    args = (g, x, mean, rstd, w, bias)
    want = full(*args) if dtype in (torch.float32, torch.float64) else _truth(full, *args)
    _close(_compiled_aten(full, *args), want)
    # no affine parameters, two normalized dims, only the input's gradient
    _, mean, rstd = aten.native_layer_norm(x, [4, 6], None, None, 1e-5)
    part = lambda g, x, m, r: aten.native_layer_norm_backward(g, x, [4, 6], m, r, None, None, [True, False, False])  # noqa: E731
    args = (g, x, mean, rstd)
    want = part(*args) if dtype in (torch.float32, torch.float64) else _truth(part, *args)
    _close(_compiled_aten(part, *args), want)


@pytest.mark.parametrize("dtype", DTYPES)
def test_group_norm_backward(dtype):
    x = torch.randn(2, 6, 3, 4, dtype=dtype)
    w, bias = torch.randn(6, dtype=dtype), torch.randn(6, dtype=dtype)
    _, mean, rstd = aten.native_group_norm(x, w, bias, 2, 6, 12, 3, 1e-5)
    g = torch.randn_like(x)
    full = lambda g, x, m, r, w: aten.native_group_norm_backward(g, x, m, r, w, 2, 6, 12, 3, [True, True, True])  # noqa: E731
    args = (g, x, mean, rstd, w)
    want = full(*args) if dtype in (torch.float32, torch.float64) else _truth(full, *args)
    _close(_compiled_aten(full, *args), want)
    part = lambda g, x, m, r: aten.native_group_norm_backward(g, x, m, r, None, 2, 6, 12, 3, [True, False, False])  # noqa: E731
    args = (g, x, mean, rstd)
    want = part(*args) if dtype in (torch.float32, torch.float64) else _truth(part, *args)
    _close(_compiled_aten(part, *args), want)


def test_norm_backward_nan_and_inf_propagate():
    x = torch.randn(3, 5)
    x[0, 1], x[1, 2] = math.nan, math.inf
    _, mean, rstd = aten.native_layer_norm(x, [5], None, None, 1e-5)
    g = torch.randn_like(x)
    fn = lambda g, x, m, r: aten.native_layer_norm_backward(g, x, [5], m, r, None, None, [True, False, False])  # noqa: E731
    _close(_compiled_aten(fn, g, x, mean, rstd), fn(g, x, mean, rstd))


@pytest.mark.parametrize("kind", ["layer", "group"])
def test_training_step_gradients_match_eager(kind):
    torch.manual_seed(0)
    norm = torch.nn.LayerNorm(8) if kind == "layer" else torch.nn.GroupNorm(2, 8)
    eager = torch.nn.Sequential(torch.nn.Linear(8, 8), norm) if kind == "layer" else norm
    compiled_model = __import__("copy").deepcopy(eager)
    x = torch.randn(4, 8) if kind == "layer" else torch.randn(4, 8, 3)
    torch._dynamo.reset()
    compiled = strata.compile(compiled_model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled(x).pow(2).sum().backward()
    eager(x).pow(2).sum().backward()
    for (name, pe), pc in zip(eager.named_parameters(), compiled_model.parameters()):
        torch.testing.assert_close(pc.grad, pe.grad, rtol=1e-4, atol=1e-5, msg=f"grad of {name}")


# ---------------------------------------------------------------- batch norm
@pytest.mark.parametrize("dtype", DTYPES)
def test_batch_norm_legit_eval_and_no_stats(dtype):
    x = torch.randn(4, 3, 5, dtype=dtype)
    w, bias = torch.randn(3, dtype=dtype), torch.randn(3, dtype=dtype)
    fn = lambda x, w, b: aten._native_batch_norm_legit.no_stats(x, w, b, True, 0.1, 1e-5)  # noqa: E731
    _close(_compiled_aten(fn, x, w, bias), fn(x, w, bias))
    rm, rv = torch.randn(3, dtype=dtype), torch.rand(3, dtype=dtype) + 0.5
    fn = lambda x, rm, rv: aten._native_batch_norm_legit(x, None, None, rm, rv, False, 0.1, 1e-5)  # noqa: E731
    _close(_compiled_aten(fn, x, rm, rv), fn(x, rm, rv))
    # instance norm reaches strata as the no_stats overload
    _close([_compiled(lambda x: F.instance_norm(x), x)], F.instance_norm(x))


# ---------------------------------------------------------------- segment_reduce
@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_segment_reduce(reduce, dtype):
    torch.manual_seed(0)
    data = torch.randn(2, 7, 3, dtype=dtype)
    data[0, 1, 0], data[1, 4, 2], data[0, 5, 1] = math.nan, math.inf, -math.inf
    lengths = torch.tensor([[2, 0, 4, 1], [0, 3, 3, 1]])
    offsets = torch.cat([torch.zeros(2, 1, dtype=torch.long), lengths.cumsum(1)], 1)
    # eager sums f16/bf16 in their own dtype, ours in f32: the exact value is the reference
    half = dtype in (torch.float16, torch.bfloat16)
    for initial in (None, 1.5):
        for name, bounds in (("lengths", lengths), ("offsets", offsets)):
            fn = lambda d, s: torch.segment_reduce(d, reduce, **{name: s}, axis=1, initial=initial)  # noqa: E731
            want = fn(data.double(), bounds).to(dtype) if half else fn(data, bounds)
            _close([_compiled(fn, data, bounds)], want)


def test_segment_reduce_triton_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    data = torch.randn(9, 4)
    lengths = torch.tensor([3, 0, 6])
    fn = lambda d, l: torch.segment_reduce(d, "mean", lengths=l)  # noqa: E731
    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = strata.compile(fn, options={"codegen": "triton"})(data, lengths)
    torch.testing.assert_close(got, fn(data, lengths), equal_nan=True)


# ---------------------------------------------------------------- embedding_bag
def _bag_inputs(dtype):
    torch.manual_seed(0)
    w = torch.randn(10, 3, dtype=dtype)
    w[3, 1], w[5, 0], w[2, 2], w[9, 2] = math.nan, math.nan, math.inf, -math.inf
    idx = torch.tensor([1, 2, 4, 5, 4, 3, 2, 9, 1, 1])
    off = torch.tensor([0, 0, 4, 5, 9])  # an empty bag, and a last offset short of L
    return w, idx, off


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("dtype", DTYPES)
def test_embedding_bag_all_results(mode, dtype):
    w, idx, off = _bag_inputs(dtype)
    weights = [None, torch.rand(10, dtype=dtype)] if mode == 0 else [None]
    for op in (aten._embedding_bag, aten._embedding_bag_forward_only):
        for pad in (-1, 4):
            for last in (False, True):
                for psw in weights:
                    # forward_only's bag_size and max_indices with include_last_offset
                    # are not the shapes its meta function says: only the output then
                    keep = 1 if last and op is aten._embedding_bag_forward_only else 4

                    def fn(*a):
                        p = a[3] if len(a) > 3 else None
                        return op(a[0], a[1], a[2], False, mode, False, p, last, pad)[:keep]

                    args = (w, idx, off) if psw is None else (w, idx, off, psw)
                    _close(_compiled_aten(fn, *args), fn(*args))


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_functional_and_triton(mode, monkeypatch):
    w, idx, off = _bag_inputs(torch.float32)
    fn = lambda w, i, o: F.embedding_bag(i, w, o, mode=mode, padding_idx=2)  # noqa: E731
    _close([_compiled(fn, w, idx, off)], fn(w, idx, off))
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = strata.compile(fn, options={"codegen": "triton"})(w, idx, off)
    _close([got], fn(w, idx, off))


# ---------------------------------------------------------------- upsampling
UPSAMPLE_SIZES = [([10, 14], None), ([3, 4], None), ([7, 9], None), (None, [2.0, 1.5]), (None, [0.6, 0.3])]


def _image(dtype):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 5, 7, dtype=dtype)
    x[0, 0, 1, 2], x[1, 2, 3, 3] = math.nan, math.inf
    return x


@pytest.mark.parametrize("dtype", DTYPES)
def test_upsample_nearest_and_bilinear_vec(dtype):
    x = _image(dtype)
    for size, factors in UPSAMPLE_SIZES:
        fn = lambda x: aten.upsample_nearest2d.vec(x, size, factors)  # noqa: E731
        _close(_compiled_aten(fn, x), fn(x))
        for align in (False, True):
            fn = lambda x: aten.upsample_bilinear2d.vec(x, size, align, factors)  # noqa: E731
            _close(_compiled_aten(fn, x), fn(x))


def test_upsample_nearest_of_bytes():
    for x in (torch.randint(0, 255, (1, 2, 3, 5), dtype=torch.uint8),):
        fn = lambda x: aten.upsample_nearest2d.vec(x, [7, 4], None)  # noqa: E731
        _close(_compiled_aten(fn, x), fn(x))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_upsample_bilinear_antialiased(dtype):
    x = _image(dtype)
    for size, factors in UPSAMPLE_SIZES:
        out = size or [int(5 * factors[0]), int(7 * factors[1])]
        scales = factors or [None, None]
        for align in (False, True):
            fn = lambda x: aten._upsample_bilinear2d_aa(x, out, align, *scales)  # noqa: E731
            _close(_compiled_aten(fn, x), fn(x))
    fn = lambda x: F.interpolate(x, size=(3, 2), mode="bilinear", antialias=True)  # noqa: E731
    _close([_compiled(fn, x)], fn(x))


# ---------------------------------------------------------------- col2im
FOLDS = [
    # output size, kernel, dilation, padding, stride, batched
    ((5, 6), (2, 3), (1, 1), (0, 0), (1, 1), True),
    ((7, 8), (3, 2), (2, 1), (1, 2), (2, 3), True),
    ((4, 4), (2, 2), (1, 1), (1, 1), (2, 2), False),
    ((6, 5), (1, 1), (1, 1), (0, 0), (2, 1), True),
]


@pytest.mark.parametrize("dtype", DTYPES)
def test_col2im(dtype):
    for (h, w), k, d, p, s, batched in FOLDS:
        bh = (h + 2 * p[0] - (d[0] * (k[0] - 1) + 1)) // s[0] + 1
        bw = (w + 2 * p[1] - (d[1] * (k[1] - 1) + 1)) // s[1] + 1
        x = torch.randn(*([2] if batched else []), 3 * k[0] * k[1], bh * bw, dtype=dtype)
        x.view(-1)[0], x.view(-1)[3] = math.inf, math.nan
        fn = lambda x: aten.col2im(x, [h, w], k, d, p, s)  # noqa: E731
        # eager sums f16/bf16 in their own dtype, ours in f32: the exact sum is the reference
        want = fn(x.double()).to(dtype) if dtype in (torch.float16, torch.bfloat16) else fn(x)
        _close(_compiled_aten(fn, x), want)


# ---------------------------------------------------------------- Triton interpreter
def test_aten_rules_through_the_triton_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    x = _image(torch.float32)
    for fn in (
        lambda x: aten.upsample_bilinear2d.vec(x, [9, 4], False, None),
        lambda x: aten.upsample_nearest2d.vec(x, None, [1.5, 0.5]),
        lambda x: aten._upsample_bilinear2d_aa(x, [3, 4], False, None, None),
    ):
        _close(_compiled_aten(fn, x, codegen="triton"), fn(x))
    cols = torch.randn(2, 3 * 6, 16)
    fold = lambda x: aten.col2im(x, [5, 6], [2, 3], [1, 1], [0, 0], [1, 1])  # noqa: E731
    _close(_compiled_aten(fold, cols, codegen="triton"), fold(cols))
    g, ln_x = torch.randn(3, 5), torch.randn(3, 5)
    w, bias = torch.randn(5), torch.randn(5)
    _, mean, rstd = aten.native_layer_norm(ln_x, [5], w, bias, 1e-5)
    back = lambda g, x, m, r, w, b: aten.native_layer_norm_backward(g, x, [5], m, r, w, b, [True, True, True])  # noqa: E731
    _close(_compiled_aten(back, g, ln_x, mean, rstd, w, bias, codegen="triton"), back(g, ln_x, mean, rstd, w, bias))
