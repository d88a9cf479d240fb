"""Programs that once broke fuse, kept as regression tests."""

from __future__ import annotations

import torch

from strata.dialects.context import parse_module, strata_context
from strata.passes.fuse import FusePass
from strata.runtime.compiled_graph import CompiledGraph
from strata.runtime.kernel_interpreter import run_kernel


def test_reshape_of_a_zero_size_tensor():
    """Reshape index arithmetic must not divide by a zero dim (found by the generators)."""
    module = parse_module(
        """builtin.module {
func.func @graph(%x: !strata.tensor<[1, 0], f32>) -> !strata.tensor<[0], f32> {
  %r = prim.reshape %x {shape = [0 : i64]} : (!strata.tensor<[1, 0], f32>) -> !strata.tensor<[0], f32>
  %e = prim.exp %r : (!strata.tensor<[0], f32>) -> !strata.tensor<[0], f32>
  func.return %e : !strata.tensor<[0], f32>
}}"""
    )
    FusePass().apply(strata_context(), module)
    module.verify()
    graph = CompiledGraph(module, lambda f: (lambda b, s: run_kernel(f, b, s)), torch.device("cpu"))
    (out,) = graph([torch.empty(1, 0)])
    assert out.shape == (0,)


def test_library_result_read_by_a_kernel_is_contiguous():
    """A library call on a transposed input keeps its layout in torch; the kernel that
    reads it must still see the values (found by the generators)."""
    from strata.codegen.llvm_cpu import compile_kernel

    module = parse_module(
        """builtin.module {
func.func @graph(%x: !strata.tensor<[3, 4], f32> {strata.strides = [1 : i64, 3 : i64]}) -> !strata.tensor<[3, 4], f32> {
  %s = prim.sum %x {dims = array<i64>} : (!strata.tensor<[3, 4], f32>) -> !strata.tensor<[3, 4], f32>
  %e = prim.exp %s : (!strata.tensor<[3, 4], f32>) -> !strata.tensor<[3, 4], f32>
  func.return %e : !strata.tensor<[3, 4], f32>
}}"""
    )
    FusePass().apply(strata_context(), module)
    graph = CompiledGraph(module, compile_kernel, torch.device("cpu"))
    x = torch.randn(4, 3).t()
    torch.testing.assert_close(graph([x])[0], x.exp())
