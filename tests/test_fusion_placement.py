"""Where fusion computes a value read by several ops (passes/fusion/shared_values.py):
with the reader that needs it (deferred_nodes), or in each kernel that reads it
(cheaper_to_recompute), never where that would change its bits."""

from __future__ import annotations

from pathlib import Path

import pytest

import strata.passes.fusion.shared_values as shared_values
from strata.dialects import kernel as kd
from strata.dialects.context import parse_module, strata_context
from strata.passes.fuse import FusePass
from strata.testing.checks import check_values, print_module

LIT = Path(__file__).parent / "lit" / "fuse"


def fused(ir: str):
    before = parse_module(ir)
    after = before.clone()
    FusePass().apply(strata_context(), after)
    return before, after


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
