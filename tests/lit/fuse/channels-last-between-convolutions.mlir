// RUN: strata-opt %s -p fuse --check-values seed=2 2>&1 | filecheck %s

// Two convolutions with an activation between them: the first one's result and the
// kernel output the second one reads are laid out channels-last (NHWC strides in the
// kernel's load and store indices, `strata.strides` on its launch); the second
// convolution's result feeds the graph's result through a kernel, so it stays
// contiguous, as eager lays it out.
// CHECK:       strata-opt: values agree on inputs seed=2
// CHECK:       kernel.func @k0
// CHECK:         kernel.load %{{.*}}["{{.*}}"]
// CHECK:         prim.maximum
// CHECK:         kernel.store %{{.*}}, %{{.*}}["x1 + 8*x2 + 2*x3"]
// CHECK:       kernel.program @graph
// CHECK:         %[[C1:[a-z0-9]+]] = prim.convolution {{.*}}strata.layout = "channels_last"
// CHECK:         kernel.launch @k0(%[[C1]]{{.*}}strata.strides = {{\[}}[32 : i64, 1 : i64, 8 : i64, 2 : i64]]
// CHECK:         %[[C2:[a-z0-9]+]] = prim.convolution
// CHECK-NOT:     strata.layout
// CHECK:         kernel.launch @k1(%[[C2]]
func.func @graph(%x: !strata.tensor<[1, 2, 4, 4], f32>, %w1: !strata.tensor<[2, 2, 3, 3], f32>, %w2: !strata.tensor<[2, 2, 3, 3], f32>) -> !strata.tensor<[1, 2, 4, 4], f32> {
  %c1 = prim.convolution %x, %w1 {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (!strata.tensor<[1, 2, 4, 4], f32>, !strata.tensor<[2, 2, 3, 3], f32>) -> !strata.tensor<[1, 2, 4, 4], f32>
  %zero = prim.full {shape = [1 : i64, 2 : i64, 4 : i64, 4 : i64], value = 0.000000e+00 : f64, dtype = "f32"} : !strata.tensor<[1, 2, 4, 4], f32>
  %r1 = prim.maximum %c1, %zero : (!strata.tensor<[1, 2, 4, 4], f32>, !strata.tensor<[1, 2, 4, 4], f32>) -> !strata.tensor<[1, 2, 4, 4], f32>
  %c2 = prim.convolution %r1, %w2 {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (!strata.tensor<[1, 2, 4, 4], f32>, !strata.tensor<[2, 2, 3, 3], f32>) -> !strata.tensor<[1, 2, 4, 4], f32>
  %r2 = prim.maximum %c2, %zero : (!strata.tensor<[1, 2, 4, 4], f32>, !strata.tensor<[1, 2, 4, 4], f32>) -> !strata.tensor<[1, 2, 4, 4], f32>
  func.return %r2 : !strata.tensor<[1, 2, 4, 4], f32>
}
