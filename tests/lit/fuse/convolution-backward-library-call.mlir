// RUN: strata-opt %s -p fuse | filecheck %s

// prim.convolution_backward is a library call of the program with two results: the
// kernel before it writes the output's gradient it reads, the kernel after it reads
// the input's gradient, and the weight's is a result of the graph.
// CHECK:       kernel.program @graph
// CHECK-NEXT:  ^bb0(%[[G:.*]]: !strata.tensor<[2, 4, 4, 4], f32>, %[[X:.*]]: !strata.tensor<[2, 3, 8, 8], f32>, %[[W:.*]]: !strata.tensor<[4, 3, 3, 3], f32>):
// CHECK-NEXT:    %[[N:.*]] = kernel.launch @k0(%[[G]])
// CHECK-NEXT:    %[[DX:.*]], %[[DW:.*]] = prim.convolution_backward %[[N]], %[[X]], %[[W]] {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64}
// CHECK-NEXT:    %[[R:.*]] = kernel.launch @k1(%[[DX]], %[[X]])
// CHECK-NEXT:    kernel.return %[[R]], %[[DW]]
func.func @graph(%g: !strata.tensor<[2, 4, 4, 4], f32>, %x: !strata.tensor<[2, 3, 8, 8], f32>, %w: !strata.tensor<[4, 3, 3, 3], f32>) -> (!strata.tensor<[2, 3, 8, 8], f32>, !strata.tensor<[4, 3, 3, 3], f32>) {
  %n = prim.neg %g : (!strata.tensor<[2, 4, 4, 4], f32>) -> !strata.tensor<[2, 4, 4, 4], f32>
  %a, %b = prim.convolution_backward %n, %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (!strata.tensor<[2, 4, 4, 4], f32>, !strata.tensor<[2, 3, 8, 8], f32>, !strata.tensor<[4, 3, 3, 3], f32>) -> (!strata.tensor<[2, 3, 8, 8], f32>, !strata.tensor<[4, 3, 3, 3], f32>)
  %r = prim.mul %a, %x : (!strata.tensor<[2, 3, 8, 8], f32>, !strata.tensor<[2, 3, 8, 8], f32>) -> !strata.tensor<[2, 3, 8, 8], f32>
  func.return %r, %b : !strata.tensor<[2, 3, 8, 8], f32>, !strata.tensor<[4, 3, 3, 3], f32>
}
