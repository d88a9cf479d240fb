"""Small elementwise and shape ops (passes/decompositions/elementwise_extra.py and
the prim ops of dialects/prim_bits.py): compiled with no eager fallback allowed,
through the LLVM generator and Triton's interpreter, equal to eager at edge values."""

from __future__ import annotations

import math

import pytest
import torch

import strata
from strata.testing.no_fallback import compiled as _compiled
from strata.testing.no_fallback import same as _same

CODEGENS = ["llvm", "triton"]
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INF, NAN = math.inf, math.nan


@pytest.fixture(autouse=True)
def _interpreted(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def _edges(dtype: torch.dtype, codegen: str = "llvm") -> torch.Tensor:
    info = torch.finfo(dtype)
    values = [0.0, -0.0, 1.0, -1.0, 0.5, 3.0, -7.25, 1e-3, info.tiny, -info.tiny, info.max, -info.max,
              INF, -INF, NAN, 123.456, -0.1]
    if not (codegen == "triton" and dtype == torch.bfloat16):
        # (Triton's interpreter flushes bf16 subnormals to zero when it widens them.)
        values += [info.tiny / 4, -info.tiny / 8, info.smallest_normal * info.eps]
    return torch.tensor(values, dtype=torch.float64).to(dtype)


# ---------------------------------------------------------------- bits of floats
@pytest.mark.parametrize("codegen", CODEGENS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_frexp_matches_eager_bit_for_bit(codegen, dtype):
    x = _edges(dtype, codegen)
    fn = lambda x: torch.frexp(x)  # noqa: E731
    got, want = _compiled(fn, x, codegen=codegen), fn(x)
    assert got[1].dtype == torch.int32
    _same(tuple(got), tuple(want))


@pytest.mark.parametrize("codegen", CODEGENS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_nextafter_matches_eager_bit_for_bit(codegen, dtype):
    x = _edges(dtype, codegen)
    n = len(x)
    a = x.repeat_interleave(n)
    b = x.repeat(n)
    fn = torch.nextafter
    got, want = _compiled(fn, a, b, codegen=codegen), fn(a, b)
    keep = ~want.isnan()
    if codegen == "triton" and dtype == torch.bfloat16:
        keep &= want.abs() >= torch.finfo(dtype).tiny  # (the interpreter flushes bf16 subnormals)
    bits = {2: torch.int16, 4: torch.int32, 8: torch.int64}[dtype.itemsize]
    _same(got.view(bits)[keep], want.view(bits)[keep])
    assert torch.equal(got.isnan(), want.isnan())


@pytest.mark.parametrize("codegen", CODEGENS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_hypot(codegen, dtype):
    x = _edges(dtype, codegen)  # hypot of max overflows alike; keep finite pairs and inf/nan below
    y = torch.tensor([2.0, -3.0, INF, NAN, 0.0, -0.0], dtype=dtype)
    a, b = x.repeat_interleave(len(y)), y.repeat(len(x))
    _same(_compiled(torch.hypot, a, b, codegen=codegen), torch.hypot(a, b), exact=False)


# ---------------------------------------------------------------- integers
def _int_edges(dtype: torch.dtype) -> torch.Tensor:
    info = torch.iinfo(dtype)
    return torch.tensor([0, 1, -1, 2, -6, 12, 18, -35, 49, 1 << 20, info.max, info.min, info.min + 1], dtype=dtype)


@pytest.mark.parametrize("codegen", CODEGENS)
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("name", ["gcd", "lcm"])
def test_gcd_lcm_of_negatives_zero_and_extremes(codegen, dtype, name):
    x = _int_edges(dtype)
    n = len(x)
    a, b = x.repeat_interleave(n), x.repeat(n)
    # Fibonacci neighbours: Euclid's worst case, the most steps the type needs.
    fib = [1, 2]
    while fib[-1] + fib[-2] <= torch.iinfo(dtype).max:
        fib.append(fib[-1] + fib[-2])
    a = torch.cat([a, torch.tensor(fib[-1:], dtype=dtype)])
    b = torch.cat([b, torch.tensor(fib[-2:-1], dtype=dtype)])
    if name == "lcm":
        # Eager's a / gcd traps (SIGFPE) on MIN / -1: gcd(MIN, MAX) is -1 by C's %.
        safe = ~((a == torch.iinfo(dtype).min) & (torch.gcd(a, b) == -1))
        a, b = a[safe], b[safe]
    fn = getattr(torch, name)
    _same(_compiled(fn, a, b, codegen=codegen), fn(a, b))


@pytest.mark.parametrize("codegen", CODEGENS)
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("name", ["bitwise_left_shift", "bitwise_right_shift"])
def test_shifts_by_negative_and_wide_amounts(codegen, dtype, name):
    x = _int_edges(dtype)
    bits = dtype.itemsize * 8
    s = torch.tensor([0, 1, 3, bits - 1, bits, bits + 5, -1, -bits, 100], dtype=dtype)
    a, b = x.repeat_interleave(len(s)), s.repeat(len(x))
    fn = getattr(torch, name)
    _same(_compiled(fn, a, b, codegen=codegen), fn(a, b))
    _same(_compiled(lambda a: fn(a, 3), a, codegen=codegen), fn(a, 3))


@pytest.mark.parametrize("codegen", CODEGENS)
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_hardtanh_and_relu6_of_integers(codegen, dtype):
    x = _int_edges(dtype)
    F = torch.nn.functional
    for fn in (F.relu6, lambda x: F.hardtanh(x, -2.7, 5.9), lambda x: F.hardtanh(x, -0.5, 0.9), F.hardtanh):
        _same(_compiled(fn, x, codegen=codegen), fn(x))


@pytest.mark.parametrize("codegen", CODEGENS)
def test_sign_sgn_signbit_of_bool(codegen):
    x = torch.tensor([True, False, True])
    for fn in (torch.sign, torch.sgn, torch.signbit):
        _same(_compiled(fn, x, codegen=codegen), fn(x))
    y = _edges(torch.float32)
    _same(_compiled(torch.signbit, y, codegen=codegen), torch.signbit(y))


def test_to_the_same_dtype_on_the_graph_device():
    x = torch.randn(3, 4, dtype=torch.float64)
    fn = lambda x: x.to("cpu", torch.float64, copy=True) * 2  # noqa: E731
    _same(_compiled(fn, x), fn(x))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_renorm_of_half_types(dtype):
    x = torch.randn(3, 4, 5).to(dtype)
    fn = lambda x: torch.renorm(x, 2, 1, 0.5)  # noqa: E731
    _same(_compiled(fn, x), fn(x), exact=False)


# ---------------------------------------------------------------- scans, creation
@pytest.mark.parametrize("codegen", CODEGENS)
@pytest.mark.parametrize("dtype", FLOATS)
def test_logcumsumexp_infinities_nan_and_long_lines(codegen, dtype):
    special = torch.tensor([
        [-INF, -INF, 1.0, -INF, 2.0, INF, 3.0, -INF],
        [INF, INF, -INF, 5.0, NAN, 1.0, -INF, 2.0],
        [-1000.0, 0.0, -1000.0, 30.0, -30.0, 1e-3, 88.0, 88.5],
        [-INF] * 8,
    ]).to(dtype)
    lines = torch.cat([special, torch.randn(3, 8).to(dtype)])
    long = torch.randn(2, 300).to(dtype) * 20
    fn = lambda x, y: (torch.logcumsumexp(x, 1), torch.logcumsumexp(x, 0), torch.logcumsumexp(y, -1))  # noqa: E731
    _same(_compiled(fn, lines, long, codegen=codegen), fn(lines, long), exact=False)


def test_logcumsumexp_of_0d_and_empty():
    fn = lambda x, e: (torch.logcumsumexp(x, 0), torch.logcumsumexp(e, 1))  # noqa: E731
    args = torch.tensor(2.5), torch.empty(3, 0)
    _same(_compiled(fn, *args), fn(*args))


@pytest.mark.parametrize("codegen", CODEGENS)
@pytest.mark.parametrize("name", ["tril_indices", "triu_indices"])
def test_triangle_indices(codegen, name):
    fn = getattr(torch, name)
    # Offsets that leave rows out, cut the trapezoid short or make it all of it; one
    # large enough that the row's root is taken of big numbers.
    cases = [(4, 3, 0), (3, 5, -1), (5, 3, 2), (6, 6, -7), (8, 2, -3), (0, 4, 0), (300, 257, 11)]
    f = lambda: tuple(fn(r, c, o, dtype=torch.int32 if r % 2 else torch.int64) for r, c, o in cases)  # noqa: E731
    _same(_compiled(f, codegen=codegen), f())


# ---------------------------------------------------------------- as_strided
@pytest.mark.parametrize("codegen", CODEGENS)
def test_as_strided_at_storage_offsets_gathers_and_guards_the_offset(codegen):
    fn = lambda x: (torch.as_strided(x, (2, 3), (1, 2), 1), torch.as_strided_copy(x, (2, 2), (3, 1), 0))  # noqa: E731
    base = torch.arange(20.0)
    x = base[:9]
    _same(_compiled(fn, x, codegen=codegen), fn(x))
    # The same graph called with an input further into its storage reads other
    # elements in eager: it runs eagerly then, and says so.
    torch._dynamo.reset()
    compiled = strata.compile(fn, dynamic=False, options={"codegen": codegen})
    compiled(x)
    moved = base[3:12]
    with pytest.warns(UserWarning, match="storage offset 3"):
        _same(compiled(moved), fn(moved))
    # An input that starts inside its storage: offsets past its start are its elements.
    inner = base[5:15]
    g = lambda x: torch.as_strided(x, (2, 2), (1, 2), 10)  # noqa: E731
    _same(_compiled(g, inner, codegen=codegen), g(inner))


@pytest.mark.parametrize("codegen", CODEGENS)
@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16])
def test_gcd_of_narrow_integers_wraps_as_eager(codegen, dtype):
    info = torch.iinfo(dtype)
    x = torch.arange(info.min, info.max + 1, 3, dtype=torch.int64).to(dtype)[:200]
    extremes = torch.tensor([info.min, info.max, 0, 1, info.max - 1], dtype=torch.int64).to(dtype)
    a = torch.cat([x, extremes.repeat_interleave(5)])
    b = torch.cat([x.flip(0), extremes.repeat(5)])
    _same(_compiled(torch.gcd, a, b, codegen=codegen), torch.gcd(a, b))
