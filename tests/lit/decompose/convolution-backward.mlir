// RUN: strata-opt %s -p decompose | filecheck %s

// A convolution's backward: the gradients output_mask asks for, as library calls (the
// input's and the weight's) and a sum (the bias's); the others are placeholders of no
// elements, as the importer types the results eager gives as None.
// CHECK-LABEL: func.func @graph
// CHECK-NOT:     aten.
// CHECK-NEXT:    %a = prim.full {shape = [0 : i64], value = 0.000000e+00 : f64, dtype = "f32"} : !strata.tensor<[0], f32>
// CHECK-NEXT:    %b = prim.convolution_backward_weight %g, %x {shape = [4 : i64, 3 : i64, 3 : i64, 3 : i64], stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64}
// CHECK-NEXT:    %c = prim.sum %g {dims = array<i64: 0, 2, 3>}
// CHECK-NEXT:    %d = prim.convolution_backward_input %g, %w {shape = [2 : i64, 3 : i64, 8 : i64, 8 : i64], stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64}
// CHECK-NEXT:    %e = prim.full {shape = [0 : i64]
// CHECK-NEXT:    %f = prim.full {shape = [0 : i64]
// CHECK-NEXT:    func.return %b, %c, %d
func.func @graph(%g: !strata.tensor<[2, 4, 4, 4], f32>, %x: !strata.tensor<[2, 3, 8, 8], f32>, %w: !strata.tensor<[4, 3, 3, 3], f32>) -> (!strata.tensor<[4, 3, 3, 3], f32>, !strata.tensor<[4], f32>, !strata.tensor<[2, 3, 8, 8], f32>) {
  %a, %b, %c = aten.convolution_backward.default %g, %x, %w {bias_sizes = [4 : i64], stride = [2 : i64, 2 : i64], padding = [1 : i64, 1 : i64], dilation = [1 : i64, 1 : i64], transposed = false, output_padding = [0 : i64, 0 : i64], groups = 1 : i64, output_mask = [false, true, true]} : (!strata.tensor<[2, 4, 4, 4], f32>, !strata.tensor<[2, 3, 8, 8], f32>, !strata.tensor<[4, 3, 3, 3], f32>) -> (!strata.tensor<[0], f32>, !strata.tensor<[4, 3, 3, 3], f32>, !strata.tensor<[4], f32>)
  %d, %e, %f = aten.convolution_backward.default %g, %x, %w {bias_sizes = [0 : i64], stride = [2 : i64, 2 : i64], padding = [1 : i64, 1 : i64], dilation = [1 : i64, 1 : i64], transposed = false, output_padding = [0 : i64, 0 : i64], groups = 1 : i64, output_mask = [true, false, false]} : (!strata.tensor<[2, 4, 4, 4], f32>, !strata.tensor<[2, 3, 8, 8], f32>, !strata.tensor<[4, 3, 3, 3], f32>) -> (!strata.tensor<[2, 3, 8, 8], f32>, !strata.tensor<[0], f32>, !strata.tensor<[0], f32>)
  func.return %b, %c, %d : !strata.tensor<[4, 3, 3, 3], f32>, !strata.tensor<[4], f32>, !strata.tensor<[2, 3, 8, 8], f32>
}
