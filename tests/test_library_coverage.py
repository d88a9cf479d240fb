"""Ops lowered to library calls (dialects/prim_scan.py, prim_indexing.py, prim_linalg.py)
and adaptive max pooling: compiled on CPU with no eager fallback allowed, and equal to
eager (indices to the element, ties and NaNs included)."""

from __future__ import annotations

import warnings

import pytest
import torch

import strata


def _compiled(fn, *args):
    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*no lowering covers.*")
        warnings.filterwarnings("error", message=".*runs eagerly.*")
        return strata.compile(fn)(*args)


def _same(got, want, exact: bool = True):
    if isinstance(want, torch.Tensor):
        assert got.dtype == want.dtype and got.shape == want.shape
        if exact:
            torch.testing.assert_close(got, want, rtol=0, atol=0, equal_nan=True)
        else:
            torch.testing.assert_close(got, want, equal_nan=True)
        return
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _same(g, w, exact)


def _ties():
    x = torch.tensor([[3.0, 1.0, 3.0, 2.0, 1.0, 3.0], [float("nan"), 0.0, 0.0, float("nan"), 5.0, 0.0]])
    return torch.cat([x, torch.randint(0, 3, (3, 6)).float()])


LINE_OPS = {
    "cummax": lambda x: torch.cummax(x, 1),
    "cummin": lambda x: torch.cummin(x, 0),
    "kthvalue": lambda x: torch.kthvalue(x, 2, 1),
    "kthvalue_keepdim": lambda x: torch.kthvalue(x, 3, 0, keepdim=True),
    "median_dim": lambda x: torch.median(x, 1),
    "nanmedian_dim": lambda x: torch.nanmedian(x, 1, keepdim=True),
    "median": lambda x: torch.median(x),
    "nanmedian": lambda x: torch.nanmedian(x),
    "mode": lambda x: torch.mode(x, 1),
}


@pytest.mark.parametrize("name", LINE_OPS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_line_ops_match_eager_with_ties(name, dtype):
    x = _ties()
    if not dtype.is_floating_point:
        x = torch.nan_to_num(x, nan=7.0).to(dtype)
    fn = LINE_OPS[name]
    _same(_compiled(fn, x), fn(x))


@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_bucketize_and_sorter(right):
    seq = torch.tensor([[1, 2, 2, 3, 5], [0, 0, 4, 4, 9]])
    values = torch.tensor([[2, 0, 5, 6], [4, 0, 10, -1]])
    _same(_compiled(lambda s, v: torch.searchsorted(s, v, right=right), seq, values),
          torch.searchsorted(seq, values, right=right))
    flat, order = torch.sort(torch.tensor([5.0, 1.0, 3.0, 3.0]))
    unsorted = torch.tensor([5.0, 1.0, 3.0, 3.0])
    sorter = torch.argsort(unsorted)
    v = torch.tensor([3.0, 0.5, 6.0])
    fn = lambda s, v, o: torch.searchsorted(s, v, side="right" if right else "left", sorter=o, out_int32=True)  # noqa: E731
    _same(_compiled(fn, unsorted, v, sorter), fn(unsorted, v, sorter))
    b = torch.tensor([1.0, 2.0, 4.0])
    x = torch.tensor([[0.5, 2.0], [4.0, 9.0]])
    _same(_compiled(lambda x, b: torch.bucketize(x, b, right=right), x, b), torch.bucketize(x, b, right=right))
    fn = lambda v: torch.isin(v, torch.tensor([1.0, 3.0]))  # noqa: E731
    _same(_compiled(fn, unsorted), fn(unsorted))


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce(reduce, include_self):
    x, src = torch.randn(4, 3), torch.randn(5, 3)
    index = torch.tensor([0, 2, 0, 3, 2])
    fn = lambda x, i, s: x.index_reduce(0, i, s, reduce, include_self=include_self)  # noqa: E731
    _same(_compiled(fn, x, index, src), fn(x, index, src))


@pytest.mark.parametrize("accumulate", [False, True])
def test_put_and_nonzero_static(accumulate):
    x, index, src = torch.randn(3, 4), torch.tensor([[0, -1], [5, 0]]), torch.randn(4)
    fn = lambda x, i, s: torch.put(x, i, s, accumulate=accumulate)  # noqa: E731
    _same(_compiled(fn, x, index, src), fn(x, index, src))
    m = torch.tensor([[0, 1, 0], [2, 0, 3]])
    for size in (2, 6):
        fn = lambda m, size=size: torch.nonzero_static(m, size=size, fill_value=-7)  # noqa: E731
        _same(_compiled(fn, m), fn(m))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_adaptive_max_pool2d_ties_and_nan(dtype):
    x = torch.randint(0, 3, (2, 3, 7, 9)).to(dtype)
    x[0, 0, 1, 1] = float("nan")
    x[1, 2, 4, 4] = float("-inf")
    x[1, 1] = float("-inf")
    for size in [(3, 4), (7, 2), (1, 1), (2, 9)]:
        fn = lambda x, size=size: torch.nn.functional.adaptive_max_pool2d(x, size, return_indices=True)  # noqa: E731
        _same(_compiled(fn, x), fn(x))


LINALG = {
    "svd": lambda a: torch.linalg.svd(a, full_matrices=False),
    "svd_full": lambda a: torch.linalg.svd(a),
    "svdvals": lambda a: torch.linalg.svdvals(a),
    "qr": lambda a: torch.linalg.qr(a),
    "qr_complete": lambda a: torch.linalg.qr(a, mode="complete"),
    "pinv": lambda a: torch.linalg.pinv(a),
    "pinv_atol": lambda a: torch.linalg.pinv(a, atol=torch.tensor(0.5, dtype=a.dtype)),
}
SQUARE = {
    "eigh": lambda a: torch.linalg.eigh(a + a.mT),
    "eigvalsh_upper": lambda a: torch.linalg.eigvalsh(a, UPLO="U"),
    "det": lambda a: torch.linalg.det(a),
    "slogdet": lambda a: torch.linalg.slogdet(a),
    "logdet": lambda a: torch.logdet(a @ a.mT),
}


@pytest.mark.parametrize("name", [*LINALG, *SQUARE])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_lapack_library_calls(name, dtype):
    torch.manual_seed(0)
    fn = LINALG.get(name) or SQUARE[name]
    a = torch.randn(2, 4, 4 if name in SQUARE else 3, dtype=dtype)
    _same(_compiled(fn, a), fn(a), exact=False)
