"""Views sized by shape symbols, made once the ordinary way per input layout and
binding, and later by one reinterpretation (runtime/views.py: SymbolicViewCache)."""

from __future__ import annotations

import torch

import strata
from strata.runtime.views import SymbolicViewCache


def test_a_layout_is_remembered_per_input_and_binding():
    made = []

    def view(x, env):
        made.append(env["n"])
        return x.reshape(env["n"], -1)

    cache = SymbolicViewCache(view, ("n",))
    x = torch.arange(12.0)
    for n in (3, 4, 3, 4, 2):
        y = cache(x, {"n": n})
        assert y.shape == (n, 12 // n) and y.data_ptr() == x.data_ptr()
        assert torch.equal(y, x.reshape(n, -1))
    assert made == [3, 4, 2]  # the repeated bindings were reinterpreted, not reshaped
    s = torch.arange(24.0)[::2]  # the same sizes, another stride: learned on its own
    assert torch.equal(cache(s, {"n": 3}), s.reshape(3, -1)) and made == [3, 4, 2, 3]


def test_a_copy_is_not_remembered():
    cache = SymbolicViewCache(lambda x, env: x.reshape(env["n"], -1), ("n",))
    x = torch.arange(12.0).reshape(3, 4).t()  # reshape must copy
    for _ in range(2):
        y = cache(x, {"n": 12})
        assert torch.equal(y, x.reshape(12, -1)) and not cache.known


def test_compiled_views_of_one_input_under_two_bindings():
    def f(x, n):
        return (x.reshape(n, -1) * 2).sum(0)

    compiled = strata.compile(f, dynamic=True)
    x = torch.arange(24.0)
    for n in (2, 3, 4, 3, 2, 6):
        torch.testing.assert_close(compiled(x, n), f(x, n))
