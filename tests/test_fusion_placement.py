"""Where fusion computes a value read by several ops (passes/fusion/shared_values.py):
with the reader that needs it (deferred_nodes), or in each kernel that reads it
(cheaper_to_recompute), never where that would change its bits."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import strata.passes.fusion.shared_values as shared_values
from strata.dialects import kernel as kd
from strata.dialects.context import parse_module, strata_context
from strata.passes.fuse import FusePass
from strata.runtime.interpreters import interpret_module
from strata.testing import strategies as sst
from strata.testing.checks import check_values, print_module
from strata.testing.inputs import InputSpec, make_inputs, signature_of

LIT = Path(__file__).parent / "lit" / "fuse"


def fused(ir: str):
    before = parse_module(ir)
    after = before.clone()
    FusePass().apply(strata_context(), after)
    return before, after


def fused_without_rules(module):
    """`module` fused with neither shared-value rule (no deferral, no recomputing)."""
    out = module.clone()
    saved = shared_values.RECOMPUTE_ROUNDS, shared_values.deferred_nodes
    shared_values.RECOMPUTE_ROUNDS, shared_values.deferred_nodes = 0, lambda *a: set()
    try:
        FusePass().apply(strata_context(), out)
    finally:
        shared_values.RECOMPUTE_ROUNDS, shared_values.deferred_nodes = saved
    return out


def kernels(module) -> list[kd.FuncOp]:
    return [op for op in module.ops if isinstance(op, kd.FuncOp)]


def graph_of(lit_file: str) -> str:
    return "\n".join(ln for ln in (LIT / lit_file).read_text().splitlines() if not ln.startswith("//"))


def test_an_activation_recomputed_before_a_product_joins_the_kernel_that_reads_it(monkeypatch):
    """Deferral alone (no recomputing): the tanh is computed by the kernel after the
    product, not stored by the one before it."""
    monkeypatch.setattr(shared_values, "RECOMPUTE_ROUNDS", 0)
    before, after = fused(graph_of("a-recomputed-activation-joins-its-reader.mlir"))
    first, second = kernels(after)
    assert "prim.tanh" not in print_module(first) and "prim.tanh" in print_module(second), print_module(after)
    assert print_module(first).count("kernel.store") == 1, print_module(after)
    assert check_values(before, after, "seed=3") is None


def test_without_deferral_the_activation_is_stored(monkeypatch):
    """What the deferral saves: placed where the program reaches it, it joins the kernel
    before the product and is stored for the next."""
    monkeypatch.setattr(shared_values, "RECOMPUTE_ROUNDS", 0)
    monkeypatch.setattr(shared_values, "deferred_nodes", lambda *a: set())
    _, after = fused(graph_of("a-recomputed-activation-joins-its-reader.mlir"))
    assert "prim.tanh" in print_module(kernels(after)[0]), print_module(after)


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_a_value_is_recomputed_only_where_its_bits_stay(dtype):
    """An exp read through a reshape the planner cannot prove a plain index (two
    kernels): in f32 its reader computes it; in bf16 it stays stored, as a stored bf16
    value is rounded where its own kernel's is not."""
    ir = graph_of("across-a-split.mlir")
    if dtype == "f32":
        ir = ir.replace("bf16>", "f32>")
    before, after = fused(ir)
    assert len(kernels(after)) == (1 if dtype == "f32" else 2), print_module(after)
    assert check_values(before, after, "seed=2") is None


def test_the_backward_results_are_laid_out_all_or_none():
    """dq, dk and dv take one layout, the op's: where the graph returns one of them
    (as torch made it), none is asked for sequence-major."""
    ir = graph_of("attention-backward-sequence-major.mlir")
    assert 'strata.layout = "sequence_major"' in print_module(fused(ir)[1])
    returned = ir.replace("func.return %r : !strata.tensor<[2, 5, 24], bf16>",
                          "func.return %r, %dv : !strata.tensor<[2, 5, 24], bf16>, !strata.tensor<[2, 3, 5, 8], bf16>").replace(
        "-> !strata.tensor<[2, 5, 24], bf16> attributes", "-> (!strata.tensor<[2, 5, 24], bf16>, !strata.tensor<[2, 3, 5, 8], bf16>) attributes")
    assert "sequence_major" not in print_module(fused(returned)[1])


@settings(max_examples=40, deadline=None)
@given(program=sst.prim_programs())
def test_placing_and_recomputing_change_no_bit(program):
    """On generated prim programs, the fused program with the shared-value rules and the
    one without them compute the same bits (the kernel interpreter, which codegen
    matches: tests/test_properties.py)."""
    _, with_rules = fused(str(program.module))
    without = fused_without_rules(program.module)
    symbols = signature_of(program.module).symbols
    got = interpret_module(with_rules, make_inputs(program.module, program.spec), symbols)
    want = interpret_module(without, make_inputs(program.module, program.spec), symbols)
    for a, b in zip(got, want):
        if isinstance(a, torch.Tensor):
            torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True)
        else:
            assert a == b


UNARY = ("prim.exp", "prim.tanh", "prim.neg", "prim.sin")


@st.composite
def shared_value_programs(draw) -> str:
    """A value several elementwise ops read, across a kernel boundary: v = op(x · y),
    read by the product with g summed per row and per column (two reduction kernels),
    or by two ops on either side of a matrix product. x, y, v in f32 or bf16."""
    m, n = draw(st.integers(2, 12)), draw(st.integers(2, 12))
    dt = draw(st.sampled_from(["f32", "bf16"]))
    t = f"!strata.tensor<[{m}, {n}], {dt}>"
    f32 = f"!strata.tensor<[{m}, {n}], f32>"
    unary = draw(st.sampled_from(UNARY))
    lines = [f"%p = prim.mul %x, %y : ({t}, {t}) -> {t}", f"%v = {unary} %p : ({t}) -> {t}"]
    if draw(st.booleans()):  # two reductions of different domains
        lines += [f"%vf = prim.convert_element_type %v {{dtype = \"f32\"}} : ({t}) -> {f32}",
                  f"%gv = prim.mul %g, %vf : ({f32}, {f32}) -> {f32}",
                  f"%rows = prim.sum %gv {{dims = array<i64: 1>}} : ({f32}) -> !strata.tensor<[{m}], f32>",
                  f"%cols = prim.sum %vf {{dims = array<i64: 0>}} : ({f32}) -> !strata.tensor<[{n}], f32>"]
        results = [("rows", f"!strata.tensor<[{m}], f32>"), ("cols", f"!strata.tensor<[{n}], f32>")]
    else:  # one reader before a product, one after it
        lines += [f"%a = prim.add %v, %v : ({t}, {t}) -> {t}",
                  f"%mm = prim.mm %w, %u : (!strata.tensor<[{m}, 3], f32>, !strata.tensor<[3, {n}], f32>) -> {f32}",
                  f"%vf = prim.convert_element_type %v {{dtype = \"f32\"}} : ({t}) -> {f32}",
                  f"%b = prim.mul %mm, %vf : ({f32}, {f32}) -> {f32}"]
        results = [("a", t), ("b", f32)]
    args = f"%x: {t}, %y: {t}, %g: {f32}, %w: !strata.tensor<[{m}, 3], f32>, %u: !strata.tensor<[3, {n}], f32>"
    body = "\n  ".join(lines)
    types = ", ".join(r for _, r in results)
    return (f"func.func @graph({args}) -> ({types}) {{\n  {body}\n"
            f"  func.return {', '.join('%' + name for name, _ in results)} : {types}\n}}")


@settings(max_examples=30, deadline=None)
@given(ir=shared_value_programs(), seed=st.integers(0, 100))
def test_a_shared_value_keeps_its_bits_wherever_it_is_computed(ir, seed):
    """Aimed at the rules: the same bits with and without them, and eager's values."""
    before, with_rules = fused(ir)
    without = fused_without_rules(before)
    spec = InputSpec.parse(f"seed={seed}")
    got = interpret_module(with_rules, make_inputs(before, spec), [])
    want = interpret_module(without, make_inputs(before, spec), [])
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=0, atol=0, equal_nan=True)
    assert check_values(before, with_rules, spec) is None
