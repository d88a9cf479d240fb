// RUN: strata-opt %s -p fuse --check-values seed=3 2>&1 | filecheck %s

// On a GPU, between two convolutions run two kernels: k0 the activation of the first
// convolution's result, k1 a 2x2 max of that activation (read at two strides, so it is
// stored) which the second convolution reads. k1 writes NHWC for the convolution; k0's
// output, read only by k1, is written NHWC too, and so the first convolution's result:
// every kernel reads and writes one layout (a kernel reading NCHW to write NHWC gathers
// across channels on every element). In bf16, so that k0's output is stored: an f32
// activation k1 would compute itself from the convolution's result.
// CHECK:       strata-opt: values agree on inputs seed=3
// CHECK:       kernel.func @k0
// CHECK:         kernel.store %{{.*}}, %{{.*}}["x1 + 8*x2 + 2*x3"]
// CHECK:       kernel.func @k1
// CHECK:       kernel.program @graph
// CHECK:         prim.convolution {{.*}}strata.layout = "channels_last"
// CHECK:         kernel.launch @k0({{.*}}strata.strides = {{\[}}[32 : i64, 1 : i64, 8 : i64, 2 : i64]]
// CHECK:         kernel.launch @k1({{.*}}strata.strides = {{\[}}[8 : i64, 1 : i64, 4 : i64, 2 : i64]]
func.func @graph(%x: !strata.tensor<[1, 2, 4, 4], bf16>, %w1: !strata.tensor<[2, 2, 3, 3], bf16>, %w2: !strata.tensor<[2, 2, 3, 3], bf16>) -> !strata.tensor<[1, 2, 2, 2], bf16> {
  %c1 = prim.convolution %x, %w1 {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (!strata.tensor<[1, 2, 4, 4], bf16>, !strata.tensor<[2, 2, 3, 3], bf16>) -> !strata.tensor<[1, 2, 4, 4], bf16>
  %zero = prim.full {shape = [1 : i64, 2 : i64, 4 : i64, 4 : i64], value = 0.000000e+00 : f64, dtype = "bf16"} : !strata.tensor<[1, 2, 4, 4], bf16>
  %r1 = prim.maximum %c1, %zero : (!strata.tensor<[1, 2, 4, 4], bf16>, !strata.tensor<[1, 2, 4, 4], bf16>) -> !strata.tensor<[1, 2, 4, 4], bf16>
  %a = prim.slice %r1 {start = [0 : i64, 0 : i64, 0 : i64, 0 : i64], limit = [1 : i64, 2 : i64, 4 : i64, 4 : i64], step = array<i64: 1, 1, 2, 2>} : (!strata.tensor<[1, 2, 4, 4], bf16>) -> !strata.tensor<[1, 2, 2, 2], bf16>
  %b = prim.slice %r1 {start = [0 : i64, 0 : i64, 1 : i64, 1 : i64], limit = [1 : i64, 2 : i64, 4 : i64, 4 : i64], step = array<i64: 1, 1, 2, 2>} : (!strata.tensor<[1, 2, 4, 4], bf16>) -> !strata.tensor<[1, 2, 2, 2], bf16>
  %m = prim.maximum %a, %b : (!strata.tensor<[1, 2, 2, 2], bf16>, !strata.tensor<[1, 2, 2, 2], bf16>) -> !strata.tensor<[1, 2, 2, 2], bf16>
  %c2 = prim.convolution %m, %w2 {stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (!strata.tensor<[1, 2, 2, 2], bf16>, !strata.tensor<[2, 2, 3, 3], bf16>) -> !strata.tensor<[1, 2, 2, 2], bf16>
  %e = prim.exp %c2 : (!strata.tensor<[1, 2, 2, 2], bf16>) -> !strata.tensor<[1, 2, 2, 2], bf16>
  func.return %e : !strata.tensor<[1, 2, 2, 2], bf16>
}
