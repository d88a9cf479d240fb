// RUN: strata-opt %s -p fuse --check-values seed=3 2>&1 | filecheck %s

// On a GPU, a convolution of a channels-last input whose activation the graph returns
// channels-last, as eager does (the importer's `strata.strides` on @graph's result).
// The kernel writing that result writes NHWC, so the convolution's result is NHWC too:
// cuDNN writes it in its own layout and the kernel reads and writes one layout. (Laid
// out NCHW, the result cost a copy after cuDNN and a kernel gathering across channels
// on every element: a depthwise 3×3 with batch norm and ReLU at 144 channels, 56², bf16,
// took 0.336 ms a call on an H200 against eager's 0.104.)
// CHECK:       strata-opt: values agree on inputs seed=3
// CHECK:       kernel.func @k0
// CHECK:         kernel.load %{{.*}}["54*x0 + x1 + 18*x2 + 3*x3"]
// CHECK:         kernel.store %{{.*}}, %{{.*}}["54*x0 + x1 + 18*x2 + 3*x3"]
// CHECK:       kernel.program @graph
// CHECK:         prim.convolution {{.*}}strata.layout = "channels_last"
// CHECK:         kernel.launch @k0({{.*}}strata.strides = {{\[}}[54 : i64, 1 : i64, 18 : i64, 3 : i64]]
func.func @graph(%x: !strata.tensor<[2, 3, 6, 6], f32> {strata.strides = [108 : i64, 1 : i64, 18 : i64, 3 : i64]}, %w: !strata.tensor<[3, 1, 3, 3], f32>) -> (!strata.tensor<[2, 3, 3, 6], f32> {strata.strides = [54 : i64, 1 : i64, 18 : i64, 3 : i64]}) attributes {strata.device = "cuda"} {
  %c = prim.convolution %x, %w {stride = array<i64: 2, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 3 : i64} : (!strata.tensor<[2, 3, 6, 6], f32>, !strata.tensor<[3, 1, 3, 3], f32>) -> !strata.tensor<[2, 3, 3, 6], f32>
  %zero = prim.full {shape = [2 : i64, 3 : i64, 3 : i64, 6 : i64], value = 0.000000e+00 : f64, dtype = "f32"} : !strata.tensor<[2, 3, 3, 6], f32>
  %r = prim.maximum %c, %zero : (!strata.tensor<[2, 3, 3, 6], f32>, !strata.tensor<[2, 3, 3, 6], f32>) -> !strata.tensor<[2, 3, 3, 6], f32>
  func.return %r : !strata.tensor<[2, 3, 3, 6], f32>
}
