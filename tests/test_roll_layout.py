"""torch.roll's results have eager's strides, and so have the values computed from them.

Eager's CPU roll is the cat of two narrowed pieces of its input: a channels-last input
gives a channels-last result, unless the shift is a multiple of the dim's size (a
piece is then empty: contiguous), and the ops after it follow that layout. strata
keeps roll whole through AOTAutograd, traced in that layout (frontend/capture/roll_layout.py),
and lowers it as one gather (passes/decompositions/rearrange.py), with no eager
fallback, under static and dynamic shapes, for shifts of either sign, symbolic ones
included, and in training.
"""

from __future__ import annotations

import itertools
import random
import warnings

import pytest
import torch

import strata
from strata.frontend.capture.roll_layout import _cpu_format

SHIFTS = (1, -2, 0, 7, 6, -13, 12)


def _channels_last(*shape: int) -> torch.Tensor:
    return torch.randn(*shape).to(memory_format=torch.channels_last)


def _rolled_and_derived(x0, x1, k):
    v2 = x0.roll(k, 2)
    return v2, v2 / x1, v2.permute(3, 2, 1, 0)


def _same_layout(got: torch.Tensor, want: torch.Tensor) -> bool:
    """Equal strides where they address something: dims of size 1 and empty tensors aside."""
    return want.numel() == 0 or all(g == w or n == 1 for g, w, n in zip(got.stride(), want.stride(), want.shape))


def _check_calls(fn, calls, dynamic=None):
    """Each call compiled (one compiled function for all) gives eager's values and
    strides, with no eager fallback."""
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend="strata", dynamic=dynamic)
    for args in calls:
        with warnings.catch_warnings():
            for message in (".*no lowering covers.*", ".*runs eagerly.*", ".*kernel interpreter.*"):
                warnings.filterwarnings("error", message=message)
            got = compiled(*args)
        want = fn(*args)
        got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
        for i, (g, w) in enumerate(zip(got, want)):
            where = f"result {i} of {[a for a in args if not isinstance(a, torch.Tensor)]}"
            assert _same_layout(g, w), f"{where}: strides {g.stride()}, eager's {w.stride()}"
            torch.testing.assert_close(g, w, rtol=0, atol=0, msg=lambda m: f"{where}: {m}")


@pytest.mark.parametrize("dynamic", [None, True], ids=["automatic", "dynamic"])
def test_a_channels_last_roll_and_what_follows_keep_eager_strides(dynamic):
    x1 = torch.randn(2, 4, 6, 4)
    x0 = _channels_last(2, 4, 6, 4)
    assert _rolled_and_derived(x0, x1, 1)[1].stride() == (96, 1, 16, 4)
    assert _rolled_and_derived(x0, x1, 6)[0].is_contiguous()  # an empty piece
    _check_calls(_rolled_and_derived, [(x0, x1, k) for k in SHIFTS], dynamic)


@pytest.mark.parametrize("dynamic", [None, True], ids=["automatic", "dynamic"])
def test_rolls_of_several_dims_and_of_the_flattened_tensor(dynamic):
    def several(x, k):
        return x.roll((k, -k, 2 * k), (2, 3, 1)) * 2

    def flattened(x, k):
        return x.roll(k) + 1

    def same_dim_twice(x, k):
        return x.roll((k, 1), (-1, 3))

    inputs = [_channels_last(2, 4, 6, 4), _channels_last(3, 5, 6, 7), torch.randn(2, 4, 4, 6).transpose(2, 3),
              torch.randn(2, 3, 4, 5, 6).to(memory_format=torch.channels_last_3d), torch.randn(4, 6).t()]
    for fn in (several, flattened, same_dim_twice):
        for x in inputs:
            if fn is not flattened and x.dim() < 4:
                continue
            _check_calls(fn, [(x, k) for k in SHIFTS], dynamic)


def test_a_complex_roll():
    def f(x, k):
        return x.roll((k, 1), (2, -1)) * 2, x.roll(k) + 1

    x = torch.randn(2, 4, 6, 4, dtype=torch.complex64).to(memory_format=torch.channels_last)
    _check_calls(f, [(x, k) for k in SHIFTS], dynamic=True)


def test_empty_and_broadcast_inputs():
    def f(x0, x1, k):
        v = x0.roll(k, -3)
        return v, v / x1

    calls = [
        (_channels_last(3, 5, 2, 4), torch.randn(5, 2, 4), 5),
        (_channels_last(2, 6, 5, 0), torch.randn(6, 5, 0), 2),
        (_channels_last(1, 4, 6, 4), torch.randn(2, 1, 6, 4), -3),
    ]
    _check_calls(f, calls)


@torch._dynamo.config.patch(capture_scalar_outputs=True)
def test_a_shift_item_read():
    def f(x, t):
        return x.roll(t.item(), 2) * 2

    # as if the shift splits the dim: eager's layout for any shift but multiples of 6
    _check_calls(f, [(_channels_last(2, 4, 6, 4), torch.tensor(k)) for k in (2, -3, 7)])


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_training_through_a_roll(dynamic):
    def f(x, w, k):
        v = x.roll((k, 1), (2, 3))
        return (v * w).sin(), v

    torch._dynamo.reset()
    compiled = torch.compile(f, backend="strata", dynamic=dynamic)
    for k in (1, -2, 6, 5):
        x, w = _channels_last(2, 4, 6, 4).requires_grad_(), torch.randn(2, 4, 6, 4, requires_grad=True)
        xe, we = (t.detach().clone(memory_format=torch.preserve_format).requires_grad_() for t in (x, w))
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message=".*no lowering covers.*")
            got = compiled(x, w, k)
            (got[0].sum() + (got[1] * got[1]).sum()).backward()
        want = f(xe, we, k)
        (want[0].sum() + (want[1] * want[1]).sum()).backward()
        for g, e in [*zip(got, want), (x.grad, xe.grad), (w.grad, we.grad)]:
            assert _same_layout(g, e)
            torch.testing.assert_close(g, e)


def _layouts(shape: tuple[int, ...], rng: random.Random):
    x = torch.randn(*shape)
    yield x
    if len(shape) in (4, 5):
        yield x.to(memory_format=torch.channels_last if len(shape) == 4 else torch.channels_last_3d)
    perm = list(range(len(shape)))
    rng.shuffle(perm)
    yield torch.randn(*[shape[p] for p in perm]).permute(*[perm.index(i) for i in range(len(shape))])
    yield torch.randn(*[2 * n for n in shape])[tuple(slice(None, None, 2) for _ in shape)]


def test_the_layout_rule_is_eagers():
    """_cpu_format against eager's CPU roll: every rank to 5, sizes 0 to 3, dense,
    permuted and sliced inputs, dims and shifts of either sign (strides of size-1 dims
    aside)."""
    rng = random.Random(0)
    checked = 0
    for rank in range(1, 6):
        for shape in itertools.product(range(4), repeat=rank):
            if rng.random() > (1.0 if rank < 4 else 0.15):
                continue
            for x in _layouts(shape, rng):
                dims = rng.sample(range(-rank, 0) if rng.random() < 0.3 else range(rank), rng.randint(1, rank))
                dims = dims if rng.random() > 0.15 else []
                shifts = [rng.randint(-4, 4) for _ in dims or [0]]
                fmt = _cpu_format(x, shifts, dims)
                want = torch.empty(shape) if fmt is None else torch.empty_like(x, memory_format=fmt)
                got = x.roll(shifts, dims)
                assert _same_layout(got, want), (
                    f"{shape} strides {x.stride()} rolled by {shifts} over {dims}: "
                    f"eager {got.stride()}, rule {want.stride()}")
                checked += 1
    assert checked > 500


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_a_cuda_roll_is_contiguous_as_eagers():
    x0, x1 = _channels_last(2, 4, 6, 4).cuda(), torch.randn(2, 4, 6, 4, device="cuda")
    assert _rolled_and_derived(x0, x1, 1)[0].is_contiguous()
    _check_calls(_rolled_and_derived, [(x0, x1, k) for k in (1, -2, 6)])


def test_strata_compile_keeps_the_layout():
    x = _channels_last(2, 3, 4, 5)
    f = lambda x: x.roll(-1, 3).relu()  # noqa: E731
    assert strata.compile(f)(x).stride() == f(x).stride() == (60, 1, 15, 3)
