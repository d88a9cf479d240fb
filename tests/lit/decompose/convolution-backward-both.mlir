// RUN: strata-opt %s -p decompose | filecheck %s

// A convolution's backward that asks for both the input's and the weight's gradient
// (every layer but the first): one prim.convolution_backward gives the two, so that
// the library is called once. With groups, dilation and a symbolic width.
// CHECK-LABEL: func.func @both_and_bias
// CHECK-NOT:     aten.
// CHECK-NEXT:    %a, %b = prim.convolution_backward %g, %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 2 : i64} : (!strata.tensor<[2, 4, 4, "s0"], f32>, !strata.tensor<[2, 6, 8, "2*s0"], f32>, !strata.tensor<[4, 3, 3, 3], f32>) -> (!strata.tensor<[2, 6, 8, "2*s0"], f32>, !strata.tensor<[4, 3, 3, 3], f32>)
// CHECK-NEXT:    %c = prim.sum %g {dims = array<i64: 0, 2, 3>}
// CHECK-NEXT:    func.return %a, %b, %c
func.func @both_and_bias(%g: !strata.tensor<[2, 4, 4, "s0"], f32>, %x: !strata.tensor<[2, 6, 8, "2*s0"], f32>, %w: !strata.tensor<[4, 3, 3, 3], f32>) -> (!strata.tensor<[2, 6, 8, "2*s0"], f32>, !strata.tensor<[4, 3, 3, 3], f32>, !strata.tensor<[4], f32>) {
  %a, %b, %c = aten.convolution_backward.default %g, %x, %w {bias_sizes = [4 : i64], stride = [2 : i64, 2 : i64], padding = [1 : i64, 1 : i64], dilation = [1 : i64, 1 : i64], transposed = false, output_padding = [0 : i64, 0 : i64], groups = 2 : i64, output_mask = [true, true, true]} : (!strata.tensor<[2, 4, 4, "s0"], f32>, !strata.tensor<[2, 6, 8, "2*s0"], f32>, !strata.tensor<[4, 3, 3, 3], f32>) -> (!strata.tensor<[2, 6, 8, "2*s0"], f32>, !strata.tensor<[4, 3, 3, 3], f32>, !strata.tensor<[4], f32>)
  func.return %a, %b, %c : !strata.tensor<[2, 6, 8, "2*s0"], f32>, !strata.tensor<[4, 3, 3, 3], f32>, !strata.tensor<[4], f32>
}

// No bias: its gradient is a placeholder of no elements, the pair is still one op.
// CHECK-LABEL: func.func @both_no_bias
// CHECK-NEXT:    %a, %b = prim.convolution_backward %g, %x, %w {stride = array<i64: 1>, padding = array<i64: 2>, dilation = array<i64: 2>, groups = 1 : i64} : (!strata.tensor<[3, 4, 9], f64>, !strata.tensor<[3, 5, 9], f64>, !strata.tensor<[4, 5, 3], f64>) -> (!strata.tensor<[3, 5, 9], f64>, !strata.tensor<[4, 5, 3], f64>)
// CHECK-NEXT:    %c = prim.full {shape = [0 : i64]
// CHECK-NEXT:    func.return %a, %b
// CHECK-NOT:     prim.convolution_backward_
func.func @both_no_bias(%g: !strata.tensor<[3, 4, 9], f64>, %x: !strata.tensor<[3, 5, 9], f64>, %w: !strata.tensor<[4, 5, 3], f64>) -> (!strata.tensor<[3, 5, 9], f64>, !strata.tensor<[4, 5, 3], f64>) {
  %a, %b, %c = aten.convolution_backward.default %g, %x, %w {bias_sizes = [0 : i64], stride = [1 : i64], padding = [2 : i64], dilation = [2 : i64], transposed = false, output_padding = [0 : i64], groups = 1 : i64, output_mask = [true, true, false]} : (!strata.tensor<[3, 4, 9], f64>, !strata.tensor<[3, 5, 9], f64>, !strata.tensor<[4, 5, 3], f64>) -> (!strata.tensor<[3, 5, 9], f64>, !strata.tensor<[4, 5, 3], f64>, !strata.tensor<[0], f64>)
  func.return %a, %b : !strata.tensor<[3, 5, 9], f64>, !strata.tensor<[4, 5, 3], f64>
}
