"""Fusion's judgement of which views torch would copy (passes/fusion/plan.py
`view_strides`, `copied_through_views`): for any permuted, broadcast or sliced tensor
and any shape of its size, view_strides gives None exactly where torch's view raises,
and otherwise the strides torch's view has; and a program whose product reads such a
copy computes what eager computes, with the kernel writing the copied layout."""

from __future__ import annotations

import math

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from strata.passes.fusion.plan import view_strides


@st.composite
def viewed_tensors(draw):
    rank = draw(st.integers(1, 4))
    sizes = draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank))
    x = torch.empty(sizes)
    if draw(st.booleans()):  # broadcast some dims of size 1
        wide = [s if s > 1 or not draw(st.booleans()) else draw(st.integers(2, 3)) for s in sizes]
        x = x.expand(wide)
    x = x.permute(draw(st.permutations(range(rank))))
    if draw(st.booleans()):  # a strided slice of one dim
        d = draw(st.integers(0, rank - 1))
        x = x[(slice(None),) * d + (slice(None, None, draw(st.integers(1, 2))),)]
    factors = [p for n in x.shape for p in _primes(n)]
    factors = draw(st.permutations(factors))
    cuts = sorted(draw(st.lists(st.integers(0, len(factors)), max_size=3)))
    new, start = [], 0
    for cut in [*cuts, len(factors)]:
        new.append(math.prod(factors[start:cut]))
        start = cut
    if draw(st.booleans()):
        new.insert(draw(st.integers(0, len(new))), 1)
    return x, new


def _primes(n: int) -> list[int]:
    out, p = [], 2
    while n > 1:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    return out


@settings(max_examples=400, deadline=None)
@given(viewed_tensors())
def test_view_strides_follow_torchs_view_rule(case):
    x, new = case
    try:
        want = x.view(new).stride()
    except RuntimeError:
        want = None
    got = view_strides(list(x.shape), list(x.stride()), new)
    if want is None or got is None:
        assert got == want, (x.shape, x.stride(), new)
    else:  # a dim of size 1 takes any stride
        assert all(a == b for a, b, n in zip(got, want, new) if n != 1), (x.shape, x.stride(), new, got, want)


def test_a_product_of_a_permuted_reshape_matches_eager():
    import strata

    def f(x, w):
        return torch.exp(x).permute(1, 0, 2).reshape(8, 64) @ w

    x, w = torch.randn(4, 8, 16), torch.randn(64, 5)
    torch.testing.assert_close(strata.compile(f)(x, w), f(x, w))
