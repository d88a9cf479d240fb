"""Data-dependent results in the graph (dialects/prim_data_dependent.py): nonzero, mask
indexing, masked_select, Tensor.item() and randperm, compiled with Dynamo's capture
flags on, with no eager fallback allowed, and equal to eager; on the CPU (LLVM) and
through Triton's interpreter. Without the flags Dynamo breaks the graph as before."""

from __future__ import annotations

import math
import operator
import warnings

import pytest
import torch

import strata
from strata.testing.no_fallback import compiled

NAN, INF = math.nan, math.inf


@pytest.fixture(autouse=True)
def capture_flags():
    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True, capture_scalar_outputs=True):
        yield


def _compiled(fn, *args, codegen=None):
    return compiled(fn, *args, codegen=codegen or "llvm")


def _same(got, want):
    if isinstance(want, torch.Tensor):
        assert isinstance(got, torch.Tensor) and got.dtype == want.dtype and got.shape == want.shape
        torch.testing.assert_close(got, want, equal_nan=True)
        return
    if isinstance(want, int | float):
        assert type(got) is type(want)
        torch.testing.assert_close(torch.tensor(got, dtype=torch.float32), torch.tensor(want, dtype=torch.float32), equal_nan=True)
        return
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _same(g, w)


def _edge(dtype):
    x = torch.tensor([[0.0, -1.5, NAN, 2.0], [INF, 0.0, -0.0, -INF], [3.0, 0.0, 1e30, -2.0]])
    if dtype.is_floating_point:
        return x.to(dtype)
    return torch.nan_to_num(x, nan=7.0, posinf=5.0, neginf=-5.0).clamp(-9, 9).to(dtype)


# ---------------------------------------------------------------- nonzero and masks
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.bool])
def test_nonzero_and_argwhere(dtype):
    x = _edge(dtype)
    for fn in (torch.nonzero, torch.argwhere, lambda x: torch.nonzero(x.reshape(-1)), lambda x: x.nonzero(as_tuple=True)):
        _same(_compiled(fn, x), fn(x))


def test_nonzero_of_no_and_all_elements():
    for x in (torch.zeros(3, 4), torch.ones(2, 3), torch.zeros(0, 3), torch.tensor(2.0), torch.tensor(0.0)):
        _same(_compiled(torch.nonzero, x), torch.nonzero(x))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool])
def test_boolean_mask_indexing(dtype):
    x = _edge(dtype)
    y = torch.arange(24.0).reshape(3, 4, 2).to(dtype)
    cases = [
        (lambda x: x[x > 0] if x.dtype != torch.bool else x[x], x),
        (lambda x: x[x != x] if x.dtype.is_floating_point else x[x == x], x),  # NaNs only, or all
        (lambda y: y[y[:, :, 0] > 5], y),  # a 2-d mask over the leading dims
        (lambda y: y[:, y[0, :, 1] > 2], y),  # a mask over a middle dim
        (lambda y: y[y > 1000], y),  # nothing selected
    ]
    for fn, a in cases:
        _same(_compiled(fn, a), fn(a))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int32, torch.bool])
def test_masked_select_broadcasts(dtype):
    x = _edge(dtype)
    row_mask = torch.tensor([True, False, True, True])
    col_mask = torch.tensor([[True], [False], [True]])
    for mask in (x != 0, row_mask, col_mask):
        _same(_compiled(torch.masked_select, x, mask), torch.masked_select(x, mask))
    # (x broadcast by a larger mask is left out: torch's meta function bounds the count
    # by x's numel, and its runtime assertion fails under aot_eager as it does here.)


def test_unbacked_size_flows_into_later_ops():
    def fn(x, w):
        i = torch.nonzero(x > 0)
        v = x[x > 0]
        return (
            i.sum(),
            i.reshape(-1),
            torch.cat([i, i + 1]),
            i.to(x.dtype) @ w,  # a library call on a data-dependent shape
            v.sum(),
            v.mean(),
            v.reshape(-1, 1) * w[0],
            v.cumsum(0),
            x[i[:, 0], i[:, 1]],  # integer indices of data-dependent length
            torch.full((2,), i.shape[0]),  # the size as a value
            torch.zeros(i.shape[0], 2) + 1,  # the size as a shape, with no data flow
        )

    x, w = torch.randn(6, 2), torch.randn(2, 3)
    x[0, 1] = 0.0
    _same(_compiled(fn, x, w), fn(x, w))
    x = -x.abs()  # nothing positive: every data-dependent size is 0
    _same(_compiled(fn, x, w), fn(x, w))


def test_kernel_before_a_nonzero_does_not_take_what_needs_its_size():
    def fn(x, y):
        z = y.exp()
        i = torch.nonzero(x > 0)
        return z, y * 2 + i.shape[0], i

    x, y = torch.randn(5, 2), torch.randn(3)
    _same(_compiled(fn, x, y), fn(x, y))


def test_a_new_input_rebinds_the_size():
    fn = lambda x: x[x > 0] * 2  # noqa: E731
    torch._dynamo.reset()
    compiled = strata.compile(fn)
    for n in (0, 3, 7):
        x = torch.cat([torch.ones(n), -torch.ones(10 - n)])[torch.randperm(10)]
        _same(compiled(x), fn(x))


# ---------------------------------------------------------------- item()
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.int64, torch.int32, torch.bool])
def test_item_as_fill_value_and_scalar(dtype):
    def fn(x):
        if dtype == torch.bool:  # (a bool item() in arithmetic makes the graph run eagerly)
            s = x.any().item()
            return torch.full((3,), s), torch.full((2,), s, dtype=torch.float16)
        s = x.sum().item()
        return torch.full((3,), s), torch.full((2,), s, dtype=torch.float16), x.float() * s, x.to(torch.bfloat16) + s

    for x in (_edge(dtype), torch.zeros(2, 2, dtype=dtype)):
        if dtype != torch.bool:
            x = torch.nan_to_num(x, nan=1.0, posinf=3.0, neginf=-2.0).clamp(-4, 4)
        _same(_compiled(fn, x), fn(x))


@pytest.mark.parametrize("special", [NAN, INF, -INF, -0.0, 1e30])
def test_item_of_special_values(special):
    fn = lambda x: (torch.full((2,), x.max().item()), torch.clamp(x, max=x.max().item()))  # noqa: E731
    x = torch.tensor([[1.0, special], [0.5, -3.0]])
    _same(_compiled(fn, x), fn(x))


def test_item_as_a_size():
    def fn(x):
        n = (x > 0).sum().item()
        torch._check(n >= 0)
        return torch.zeros(n) + 1, torch.arange(n) * 2

    for x in (torch.randn(7), -torch.ones(3)):
        _same(_compiled(fn, x), fn(x))


def test_item_assertion_raises_as_eager():
    def fn(x):
        n = (x > 0).sum().item()
        torch._check(n < 3)
        return torch.ones(n)

    torch._dynamo.reset()
    compiled = strata.compile(fn)
    _same(compiled(torch.tensor([1.0, -1.0])), fn(torch.tensor([1.0, -1.0])))
    with pytest.raises(RuntimeError):
        compiled(torch.ones(5))


def test_arithmetic_on_an_item_falls_back_correctly():
    fn = lambda x: torch.full((3,), x.sum().item() * 2.5 + 1.0)  # noqa: E731
    x = torch.randn(4)
    torch._dynamo.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = strata.compile(fn)(x)
    assert any("no lowering covers aten::full" in str(w.message) for w in caught)
    _same(got, fn(x))


@pytest.mark.parametrize("values", [[1, 2, 3], [5, -9, 1], [-4, 0, 0], [7, 7, 7]])
def test_integer_arithmetic_on_an_item_is_compiled_and_exact(values):
    """abs, %, // and max of an int item() (Python's semantics, negative values too),
    used as operands and a fill: computed on the host once prim.item binds the value,
    with no eager fallback."""
    def fn(x, y):
        n = x.sum().item()
        return y * (n // 2 - 3), y + abs(n - 7), y * max(n, 4), y * (n % 3), torch.full((2,), n * n - 5 * n)

    x, y = torch.tensor(values), torch.randn(4)
    torch._dynamo.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = strata.compile(fn)(x, y)
    assert not [w for w in caught if "strata" in str(w.message)], [str(w.message) for w in caught]
    for g, w in zip(got, fn(x, y)):
        assert torch.equal(g, w), (g, w)


# ---------------------------------------------------------------- randperm
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.float32])
def test_randperm_follows_manual_seed(dtype):
    def fn(x):
        return torch.randperm(6, dtype=dtype) + x, torch.randperm(x.shape[0])

    x = torch.zeros(6, dtype=dtype)
    torch.manual_seed(7)
    want = fn(x)
    torch.manual_seed(7)
    _same(_compiled(fn, x), want)


# ---------------------------------------------------------------- Triton, flags off
def test_triton_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")

    def fn(x, w):
        v = x[x > 0]
        i = torch.nonzero(x)
        return v * 2 + 1, i.sum(0), torch.masked_select(x, x < 0).exp(), torch.full((3,), x.max().item()) * w

    x, w = torch.randn(5, 3), torch.randn(3)
    _same(_compiled(fn, x, w, codegen="triton"), fn(x, w))


def test_without_the_flags_dynamo_breaks_the_graph():
    def fn(x):
        return torch.nonzero(x * 2), x.sum().item() + 1

    x = torch.randn(4, 3)
    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=False, capture_scalar_outputs=False):
        torch._dynamo.reset()
        with warnings.catch_warnings():
            warnings.filterwarnings("error", message=".*no lowering covers.*")
            warnings.filterwarnings("error", message=".*runs eagerly.*")
            got = strata.compile(fn)(x)
    _same(got, fn(x))


def test_floor_divisions_and_modulos_of_an_item_by_negative_ints_are_python_s():
    """torch records `(v // 3) // -3` as `v // -9` (a fold exact for positive divisors
    only): strata rebuilds the int from the graph's operators
    (frontend/capture/int_expressions.py), or where it cannot (a power) runs the graph
    as torch does. Found by the differential fuzzer: for a sum of 10 it returned -2,
    not -1. Each int is its own graph (Dynamo merges ints whose recorded expressions
    agree, so `(v // 2) // -2` next to `v // -4` is the latter already in the graph)."""
    ints = [
        lambda v: (v // 3) // -3,
        lambda v: (v // -4) % -3,
        lambda v: (v % -7) // 2,
        lambda v: (abs(v) // 3) // -3,
        lambda v: ((v // 5) // -2) ** 2,
    ]
    for i, of in enumerate(ints):
        def fn(x, of=of):
            return of(x.sum().item()), x + 1

        g = strata.compile(fn, fullgraph=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the ints may run as eager kernels; their values are the point
            for total in (10, -10, 9, 11, 17, 0, -1):
                x = torch.tensor([total, 0])
                assert g(x)[0] == fn(x)[0], (i, total)


def test_int_expression_rebuilds_nested_floor_divisions():
    import sympy
    from torch.fx.experimental.proxy_tensor import make_fx

    from strata.frontend.capture.int_expressions import int_expression

    def fn(x):
        v = x.sum().item()
        return torch.full((1,), (v // 3) // -3)

    gm = make_fx(fn, tracing_mode="symbolic")(torch.tensor([10, 0]))
    node = next(n for n in gm.graph.nodes if n.target is operator.floordiv and n.args[1] == -3)
    expr = int_expression(node)
    (u,) = expr.free_symbols
    assert expr.subs(u, 10) == -1 and expr.subs(u, 9) == -1 and expr.subs(u, -10) == 1
    assert expr == sympy.floor(sympy.floor(u / 3) / -3)


def test_a_size_from_a_floor_division_of_a_floor_division_by_a_negative_int_is_eager_s():
    """The same fold in a size: torch records `(s // 3) // -3 + 10` as `s // -9 + 10`
    (TorchInductor gives 8 elements for s = 10, eager 9). strata cannot rebuild a
    tensor's size from the graph's operators, so the graph runs as torch runs it, and
    says why."""
    def fn(x):
        n = (x.shape[0] // 3) // -3 + 10
        return torch.arange(n, dtype=torch.float32) + x.sum()

    g = strata.compile(fn, dynamic=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for size in (10, 11, 17):
            x = torch.ones(size)
            _same(g(x), fn(x))
    assert any("not known to be positive" in str(w.message) for w in caught), [str(w.message) for w in caught]


def test_an_int_the_graph_only_returns_does_not_make_it_run_eagerly():
    from torch.fx.experimental.proxy_tensor import make_fx

    from strata.frontend.capture.int_expressions import misrecorded

    def returned(x):
        return x + 1, (x.shape[0] // 3) // -3

    def sized(x):
        return torch.zeros((x.shape[0] // 3) // -3 + 10)

    assert misrecorded(make_fx(returned, tracing_mode="symbolic")(torch.ones(10)).graph) is None
    assert "not known to be positive" in misrecorded(make_fx(sized, tracing_mode="symbolic")(torch.ones(10)).graph)


def test_a_floor_division_by_a_size_keeps_the_graph_compiled():
    """A size is positive, so torch's fold of `(s // 2) // t` is exact: the graph is
    compiled, not refused."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from strata.frontend.capture.int_expressions import misrecorded

    def fn(x):
        return torch.zeros((x.shape[0] // 2) // x.shape[1] + 1)

    assert misrecorded(make_fx(fn, tracing_mode="symbolic")(torch.ones(12, 3)).graph) is None


def test_a_graph_aotautograd_cannot_trace_runs_eagerly_with_a_warning():
    """One of torch's decompositions guards on an unbacked symbol (a row an item()
    value picked, of an empty dim), which AOTAutograd cannot answer (TorchInductor
    raises there): strata runs the graph as Dynamo traced it, says so, and every call
    behaves as eager's. Found by the differential fuzzer (seed nov28c, program 1598)."""
    from strata.testing.differential import replay
    from strata.testing.fuzz_inputs import tensor

    def f(x0, idx0, idx1):
        v1 = x0[x0.sum().item()]
        return v1.take(idx0), torch.nn.functional.embedding(idx1, v1)

    calls = [(tensor((2, 0, 2), torch.int64, "expanded", seed=0), torch.zeros((0,), dtype=torch.int64), torch.tensor([0])),
             (tensor((1, 6, 0), torch.int64, "expanded", seed=1), torch.zeros((0,), dtype=torch.int64), torch.tensor([5])),
             (tensor((6, 1, 4), torch.int64, "expanded", seed=2), torch.zeros((0,), dtype=torch.int64), torch.tensor([0]))]
    report = replay(f, calls, dynamic=True, capture_scalar_outputs=True)
    assert not report.mismatches, [m.detail for m in report.mismatches]
    assert report.fallbacks["eager_fallback"] >= 1  # the warning, counted by the fuzzer's rules
