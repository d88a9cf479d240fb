// RUN: strata-opt %s --verify-diagnostics | filecheck %s

// prim.convolution_backward's results are typed as x and w, and the output's gradient
// must be what convolving x with w gives: each mismatch names the op and the types.
// CHECK: 'prim.convolution_backward' op: result type !strata.tensor<[4, 3, 3, 1], f32> does not match the inferred !strata.tensor<[4, 3, 3, 3], f32>
func.func @wrong_result(%g: !strata.tensor<[2, 4, 4, 4], f32>, %x: !strata.tensor<[2, 3, 8, 8], f32>, %w: !strata.tensor<[4, 3, 3, 3], f32>) -> !strata.tensor<[2, 3, 8, 8], f32> {
  %a, %b = prim.convolution_backward %g, %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (!strata.tensor<[2, 4, 4, 4], f32>, !strata.tensor<[2, 3, 8, 8], f32>, !strata.tensor<[4, 3, 3, 3], f32>) -> (!strata.tensor<[2, 3, 8, 8], f32>, !strata.tensor<[4, 3, 3, 1], f32>)
  func.return %a : !strata.tensor<[2, 3, 8, 8], f32>
}
