"""Python ints that Dynamo makes symbolic are not sizes: they may be negative.

Each case is a function of a tensor and an int, compiled once and called with ints of
both signs, so that Dynamo's automatic dynamic (or dynamic=True) turns the int into a
symbol; every call must give eager's value. Where strata lowers the op it must not fall
back (the `lowered` cases), so that these check strata's arithmetic, not torch's.
"""

from __future__ import annotations

import math
import warnings

import pytest
import sympy
import torch

import strata
from strata.codegen.triton_index import int_code
from strata.dialects.types import from_torch_sympy, is_signed, symbol
from strata.runtime.index_values import evaluate

KS = (2, 3, -3, -1, 0, 7, -7)
X3 = torch.ones(3)
A5 = torch.arange(5.0)
A12 = torch.arange(12.0)


def _calls(f, calls, dynamic=None, codegen="llvm", lowered=True):
    torch._dynamo.reset()
    compiled = strata.compile(f, dynamic=dynamic, options={"codegen": codegen})
    with warnings.catch_warnings():
        if lowered:
            warnings.filterwarnings("error", message=".*no lowering covers.*")
            warnings.filterwarnings("error", message=".*runs eagerly.*")
            warnings.filterwarnings("error", message=".*kernel interpreter.*")
        for args in calls:
            torch.testing.assert_close(compiled(*args), f(*args), rtol=0, atol=0, msg=lambda m: f"{args[1:]}: {m}")


INT_CASES = {
    "abs": lambda x, k: x * abs(k),
    "floordiv": lambda x, k: x * (k // 3),
    "floordiv_negative_divisor": lambda x, k: x * (k // -3),
    "negated_floordiv": lambda x, k: x * (-k // 2),
    "mod": lambda x, k: x * (k % 5),
    "mod_negative_divisor": lambda x, k: x * (k % -3),
    "max": lambda x, k: x * max(k, 0),
    "min": lambda x, k: x * min(k, 0),
    "full": lambda x, k: x + torch.full((3,), k),
}


@pytest.mark.parametrize("dynamic", [None, True], ids=["automatic", "dynamic"])
@pytest.mark.parametrize("name", sorted(INT_CASES))
def test_int_arithmetic_follows_python(name, dynamic):
    _calls(INT_CASES[name], [(X3, k) for k in KS], dynamic)


@pytest.mark.parametrize("codegen", ["llvm", "triton"])
def test_roll_by_a_negative_int(codegen, monkeypatch):
    if codegen == "triton":
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    _calls(lambda x, k: x.roll(k), [(A5, k) for k in KS], codegen=codegen)
    grid = torch.arange(12.0).view(3, 4)
    _calls(lambda x, k: x.roll((k, -k), (0, 1)), [(grid, k) for k in KS], codegen=codegen)


def test_indexing_with_a_negative_int():
    _calls(lambda x, k: x[k] * 2, [(A12, k) for k in (2, 3, -3, -1, -12, 0)])
    _calls(lambda x, k: x[torch.tensor([0, 1]) + k], [(A12, k) for k in (2, 3, -3, -1)])


def test_slices_with_ints_of_either_sign():
    # where sympy cannot place the slice, strata declines to eager: never a guess
    _calls(lambda x, k: x.narrow(0, k, 2) * 2, [(A12, k) for k in (2, 3, -3, -5, 0)], lowered=False)
    _calls(lambda x, k: x[k:] * 2, [(A12, k) for k in (2, 3, -3, -1, -12, 0, 20, -20)], lowered=False)
    _calls(lambda x, k: x[:k] * 2, [(A12, k) for k in (2, 3, -3, -1, -12, 0, 20, -20)], lowered=False)


@torch._dynamo.config.patch(capture_scalar_outputs=True)
def test_values_read_by_item():
    ints = [(X3, torch.tensor(k)) for k in KS]
    for f in (
        lambda x, t: x * abs(t.item()),
        lambda x, t: x * (t.item() // 3),
        lambda x, t: x * (t.item() % 5),
        lambda x, t: x * max(t.item(), 0),
    ):
        _calls(f, ints, lowered=False)
    _calls(lambda x, t: x.roll(t.item()), [(A5, torch.tensor(k)) for k in (2, -3, -1)], lowered=False)
    floats = [(X3, torch.tensor(v)) for v in (2.5, -3.25, -0.5)]
    _calls(lambda x, t: x * math.floor(t.item()), floats, lowered=False)
    _calls(lambda x, t: x * abs(t.item()), floats, lowered=False)


@torch._dynamo.config.patch(capture_scalar_outputs=True)
@pytest.mark.parametrize("codegen", ["llvm", "triton"])
def test_a_roll_by_a_bound_of_an_item_is_compiled(codegen, monkeypatch):
    """x.roll(min(-t.item(), -1)) (the differential fuzzer, seed nov28t, program 400):
    the shift is an expression of the item's symbol, which the Triton generator prints
    with tl.minimum; before, its kernel ran in the kernel interpreter."""
    if codegen == "triton":
        monkeypatch.setenv("TRITON_INTERPRET", "1")
    _calls(lambda x, t: x.roll(min(-t.item(), -1), 0) * 2, [(A5, torch.tensor(k)) for k in (2, -3, 0, 7)], codegen=codegen)


@pytest.mark.parametrize("dynamic", [None, True], ids=["automatic", "dynamic"])
def test_view_uses_the_divisibility_torch_proved(dynamic):
    _calls(lambda x: x.view(-1, 4).sum(1), [(torch.arange(float(n)),) for n in (8, 16, 24)], dynamic)


def test_symbols_are_named_by_sign():
    size, int_arg = sympy.Symbol("s0", integer=True, positive=True), sympy.Symbol("s1", integer=True)
    assert from_torch_sympy(size) == symbol("s0") and symbol("s0").is_nonnegative
    assert from_torch_sympy(sympy.Abs(int_arg)) == sympy.Abs(symbol("ns1"))  # not folded to ns1
    assert symbol("ns1").is_nonnegative is None and symbol("ms1").is_negative
    assert symbol("zuf0").is_integer is None  # a float: floor(zuf0) stays a floor
    assert is_signed(symbol("ns1") + 1) and not is_signed(symbol("s0") + 1)


@pytest.mark.parametrize("k", [-7, -5, -1, 0, 1, 4, 9])
def test_index_arithmetic_rounds_as_python(k):
    """The three evaluators of index expressions (the runtime's, the Triton printer's
    in both roundings, LLVM's through a compiled roll above) floor toward -inf."""
    n = symbol("nk")
    for expr, want in [
        (sympy.Mod(n + 3, 5), (k + 3) % 5),
        (sympy.floor(n / 3), k // 3),
        (sympy.ceiling(n / 3), -((-k) // 3)),
        (sympy.Abs(n), abs(k)),
        (sympy.Min(-1, -n), min(-1, -k)),
        (sympy.Max(-2, n, 3 - n), max(-2, k, 3 - k)),
    ]:
        assert evaluate(expr, {"nk": k}) == want
        code = int_code(expr).replace("tl.abs", "abs").replace("tl.maximum", "max").replace("tl.minimum", "min")
        assert eval(code, {"nk": k}) == want  # Python's rounding
        assert eval(_truncating(code), {"nk": k, "tdiv": _tdiv, "tmod": _tmod}) == want


def _tdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _tmod(a, b):
    return a - b * _tdiv(a, b)


def _truncating(code: str) -> str:
    """Triton's reading of printed index code: `//` and `%` truncate toward zero."""
    import ast

    class Truncate(ast.NodeTransformer):
        def visit_BinOp(self, node):
            self.generic_visit(node)
            fn = {ast.FloorDiv: "tdiv", ast.Mod: "tmod"}.get(type(node.op))
            if fn is None:
                return node
            return ast.Call(ast.Name(fn, ast.Load()), [node.left, node.right], [])

    tree = Truncate().visit(ast.parse(code, mode="eval"))
    return ast.unparse(ast.fix_missing_locations(tree))


@torch._dynamo.config.patch(capture_scalar_outputs=True)
def test_an_int_computed_from_item_is_returned():
    """The graph returns it: only the running program knows the value."""

    def f(x, t):
        k = t.item()
        return x * 2, max(k, -2) - 2, k // -3

    _calls(f, [(X3, torch.tensor(k)) for k in (3, -7, 0)], lowered=False)


@torch._dynamo.config.patch(capture_scalar_outputs=True)
def test_an_assertion_on_a_value_no_op_gives_runs_eagerly():
    """torch asserts on the storage offset of a slice strata leaves to eager (u2): a
    symbol no op of the program binds. The graph then runs as eager does."""

    def f(x, t):
        return x.narrow(-2, t.sum().item(), 1)

    xs = [torch.tensor([[[1], [0]]]), torch.tensor([[[0], [1]]]), torch.tensor([[[0], [-1]]])]
    _calls(f, [(x, x) for x in xs], lowered=False)


def test_an_int_output_is_computed_as_python_computes_it():
    """torch records `(k // -3) // -3` as `k // 9`, which is wrong for k = 7: the graph's
    int output is computed from its FX nodes instead."""

    def f(x, k):
        return x * 2, (k // -3) // -3

    torch._dynamo.reset()
    compiled = strata.compile(f)
    for k in (5, 7, -4, 20):
        assert compiled(X3, k)[1] == f(X3, k)[1], k


def test_a_negative_value_computed_from_a_size_floors_as_python():
    """k proved non-negative (a size-like s symbol), yet `-k // 5` is negative: the
    kernel computing it divides as Python does, not as unsigned integers."""

    def f(x, k):
        return x / ((-k) // 5), torch.arange(12.0)[(-k) // 5]

    _calls(f, [(X3, k) for k in (2, 5, 7, 11)], lowered=False)


def test_cat_with_a_1d_tensor_of_symbolic_size_beside_others():
    """Eager skips a 1-d empty tensor in a cat of others (a legacy rule): one of symbolic
    size runs as eager's cat, never a crash in the decomposition."""
    def f(k, x):
        return torch.cat([x, torch.arange(k // 5)], 1)

    c = torch.compile(f, backend="strata", dynamic=True)
    x = torch.zeros(3, 4, 4, dtype=torch.long)
    for k in (3, 4, 2):
        torch.testing.assert_close(c(k, x), f(k, x))


@pytest.mark.parametrize("codegen", ["llvm", "triton"])
def test_a_remainder_by_a_negative_int_in_an_index_takes_the_divisors_sign(codegen):
    """k % -4 of a k proved non-negative is in (-4, 0]: computed as an unsigned
    remainder it was 4 for k = 4 (an arange of 4 elements written into a buffer of 0)."""
    def f(x, k):
        return torch.arange(max(k % -4, -2) + 2) + x.sum().long(), x[k]

    c = torch.compile(f, backend="strata", dynamic=True, options={"codegen": codegen})
    x = torch.ones(12)
    for k in (4, 5, 7, 11):
        for got, want in zip(c(x, k), f(x, k)):
            torch.testing.assert_close(got, want)
