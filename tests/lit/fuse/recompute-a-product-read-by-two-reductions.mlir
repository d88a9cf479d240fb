// RUN: strata-opt %s -p fuse --check-values seed=1 2>&1 | filecheck %s

// A norm's backward: the gradient times the normalized input, summed per row and per
// column. The product is read by two reductions of different domains, so two kernels
// read it; computing it reads 6.25 bytes an element (g in bf16, x in f32, the row's
// mean and rstd), storing it would write 4 and read 4 back. Each kernel computes it
// from g and x (passes/fusion/shared_values.py): nothing [64, 32] is stored.
// CHECK:       strata-opt: values agree on inputs seed=1
// CHECK:       kernel.func @k0 attributes {pointwise = [64 : i64], reduction = [32 : i64]
// CHECK-DAG:     kernel.load %{{.*}}["r0 + 32*x0"] : !kernel.buffer<bf16>
// CHECK-DAG:     kernel.load %{{.*}}["r0 + 32*x0"] : !kernel.buffer<f32>
// CHECK:         kernel.store %{{.*}}, %{{.*}}["x0"]
// CHECK-NOT:     kernel.store
// CHECK:       kernel.func @k1 attributes {pointwise = [32 : i64], reduction = [64 : i64]
// CHECK-DAG:     kernel.load %{{.*}}["32*r0 + x0"] : !kernel.buffer<bf16>
// CHECK-DAG:     kernel.load %{{.*}}["32*r0 + x0"] : !kernel.buffer<f32>
// CHECK:         kernel.store %{{.*}}, %{{.*}}["x0"]
// CHECK-NOT:     kernel.store
// CHECK:       kernel.program @graph
// CHECK-COUNT-2: kernel.launch
// CHECK-NOT:     kernel.launch
func.func @graph(%x: !strata.tensor<[64, 32], f32>, %mean: !strata.tensor<[64, 1], f32>, %rstd: !strata.tensor<[64, 1], f32>, %g: !strata.tensor<[64, 32], bf16>) -> (!strata.tensor<[64], f32>, !strata.tensor<[32], f32>) {
  %m = prim.broadcast_in_dim %mean {shape = [64 : i64, 32 : i64], broadcast_dimensions = array<i64: 0, 1>} : (!strata.tensor<[64, 1], f32>) -> !strata.tensor<[64, 32], f32>
  %r = prim.broadcast_in_dim %rstd {shape = [64 : i64, 32 : i64], broadcast_dimensions = array<i64: 0, 1>} : (!strata.tensor<[64, 1], f32>) -> !strata.tensor<[64, 32], f32>
  %d = prim.sub %x, %m : (!strata.tensor<[64, 32], f32>, !strata.tensor<[64, 32], f32>) -> !strata.tensor<[64, 32], f32>
  %xhat = prim.mul %d, %r : (!strata.tensor<[64, 32], f32>, !strata.tensor<[64, 32], f32>) -> !strata.tensor<[64, 32], f32>
  %gf = prim.convert_element_type %g {dtype = "f32"} : (!strata.tensor<[64, 32], bf16>) -> !strata.tensor<[64, 32], f32>
  %p = prim.mul %gf, %xhat : (!strata.tensor<[64, 32], f32>, !strata.tensor<[64, 32], f32>) -> !strata.tensor<[64, 32], f32>
  %rows = prim.sum %p {dims = array<i64: 1>} : (!strata.tensor<[64, 32], f32>) -> !strata.tensor<[64], f32>
  %cols = prim.sum %p {dims = array<i64: 0>} : (!strata.tensor<[64, 32], f32>) -> !strata.tensor<[32], f32>
  func.return %rows, %cols : !strata.tensor<[64], f32>, !strata.tensor<[32], f32>
}
