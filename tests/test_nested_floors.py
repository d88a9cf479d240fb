"""Sizes computed in steps agree with the same size as torch writes it: nested floors
flattened (dialects/types.flatten_floors), so a ResNet stem under dynamic=True compiles
with no eager fallback."""

from __future__ import annotations

import warnings

import pytest
import sympy
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

import strata
from strata.dialects.types import dim_attr, flatten_floors, sym


def test_two_stride_2_steps_print_as_one():
    # strata's size after two stride-2 convolutions, and torch's ShapeEnv's
    assert dim_attr(sym("floor(floor(s0/2 - 1/2)/2) + 1")) == dim_attr(sym("floor(s0/4 - 1/4) + 1"))
    assert flatten_floors(sym("floor(floor(floor(s0/2)/2)/2)")) == sym("floor(s0/8)")


def test_floors_that_do_not_nest_exactly_are_kept():
    for text in ("floor(floor(s0/2)/2 + 1/4)", "floor(2*floor(s0/3)/3)", "floor(floor(s0/2)/2 + floor(s0/3)/2)"):
        assert flatten_floors(sym(text)) == sym(text)


@settings(max_examples=200, deadline=None)
@given(
    a=st.integers(1, 7), c=st.integers(-7, 7), d=st.integers(1, 7),
    n=st.integers(1, 6), k=st.integers(-6, 6), m=st.integers(0, 3),
)
def test_flattened_floors_have_the_same_values(a, c, d, n, k, m):
    s = sym("s0")
    # floor(floor((a·s + c)/d)/n + k/n + m·s): flattened where k/n·n and m·s·n are integers
    expr = sympy.floor(sympy.floor((a * s + c) / d) / n + sympy.Rational(k, n) + m * s)
    flat = flatten_floors(expr)
    assert flat.count(sympy.floor) <= 1
    for value in range(0, 40):
        assert int(flat.subs(s, value)) == int(expr.subs(s, value))


def test_resnet_stem_under_dynamic_shapes_has_no_fallback():
    torch.manual_seed(0)
    stem = nn.Sequential(
        nn.Conv2d(3, 8, 7, stride=2, padding=3), nn.ReLU(), nn.Conv2d(8, 8, 3, stride=2, padding=1), nn.MaxPool2d(3, 2, 1)
    ).eval()
    compiled = strata.compile(stem, dynamic=True)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("error")  # an eager fallback warns
        for h, w in ((32, 35), (48, 51), (37, 40), (5, 8)):
            x = torch.randn(2, 3, h, w)
            torch.testing.assert_close(compiled(x), stem(x), atol=1e-5, rtol=1e-5)


def test_max_pool_indices_on_symbolic_sizes():
    def pool(x):
        return nn.functional.max_pool2d(x, 3, 2, 1, return_indices=True)

    compiled = strata.compile(pool, dynamic=True)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("error")
        for h, w in ((9, 12), (16, 7), (23, 31)):
            x = torch.randn(1, 2, h, w)
            got, want = compiled(x), pool(x)
            torch.testing.assert_close(got[0], want[0])
            assert torch.equal(got[1], want[1])


def test_a_convolution_output_size_is_known_non_negative():
    """floor(s/2 - 1/2) + 1 (a stride-2 convolution's output over an input of size s ≥ 0)
    is never negative: a division by it needs no sign correction, and the Triton code
    generator took it for a divisor that may be negative (resnet18 under dynamic=True
    on a GPU ran a kernel in the interpreter)."""
    from strata.codegen.triton_index import int_code
    from strata.dialects.types import may_be_negative, sym

    assert not may_be_negative(sym("floor(s53/2 - 1/2) + 1"))
    assert not may_be_negative(sym("2*floor(s1/4 - 1/4) + 2"))
    assert may_be_negative(sym("floor(s53/2 - 3/2) + 1"))  # -1 at s53 = 0
    assert may_be_negative(sym("floor(zf0/2) + 1"))  # a float symbol: no integer floor bound
    int_code(sym("floor(ns0/(floor(s53/2 - 1/2) + 1))"))  # no CodegenError


# torch (2.11) writes a division it proved exact spread over a sum: max_pool2d's output
# height (s53 + 1)/2 for an odd s53, and an index into it, x0*(s53 + 1)/2*(w + 1) + ...,
# as the sum below. Only the whole sum is an integer; floored term by term it lost the
# halves (max_pool2d(x, 3, 2, 1, return_indices=True) under dynamic=True: wrong values).
_SPREAD = [
    ("s53*x0*floor(s0/2 - 1/2)/2 + s53*x0/2 + x0*floor(s0/2 - 1/2)/2 + x0/2 + x1*floor(s0/2 - 1/2) + x1 + x2",
     {"s53": (9, 23), "s0": (12, 7)}),
    ("s0/2 + 1/2", {"s0": (1, 9)}),
    ("s0*x0/4 + x0/4 + x1", {"s0": (3, 11)}),
]


@pytest.mark.parametrize("text, sizes", _SPREAD)
def test_an_exact_division_spread_over_a_sum_is_evaluated_whole(text, sizes):
    import itertools

    import llvmlite.binding as llvm
    import llvmlite.ir as ir

    from strata.codegen import llvm_jit
    from strata.codegen.llvm_index import lower_index
    from strata.codegen.triton_index import int_code
    from strata.runtime.index_values import evaluate
    from strata.runtime.package_plan import int_code as package_code
    from strata.runtime.package_runner import int_function

    e = sym(text)
    names = sorted(s.name for s in e.free_symbols)
    fn = ir.Function(ir.Module(), ir.FunctionType(ir.IntType(64), [ir.IntType(64)] * len(names)), "index")
    b = ir.IRBuilder(fn.append_basic_block())
    b.ret(lower_index(b, e, dict(zip(names, fn.args))))
    llvm_jit.initialize()
    engine = llvm.create_mcjit_compiler(llvm.parse_assembly(str(fn.module)), llvm_jit._target_machine())
    engine.finalize_object()
    import ctypes

    compiled = ctypes.CFUNCTYPE(ctypes.c_int64, *[ctypes.c_int64] * len(names))(engine.get_function_address("index"))
    triton_code, package = int_code(e), int_function(package_code(e))
    loops = {n: range(4) for n in names if n not in sizes}
    for values in itertools.product(*[sizes.get(n, loops.get(n)) for n in names]):
        env = dict(zip(names, values))
        exact = e.subs({sym(k): v for k, v in env.items()})
        assert exact.is_Integer, (text, env)
        assert evaluate(e, env) == exact, ("evaluator", env)
        assert eval(triton_code, {}, env) == exact, ("triton", env)  # noqa: S307 (generated integer code)
        assert package(env) == exact, ("package", env)
        assert compiled(*values) == exact, ("llvm", env)
