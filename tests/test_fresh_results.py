"""Graph results are separate tensors where eager's are, and views where eager's are
(passes/fusion/fresh_results.py, frontend/capture/importer.py's `_result_bases`)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import strata


def _shares(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


CASES = {
    "clone": lambda x: x.clone(),
    "contiguous of a transpose": lambda x: x.t().contiguous(),
    "clone of a slice": lambda x: x[1:].clone(),
    "detach": lambda x: x.detach(),
    "transpose": lambda x: x.t(),
    "split": lambda x: x.split(2, dim=1)[1],
    "transpose of a clone": lambda x: x.clone().t(),
}
EAGER_ALIASES = {"detach", "transpose", "split"}


@pytest.mark.parametrize("name", list(CASES))
def test_a_result_aliases_the_input_exactly_when_eager_s_does(name):
    fn = CASES[name]
    x = torch.randn(3, 4)
    before = x.clone()
    got, want = strata.compile(fn)(x), fn(x)
    torch.testing.assert_close(got, want)
    assert _shares(got, x) == (name in EAGER_ALIASES) == _shares(want, x)
    if name not in EAGER_ALIASES:
        got.add_(1.0)  # a write into a fresh result leaves the input as it was
        torch.testing.assert_close(x, before)


def test_a_value_and_its_clone_are_two_tensors():
    def fn(x):
        y = x.sin()
        return y, y.clone(), y.t().contiguous()

    x = torch.randn(3, 4)
    a, b, c = strata.compile(fn)(x)
    for got, want in zip((a, b, c), fn(x)):
        torch.testing.assert_close(got, want)
    assert not _shares(a, b) and not _shares(a, c) and c.is_contiguous()


def test_views_of_one_result_stay_views_of_it():
    def fn(x):
        y = x.sin()
        c = x.clone()
        return y, y.t(), y[1:].t(), c, c.t(), y.clone()

    x = torch.randn(3, 4)
    got, want = strata.compile(fn)(x), fn(x)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
        assert g.stride() == w.stride()
    y, yt, ys, c, ct, yc = got
    assert _shares(y, yt) and _shares(y, ys) and _shares(c, ct)
    assert not _shares(c, x) and not _shares(yc, y)
    y.add_(1.0)  # as in eager, the views see the write
    torch.testing.assert_close(yt, y.t())


def test_permuted_contiguous_is_contiguous():
    x = torch.randn(2, 3, 4, 5)
    got = strata.compile(lambda x: x.permute(0, 2, 3, 1).contiguous())(x)
    assert got.is_contiguous() and not _shares(got, x)
    torch.testing.assert_close(got, x.permute(0, 2, 3, 1))


@settings(max_examples=12, deadline=None)
@given(st.lists(st.sampled_from(list(CASES)), min_size=1, max_size=4))
def test_no_two_results_share_memory_unless_eager_s_do(names):
    # Results of one graph: two share memory exactly when eager's two do.
    fns = [CASES[n] for n in names]

    def graph(x):
        return tuple(f(x) for f in fns)

    x = torch.randn(3, 4)
    got, want = strata.compile(graph)(x), graph(x)
    for i in range(len(fns)):
        torch.testing.assert_close(got[i], want[i])
        assert _shares(got[i], x) == _shares(want[i], x)
        for j in range(i):
            assert _shares(got[i], got[j]) == _shares(want[i], want[j])
