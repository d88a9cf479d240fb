"""simplify: folds identity views and conversions, collapses view chains, merges
common subexpressions and deletes dead code, without changing values and without
deleting an aten op that writes or draws random numbers."""

from __future__ import annotations

import pytest
import torch

from strata.dialects.context import parse_module, strata_context
from strata.passes.decompose import DecomposePass
from strata.passes.infer_shapes import InferShapesPass
from strata.passes.simplify import SimplifyPass
from strata.runtime.interpret import interpret
from strata.testing.capture import run_case
from strata.testing.closeness import assert_close
from strata.testing.cases import CASES


def _module(body: str, args: str, results: str):
    return parse_module(f"func.func @graph({args}) -> {results} {{\n{body}\n}}")


def _simplify(module, inputs):
    """Runs the pass, checks values against those before it, returns the op names."""
    before = interpret(module, inputs)
    SimplifyPass().apply(strata_context(), module)
    module.verify()
    assert_close(before, interpret(module, inputs))
    return [op.name for op in module.walk()][2:-1]  # inside func.func, before func.return


T = "!strata.tensor<[3, 4], f32>"


def test_identity_views_and_conversions_fold():
    names = _simplify(
        _module(
            f"""
            %b = prim.broadcast_in_dim %a {{shape = [3 : i64, 4 : i64], broadcast_dimensions = array<i64: 0, 1>}} : ({T}) -> {T}
            %c = prim.convert_element_type %b {{dtype = "f32"}} : ({T}) -> {T}
            %p = prim.permute %c {{dims = array<i64: 0, 1>}} : ({T}) -> {T}
            %r = prim.reshape %p {{shape = [3 : i64, 4 : i64]}} : ({T}) -> {T}
            %e = prim.exp %r : ({T}) -> {T}
            func.return %e : {T}""",
            f"%a : {T}",
            T,
        ),
        [torch.randn(3, 4)],
    )
    assert names == ["prim.exp"]


def test_chains_collapse():
    names = _simplify(
        _module(
            """
            %p = prim.permute %a {dims = array<i64: 1, 2, 0>} : (!strata.tensor<[2, 3, 4], f32>) -> !strata.tensor<[3, 4, 2], f32>
            %q = prim.permute %p {dims = array<i64: 2, 0, 1>} : (!strata.tensor<[3, 4, 2], f32>) -> !strata.tensor<[2, 3, 4], f32>
            %r = prim.reshape %q {shape = [6 : i64, 4 : i64]} : (!strata.tensor<[2, 3, 4], f32>) -> !strata.tensor<[6, 4], f32>
            %s = prim.reshape %r {shape = [24 : i64]} : (!strata.tensor<[6, 4], f32>) -> !strata.tensor<[24], f32>
            %b = prim.broadcast_in_dim %s {shape = [5 : i64, 24 : i64], broadcast_dimensions = array<i64: 1>} : (!strata.tensor<[24], f32>) -> !strata.tensor<[5, 24], f32>
            %c = prim.broadcast_in_dim %b {shape = [2 : i64, 5 : i64, 24 : i64], broadcast_dimensions = array<i64: 1, 2>} : (!strata.tensor<[5, 24], f32>) -> !strata.tensor<[2, 5, 24], f32>
            %p2 = prim.permute %a {dims = array<i64: 1, 0, 2>} : (!strata.tensor<[2, 3, 4], f32>) -> !strata.tensor<[3, 2, 4], f32>
            %p3 = prim.permute %p2 {dims = array<i64: 2, 0, 1>} : (!strata.tensor<[3, 2, 4], f32>) -> !strata.tensor<[4, 3, 2], f32>
            func.return %c, %p3 : !strata.tensor<[2, 5, 24], f32>, !strata.tensor<[4, 3, 2], f32>""",
            "%a : !strata.tensor<[2, 3, 4], f32>",
            "(!strata.tensor<[2, 5, 24], f32>, !strata.tensor<[4, 3, 2], f32>)",
        ),
        [torch.randn(2, 3, 4)],
    )
    # The first permute pair is the identity; reshapes and broadcasts merge pairwise.
    assert sorted(names) == ["prim.broadcast_in_dim", "prim.permute", "prim.reshape"]


@pytest.mark.parametrize(
    "via, folds",
    [("f32", True), ("f64", True), ("f16", False), ("i32", False)],
)
def test_conversion_round_trips_fold_only_when_lossless(via, folds):
    bf16, mid = "!strata.tensor<[8], bf16>", f"!strata.tensor<[8], {via}>"
    names = _simplify(
        _module(
            f"""
            %w = prim.convert_element_type %a {{dtype = "{via}"}} : ({bf16}) -> {mid}
            %n = prim.convert_element_type %w {{dtype = "bf16"}} : ({mid}) -> {bf16}
            func.return %n : {bf16}""",
            f"%a : {bf16}",
            bf16,
        ),
        [(torch.randn(8) * 1e4).bfloat16()],
    )
    assert (names == []) == folds


def test_cse_merges_prim_ops_from_different_sources_but_not_aten_ops():
    names = _simplify(
        _module(
            f"""
            %x = prim.exp %a {{strata.source = "aten.exp.default @ line 1"}} : ({T}) -> {T}
            %y = prim.exp %a {{strata.source = "aten.exp.default @ line 2"}} : ({T}) -> {T}
            %u = aten.exp.default %a : ({T}) -> {T}
            %v = aten.exp.default %a : ({T}) -> {T}
            %s = prim.add %x, %y : ({T}, {T}) -> {T}
            %t = aten.add.Tensor %u, %v : ({T}, {T}) -> {T}
            func.return %s, %t : {T}, {T}""",
            f"%a : {T}",
            f"({T}, {T})",
        ),
        [torch.randn(3, 4)],
    )
    assert names.count("prim.exp") == 1 and names.count("aten.exp.default") == 2


@pytest.mark.parametrize("marks", [(True, False), (False, True), (True, True)])
def test_cse_keeps_an_opmath_rounding_mark_only_if_both_had_it(marks):
    # A rounding fuse may leave out (an op's opmath) merged with a cast the program
    # asked for must round: the merged conversion keeps the mark only from both.
    H = "!strata.tensor<[3, 4], bf16>"
    attrs = [', strata.opmath_rounding' if m else '' for m in marks]
    module = _module(
        f"""
        %x = prim.convert_element_type %a {{dtype = "bf16"{attrs[0]}}} : ({T}) -> {H}
        %y = prim.convert_element_type %a {{dtype = "bf16"{attrs[1]}}} : ({T}) -> {H}
        func.return %x, %y : {H}, {H}""",
        f"%a : {T}",
        f"({H}, {H})",
    )
    names = _simplify(module, [torch.randn(3, 4)])
    assert names == ["prim.convert_element_type"]
    merged = next(op for op in module.walk() if op.name == "prim.convert_element_type")
    assert ("strata.opmath_rounding" in merged.attributes) == all(marks)


def test_dce_keeps_aten_ops_that_write_or_draw_random_numbers():
    module = _module(
        f"""
        %dead = prim.exp %a : ({T}) -> {T}
        %pure = aten.exp.default %a : ({T}) -> {T}
        %random = aten.rand.default {{size = [3 : i64, 4 : i64]}} : () -> {T}
        %written = aten.call %a, %a {{overload = "aten::add_.Tensor"}} : ({T}, {T}) -> {T}
        func.return %a : {T}""",
        f"%a : {T}",
        T,
    )
    SimplifyPass().apply(strata_context(), module)
    names = [op.name for op in module.walk()]
    assert "prim.exp" not in names and "aten.exp.default" not in names
    assert "aten.rand.default" in names and "aten.call" in names


@pytest.mark.parametrize("case, dynamic", [("transformer_block", True), ("views", False), ("reductions", True)])
def test_default_pipeline_keeps_values_and_leaves_no_identity_ops(case, dynamic):
    pipeline = [InferShapesPass(), DecomposePass(), SimplifyPass(), InferShapesPass()]
    capture = run_case(pipeline, *CASES[case], torch.float32, dynamic)
    for _, module in capture.graphs:
        for op in module.walk():
            if op.name in ("prim.reshape", "prim.convert_element_type", "prim.broadcast_in_dim"):
                assert op.operands[0].type != op.results[0].type, op
            if op.name in ("prim.reshape", "prim.permute"):
                assert getattr(op.operands[0].owner, "name", None) != op.name, op  # chains collapsed
