"""infer-shapes: on graphs imported from torch.compile (static and dynamic=True) it
agrees with the types the importer took from torch; after decompose it agrees with the
prim ops' own rules; a wrong declared type is an error naming op, pass and shapes."""

from __future__ import annotations

import pytest
import sympy
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.utils.exceptions import PassFailedException

from strata.dialects.context import parse_module, strata_context
from strata.passes.decompose import DecomposePass
from strata.passes.infer_shapes import InferShapesPass
from strata.testing.capture import Capture
from strata.testing.cases import CASES, INT_CASES


def _infer(module):
    InferShapesPass(trust_traced=False).apply(strata_context(), module)  # rerun torch's meta functions
    module.verify()
    return module


# ("reductions" is missing: its var_mean imports as an aten.call carrying `dim` as a
# property, which aten.call does not define, so the imported module does not verify.)
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize(
    "case", ["transformer_block", "views", "slices", "normalization", "creation", "linalg", "integers"]
)
def test_agrees_with_torch_on_imported_graphs(case, dynamic):
    fn, make = {**CASES, **INT_CASES}[case]
    torch._dynamo.reset()
    capture = Capture([])
    with torch.no_grad():
        capture.compile(fn, dynamic=dynamic)(*make(5, 7, torch.float32))
    (graph, _), = capture.graphs
    text = str(graph.module)
    assert str(_infer(graph.module.clone())) == text


def test_agrees_with_prim_rules_after_decompose():
    fn, make = CASES["transformer_block"]
    torch._dynamo.reset()
    capture = Capture([DecomposePass()])
    with torch.no_grad():
        capture.compile(fn, dynamic=True)(*make(2, 5, torch.float32))
    (_, module), = capture.graphs
    assert "prim.bmm" in capture.op_names()
    assert str(_infer(module.clone())) == str(module)


def _graph(body: str, args: str, results: str) -> str:
    return f"func.func @graph({args}) -> {results} {{\n{body}\n}}"


def test_wrong_aten_result_type_is_reported():
    module = parse_module(_graph(
        """
        %r = aten.mm.default %a, %b : (!strata.tensor<["s0", 4], f32>, !strata.tensor<[4, 5], f32>) -> !strata.tensor<["s0", 6], f32>
        func.return %r : !strata.tensor<["s0", 6], f32>""",
        '%a : !strata.tensor<["s0", 4], f32>, %b : !strata.tensor<[4, 5], f32>',
        '!strata.tensor<["s0", 6], f32>',
    ))
    with pytest.raises(PassFailedException) as e:
        _infer(module)
    message = str(e.value)
    assert "infer-shapes" in message and "aten.mm.default" in message
    assert '["s0", 6]' in message and '["s0", 5]' in message


def test_operands_torch_rejects_are_reported():
    module = parse_module(_graph(
        """
        %r = aten.mm.default %a, %b : (!strata.tensor<[3, 4], f32>, !strata.tensor<[5, 5], f32>) -> !strata.tensor<[3, 5], f32>
        func.return %r : !strata.tensor<[3, 5], f32>""",
        "%a : !strata.tensor<[3, 4], f32>, %b : !strata.tensor<[5, 5], f32>",
        "!strata.tensor<[3, 5], f32>",
    ))
    with pytest.raises(PassFailedException, match=r"infer-shapes: .*aten.mm.default rejects operands"):
        _infer(module)


def test_wrong_prim_result_type_is_reported():
    module = parse_module(_graph(
        """
        %r = prim.permute %a {dims = array<i64: 1, 0>} : (!strata.tensor<[3, 4], f32>) -> !strata.tensor<[3, 4], f32>
        func.return %r : !strata.tensor<[3, 4], f32>""",
        "%a : !strata.tensor<[3, 4], f32>",
        "!strata.tensor<[3, 4], f32>",
    ))
    with pytest.raises(PassFailedException, match=r"prim.permute declares result 0 as .*\[3, 4\].* give .*\[4, 3\]"):
        _infer(module)


def test_function_type_follows_the_returned_values():
    # A stale function type (here: the result before a keepdim was added) is
    # rewritten from what func.return returns.
    module = parse_module(_graph(
        """
        %t = prim.permute %a {dims = array<i64: 1, 0>} : (!strata.tensor<["s0", 4], f32>) -> !strata.tensor<[4, "s0"], f32>
        %r = aten.sum.dim_IntList %t {dim = [1 : i64], keepdim = true} : (!strata.tensor<[4, "s0"], f32>) -> !strata.tensor<[4, 1], f32>
        func.return %r : !strata.tensor<[4, 1], f32>""",
        '%a : !strata.tensor<["s0", 4], f32>',
        "!strata.tensor<[4], f32>",
    ))
    _infer(module)
    (fn,) = module.ops
    assert fn.function_type.outputs.data[0] == fn.body.block.last_op.operands[0].type


def test_guarded_results_keep_the_declared_type():
    # Whether `end` clamps to the dim depends on s0 <= s1, which torch decided with
    # real sizes when it traced; with made-up hints inference may not overrule it.
    for declared in ('"s0"', '"s1"'):
        module = parse_module(_graph(
            f"""
            %r = aten.slice.Tensor %a {{end = "s0"}} : (!strata.tensor<["s1"], f32>) -> !strata.tensor<[{declared}], f32>
            func.return %r : !strata.tensor<[{declared}], f32>""",
            '%n : index, %a : !strata.tensor<["s1"], f32>',
            f"!strata.tensor<[{declared}], f32>",
        ))
        assert f"tensor<[{declared}], f32>" in str(_infer(module))


def test_data_dependent_sizes_keep_the_declared_type():
    module = parse_module(_graph(
        """
        %nz = aten.nonzero.default %a : (!strata.tensor<[5], f32>) -> !strata.tensor<["u0", 1], i64>
        %r = aten.add.Tensor %nz, %nz : (!strata.tensor<["u0", 1], i64>, !strata.tensor<["u0", 1], i64>) -> !strata.tensor<["u0", 1], i64>
        func.return %r : !strata.tensor<["u0", 1], i64>""",
        "%a : !strata.tensor<[5], f32>",
        '!strata.tensor<["u0", 1], i64>',
    ))
    assert 'tensor<["u0", 1], i64>' in str(_infer(module))


@pytest.mark.parametrize("declared, right", [('"2*floor(s0/2 + 1/2)"', True), ('"s0"', False)])
def test_floor_division_sizes_map_back_to_sympy(declared, right):
    # torch writes x[::2] of a symbolic dim with its own FloorDiv, strata with floor();
    # cat takes such sizes back as FloorDiv and infers its result without guards.
    half = '"floor(s0/2 + 1/2)"'
    module = parse_module(_graph(
        f"""
        %r = aten.slice.Tensor %a {{step = 2 : i64}} : (!strata.tensor<["s0"], f32>) -> !strata.tensor<[{half}], f32>
        %c = aten.cat.default %r, %r {{segments = array<i64: 2>}} : (!strata.tensor<[{half}], f32>, !strata.tensor<[{half}], f32>) -> !strata.tensor<[{declared}], f32>
        func.return %c : !strata.tensor<[{declared}], f32>""",
        '%a : !strata.tensor<["s0"], f32>',
        f"!strata.tensor<[{declared}], f32>",
    ))
    if right:
        assert str(_infer(module.clone())) == str(module)
    else:
        with pytest.raises(PassFailedException, match=r"aten.cat.default .* give .*2\*floor\(s0/2 \+ 1/2\)"):
            _infer(module)


_DIM_POOL = [3, 4, sympy.Integer(4), "s0", "s0 + 1", "1 + s0", "2*s0", "s0*(s1 + 1)", "s0*s1 + s0", "s0**2 - 1",
             "(s0 - 1)*(s0 + 1)", "floor(s0/2)*2", "s0 - Mod(s0, 2)"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_DIM_POOL), st.sampled_from(_DIM_POOL)), min_size=1, max_size=4))
def test_same_dims_agrees_with_simplify(pairs):
    """The verifiers' dim comparison (fast paths before sympy.simplify) answers as
    simplify does on every pair."""
    from strata.dialects.prim import same_dims
    from strata.dialects.types import sym

    a = [x if isinstance(x, int | sympy.Expr) else sympy.sympify(x) for x, _ in pairs]
    b = [y if isinstance(y, int | sympy.Expr) else sympy.sympify(y) for _, y in pairs]
    want = all(sympy.simplify(sym(x) - sym(y)) == 0 for x, y in zip(a, b))
    assert same_dims(a, b) == want
