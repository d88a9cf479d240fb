"""A compiled graph's results have eager's strides (the importer records them,
passes/fusion/layouts.py lays them out, runtime/compiled_graph.py copies what is
left): channels-last stays channels-last through pointwise ops
and convolutions, a transposed input's pointwise result is laid out as the input, with
static and dynamic shapes, as under TorchInductor."""

from __future__ import annotations

import pytest
import torch

import strata


def _channels_last(*shape: int) -> torch.Tensor:
    return torch.randn(*shape).to(memory_format=torch.channels_last)


def _relu_plus_one(x):
    return torch.relu(x) + 1


def _check(compiled, fn, *args):
    got, want = compiled(*args), fn(*args)
    assert got.stride() == want.stride(), f"strides {got.stride()}, eager's {want.stride()}"
    torch.testing.assert_close(got, want)


def test_a_channels_last_pointwise_result_stays_channels_last(tmp_path):
    x = _channels_last(2, 3, 4, 5)
    assert _relu_plus_one(x).stride() == (60, 1, 15, 3)
    _check(torch.compile(_relu_plus_one, backend="strata"), _relu_plus_one, x)
    # the kernel writes it channels-last itself: no copy into eager's layout after it
    torch._dynamo.reset()
    options = {"trace.enabled": True, "trace.dir": str(tmp_path)}
    _check(strata.compile(_relu_plus_one, options=options), _relu_plus_one, x)
    (program,) = tmp_path.rglob("2_kernel.mlir")
    assert "strata.strides = [[60 : i64, 1 : i64, 15 : i64, 3 : i64]]" in program.read_text()


@pytest.mark.parametrize("dims", [(1, 0), (2, 0, 1)], ids=["t", "permute"])
def test_a_transposed_input_gives_its_layout_to_a_pointwise_result(dims):
    x = torch.randn(*[3, 4, 5][: len(dims)])

    def f(x):
        return x.permute(*dims) * 2 + 1

    assert not f(x).is_contiguous()
    _check(torch.compile(f, backend="strata"), f, x)


@pytest.mark.parametrize("dims", [(2,), (1, 3)], ids=["one", "two"])
def test_a_flip_of_a_channels_last_input_is_channels_last(dims):
    """The flip is a gather the program returns through a permute (a view of a kernel's
    output only the result holds): it is laid out as eager's."""
    def f(x):
        return x.flip(dims)

    _check(torch.compile(f, backend="strata"), f, _channels_last(3, 2, 3, 3))


@pytest.mark.parametrize("channels_last_weight", [False, True])
def test_a_convolution_of_a_channels_last_input_is_channels_last(channels_last_weight):
    torch.manual_seed(0)
    conv = torch.nn.Conv2d(3, 8, 3).eval()
    if channels_last_weight:
        conv = conv.to(memory_format=torch.channels_last)
    x = _channels_last(2, 3, 6, 7)
    with torch.no_grad():
        assert conv(x).is_contiguous(memory_format=torch.channels_last)
        _check(torch.compile(conv, backend="strata"), conv, x)
        block = torch.nn.Sequential(conv, torch.nn.ReLU())
        _check(torch.compile(block, backend="strata"), block, x)


def test_dynamic_shapes_keep_eager_strides():
    compiled = torch.compile(_relu_plus_one, backend="strata", dynamic=True)
    for shape in [(2, 3, 4, 5), (3, 5, 6, 7)]:
        _check(compiled, _relu_plus_one, _channels_last(*shape))
    conv = torch.nn.Conv2d(3, 4, 3).eval()
    compiled_conv = torch.compile(conv, backend="strata", dynamic=True)
    with torch.no_grad():
        for shape in [(2, 3, 6, 7), (1, 3, 9, 8)]:
            _check(compiled_conv, conv, _channels_last(*shape))


def test_a_broadcast_result_of_symbolic_sizes_keeps_eager_strides():
    """TensorIterator writes a broadcast result's strides as products of Max(1, size):
    read as the sizes they are wherever the result has an element, the layout is still
    told dense (the differential fuzzer found the result made row-major)."""
    def f(n, x):
        return torch.arange(n) * x

    compiled = torch.compile(f, backend="strata", dynamic=True)
    for n, shape in [(4, (3, 2, 4, 1)), (5, (2, 3, 2, 1))]:
        _check(compiled, f, n, _channels_last(*shape))


def test_strides_guarded_against_empty_dims_read_as_products_of_sizes():
    import sympy

    from strata.passes.fusion.layouts import at_least_one_sized, is_permuted_dense

    s0, s1 = sympy.Symbol("s0", integer=True, positive=True), sympy.Symbol("s1", integer=True, positive=True)
    traced = [s0 * sympy.Max(1, s1), sympy.Max(1, s1), 1]
    assert [at_least_one_sized(d) for d in traced] == [s0 * s1, s1, 1]
    assert is_permuted_dense([3, s0, s1], [s0 * s1, 1, s0])
    assert at_least_one_sized(sympy.Max(2, s1)) == sympy.Max(2, s1)  # not torch's guard: kept


def test_training_keeps_strides_of_results_and_gradients():
    def f(x):
        return torch.relu(x) * x + 1

    x = _channels_last(2, 3, 4, 5).requires_grad_()
    got, want = strata.compile(f)(x), f(x)
    assert got.stride() == want.stride()
    (grad,), (eager_grad,) = torch.autograd.grad(got.sum(), x), torch.autograd.grad(want.sum(), x)
    assert grad.stride() == eager_grad.stride()
    torch.testing.assert_close(grad, eager_grad)


def test_results_that_share_memory_still_share_it():
    """A result and its view: eager's share memory, and so do strata's."""

    def f(x):
        y = torch.relu(x) + 1
        return y, y.permute(0, 2, 3, 1)

    x = _channels_last(2, 3, 4, 5)
    got = torch.compile(f, backend="strata")(x)
    assert got[1].data_ptr() == got[0].data_ptr()
    for a, b in zip(got, f(x)):
        torch.testing.assert_close(a, b)


def test_dense_permutations_are_told_from_other_layouts():
    import sympy

    from strata.passes.fusion.layouts import is_permuted_dense

    n, h = sympy.Symbol("s0", integer=True, positive=True), sympy.Symbol("s1", integer=True, positive=True)
    assert is_permuted_dense([2, 3, 4, 5], [60, 1, 15, 3])  # channels-last
    assert is_permuted_dense([n, 3, h, 5], [15 * h, 1, 15, 3])  # channels-last, symbolic
    assert not is_permuted_dense([2, 3, 4, 5], [60, 20, 5, 1])  # row-major: nothing to do
    assert not is_permuted_dense([3, 4], [0, 1])  # broadcast: overlapping
    assert not is_permuted_dense([3, 4], [8, 1])  # a slice's gaps
    assert is_permuted_dense([4, 1, 3], [1, 7, 4])  # a dim of size 1 addresses nothing


def test_a_view_kernels_read_and_the_graph_returns_keeps_aliasing_its_input():
    """narrow at a negative symbolic start runs as eager's slice (a view of the input);
    a kernel doubles it and the graph returns it permuted: the kernel reads a contiguous
    copy, the result stays the view AOTAutograd rebuilds from the input."""
    def f(k, x):
        v = x.narrow(1, k, 1)
        return v.permute(1, 0), v * 2

    compiled = torch.compile(f, backend="strata", dynamic=True)
    x = torch.arange(18.0).reshape(3, 6)
    for k in (-1, -3, 2):
        for got, want in zip(compiled(k, x), f(k, x)):
            assert got.stride() == want.stride()
            torch.testing.assert_close(got, want)
