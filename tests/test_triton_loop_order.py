"""codegen/triton_loop_order.py: a kernel whose buffers are channels-last walks C with
its last loop variable, and computes what it computed before."""

from __future__ import annotations

from strata.codegen.triton_loop_order import contiguous_last
from strata.dialects import kernel as kd
from strata.dialects.context import parse_module
from strata.frontend.compile_graph import run_pipeline
from strata.testing.checks import check_codegen

# The activation between two convolutions: reads and writes NHWC buffers, and a
# per-channel bias (a broadcast load, which does not vote).
PROGRAM = """
func.func @graph(%x: !strata.tensor<[2, 3, 4, 5], f32>, %w1: !strata.tensor<[3, 3, 1, 1], f32>, %w2: !strata.tensor<[3, 3, 1, 1], f32>, %b: !strata.tensor<[3], f32>) -> !strata.tensor<[2, 3, 4, 5], f32> {
  %c1 = prim.convolution %x, %w1 {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (!strata.tensor<[2, 3, 4, 5], f32>, !strata.tensor<[3, 3, 1, 1], f32>) -> !strata.tensor<[2, 3, 4, 5], f32>
  %bb = prim.broadcast_in_dim %b {shape = [2 : i64, 3 : i64, 4 : i64, 5 : i64], broadcast_dimensions = array<i64: 1>} : (!strata.tensor<[3], f32>) -> !strata.tensor<[2, 3, 4, 5], f32>
  %y = prim.add %c1, %bb : (!strata.tensor<[2, 3, 4, 5], f32>, !strata.tensor<[2, 3, 4, 5], f32>) -> !strata.tensor<[2, 3, 4, 5], f32>
  %t = prim.tanh %y : (!strata.tensor<[2, 3, 4, 5], f32>) -> !strata.tensor<[2, 3, 4, 5], f32>
  %c2 = prim.convolution %t, %w2 {stride = array<i64: 1, 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (!strata.tensor<[2, 3, 4, 5], f32>, !strata.tensor<[3, 3, 1, 1], f32>) -> !strata.tensor<[2, 3, 4, 5], f32>
  %r = prim.tanh %c2 : (!strata.tensor<[2, 3, 4, 5], f32>) -> !strata.tensor<[2, 3, 4, 5], f32>
  func.return %r : !strata.tensor<[2, 3, 4, 5], f32>
}
"""


def _fused():
    module = parse_module(PROGRAM)
    run_pipeline(module, ["fuse"])
    return module, [op for op in module.ops if isinstance(op, kd.FuncOp)]


def test_channels_last_kernel_walks_channels_last():
    _, (between, after) = _fused()
    reordered = contiguous_last(between)
    assert between.pointwise_dims == (2, 3, 4, 5)
    assert reordered.pointwise_dims == (2, 4, 5, 3)
    stores = [op for op in reordered.block.ops if isinstance(op, kd.StoreOp)]
    assert [s.index.data for s in stores] == ["60*x0 + 15*x1 + 3*x2 + x3"]
    # The last kernel reads NHWC but writes the contiguous result: one access each
    # way, and the original order stays.
    assert contiguous_last(after) is after


def test_the_reordered_kernel_computes_the_same():
    module, _ = _fused()
    assert check_codegen(module, "triton", "seed=4") is None
