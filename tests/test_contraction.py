"""Fused multiply-adds inside one aten op (passes/fusion/contraction.py): marked where
both halves come from one op, turned into LLVM's `contract` flag on the CPU, never
across two ops eager rounds between, and never less accurate than eager."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import strata
from strata.codegen import llvm_jit
from strata.codegen.llvm_cpu import llvm_source
from strata.dialects import kernel as kd
from strata.dialects.context import parse_module
from strata.dialects.kernel import CONTRACT
from strata.frontend.compile_graph import run_pipeline

GRAPH = """
func.func @graph(%x: !strata.tensor<[8, 64], f32>, %w: !strata.tensor<[8, 64], f32>, %b: !strata.tensor<[8, 64], f32>) -> !strata.tensor<[8, 64], f32> {
  %p = prim.mul %x, %w {strata.source = "SOURCE_MUL"} : (!strata.tensor<[8, 64], f32>, !strata.tensor<[8, 64], f32>) -> !strata.tensor<[8, 64], f32>
  %s = prim.add %p, %b {strata.source = "SOURCE_ADD"} : (!strata.tensor<[8, 64], f32>, !strata.tensor<[8, 64], f32>) -> !strata.tensor<[8, 64], f32>
  func.return %s : !strata.tensor<[8, 64], f32>
}
"""


def _kernel(mul_source: str | None, add_source: str | None) -> kd.FuncOp:
    """The fused kernel of `x * w + b`, its ops from these aten ops (None: no source)."""
    text = GRAPH
    for name, source in (("SOURCE_MUL", mul_source), ("SOURCE_ADD", add_source)):
        text = text.replace(f'"{name}"', f'"{source}"') if source else text.replace(f' {{strata.source = "{name}"}}', "")
    module = parse_module(text)
    run_pipeline(module, ["fuse"])
    return next(op for op in module.ops if isinstance(op, kd.FuncOp))


def _marked(func: kd.FuncOp) -> list[str]:
    return [op.name for op in func.body.walk() if CONTRACT in op.attributes]


def test_one_ops_multiply_add_becomes_an_fma():
    func = _kernel("aten.addcmul.default", "aten.addcmul.default")
    assert _marked(func) == ["prim.mul", "prim.add"]
    source = llvm_source(func)
    assert "fmul contract" in source and "fadd contract" in source
    if "+fma" in llvm_jit.host_cpu()[1].split(","):  # x86 with FMA: the instruction itself
        assert "vfmadd" in _assembly(source)


def _assembly(source: str) -> str:
    return llvm_jit._target_machine().emit_assembly(llvm_jit.optimize(source))


@pytest.mark.parametrize("sources", [("aten.mul.Tensor", "aten.add.Tensor"), (None, None), ("aten.addcmul.default", None)])
def test_a_product_eager_rounds_is_not_fused(sources):
    func = _kernel(*sources)
    assert _marked(func) == []
    source = llvm_source(func)
    assert "contract" not in source and "vfmadd" not in _assembly(source)


def test_emulate_precision_casts_keeps_every_rounding():
    text = GRAPH.replace("SOURCE_MUL", "aten.addcmul.default").replace("SOURCE_ADD", "aten.addcmul.default")
    module = parse_module(text)
    run_pipeline(module, ["fuse"], pass_options={"fuse": {"emulate_precision_casts": True}})
    assert _marked(next(op for op in module.ops if isinstance(op, kd.FuncOp))) == []


def _layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, eps=1e-5)


def _addcmul(x, w, b):
    return torch.addcmul(b, x, w, value=0.5)


def _batch_norm(x, w, b):
    mean, var = b.abs() * 0.1, w.abs() + 0.5
    return F.batch_norm(x, mean, var, w, b, training=False, eps=1e-5)


@settings(max_examples=12, deadline=None)
@given(
    rows=st.integers(1, 40),
    cols=st.sampled_from([3, 16, 31, 64, 100, 257]),
    scale=st.sampled_from([1e-3, 1.0, 1e3]),
    offset=st.sampled_from([0.0, 10.0]),
    fn=st.sampled_from([_layer_norm, _addcmul, _batch_norm]),
    seed=st.integers(0, 2**16),
)
def test_fused_ops_are_as_accurate_as_eager(rows, cols, scale, offset, fn, seed):
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(rows, cols, generator=gen) * scale + offset
    w, b = torch.randn(cols, generator=gen), torch.randn(cols, generator=gen)
    torch._dynamo.reset()
    got = strata.compile(fn)(x, w, b)
    want = fn(x, w, b)
    exact = fn(x.double(), w.double(), b.double())
    # Against float64: within eager's own error (plus an ulp of the result's scale). Not
    # against eager itself: with offset ≫ scale a layer norm's inputs are ill-conditioned,
    # and two correct float32 orders of summation differ by far more than rtol.
    ulp = torch.finfo(torch.float32).eps * float(exact.abs().max())
    assert float((got.double() - exact).abs().max()) <= 2 * float((want.double() - exact).abs().max()) + ulp
