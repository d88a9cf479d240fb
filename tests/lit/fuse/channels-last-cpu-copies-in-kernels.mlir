// RUN: strata-opt %s -p fuse --check-values seed=3 2>&1 | filecheck %s

// The graph of tests/lit/fuse/channels-last-between-convolutions.mlir compiled for the
// CPU (passes/fusion/layouts.py): the runtime copies nothing. A kernel writes the graph
// input and both weights NHWC (the two weights in one kernel: one domain); both
// convolutions are channels-last, the second one too although a kernel that writes
// the contiguous graph result reads it: that kernel loads NHWC and stores NCHW.
// CHECK:       strata-opt: values agree on inputs seed=3
// CHECK:       kernel.func @k0
// CHECK:         kernel.load %{{.*}}["16*x1 + 4*x2 + x3"]
// CHECK:         kernel.store %{{.*}}, %{{.*}}["x1 + 8*x2 + 2*x3"]
// CHECK:       kernel.func @k1
// CHECK:         kernel.store %{{.*}}, %{{.*}}["18*x0 + x1 + 6*x2 + 2*x3"]
// CHECK:         kernel.store %{{.*}}, %{{.*}}["18*x0 + x1 + 6*x2 + 2*x3"]
// CHECK:       kernel.func @k3
// CHECK:         kernel.load %{{.*}}["x1 + 8*x2 + 2*x3"]
// CHECK:         kernel.store %{{.*}}, %{{.*}}["16*x1 + 4*x2 + x3"]
// CHECK:       kernel.program @graph
// CHECK:         %[[X:[a-z0-9]+]] = kernel.launch @k0({{.*}}strata.strides = {{\[}}[32 : i64, 1 : i64, 8 : i64, 2 : i64]]
// CHECK:         %[[W1:[a-z0-9]+]], %[[W2:[a-z0-9]+]] = kernel.launch @k1({{.*}}strata.strides = {{\[}}[18 : i64, 1 : i64, 6 : i64, 2 : i64], [18 : i64, 1 : i64, 6 : i64, 2 : i64]]
// CHECK:         %[[C1:[a-z0-9]+]] = prim.convolution %[[X]], %[[W1]] {{.*}}strata.layout = "channels_last"
// CHECK:         %[[C2:[a-z0-9]+]] = prim.convolution %{{.*}}, %[[W2]] {{.*}}strata.layout = "channels_last"
// CHECK:         kernel.launch @k3(%[[C2]]
// CHECK-NOT:     strata.strides
// CHECK:         kernel.return
func.func @graph(%x: !strata.tensor<[1, 2, 4, 4], f32>, %w1: !strata.tensor<[2, 2, 3, 3], f32>, %w2: !strata.tensor<[2, 2, 3, 3], f32>) -> !strata.tensor<[1, 2, 4, 4], f32> attributes {strata.device = "cpu"} {
  %c1 = prim.convolution %x, %w1 {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (!strata.tensor<[1, 2, 4, 4], f32>, !strata.tensor<[2, 2, 3, 3], f32>) -> !strata.tensor<[1, 2, 4, 4], f32>
  %zero = prim.full {shape = [1 : i64, 2 : i64, 4 : i64, 4 : i64], value = 0.000000e+00 : f64, dtype = "f32"} : !strata.tensor<[1, 2, 4, 4], f32>
  %r1 = prim.maximum %c1, %zero : (!strata.tensor<[1, 2, 4, 4], f32>, !strata.tensor<[1, 2, 4, 4], f32>) -> !strata.tensor<[1, 2, 4, 4], f32>
  %c2 = prim.convolution %r1, %w2 {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (!strata.tensor<[1, 2, 4, 4], f32>, !strata.tensor<[2, 2, 3, 3], f32>) -> !strata.tensor<[1, 2, 4, 4], f32>
  %r2 = prim.maximum %c2, %zero : (!strata.tensor<[1, 2, 4, 4], f32>, !strata.tensor<[1, 2, 4, 4], f32>) -> !strata.tensor<[1, 2, 4, 4], f32>
  func.return %r2 : !strata.tensor<[1, 2, 4, 4], f32>
}
