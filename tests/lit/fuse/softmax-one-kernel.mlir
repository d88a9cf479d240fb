// RUN: strata-opt %s -p fuse | filecheck %s

// A softmax (two reductions with their prologue and epilogue) is one kernel: rows
// over the reduction domain, kernel.reduce for amax and sum, one load, one store.
// CHECK:       kernel.func @k0 attributes {pointwise = [4 : i64], reduction = [16 : i64], num_inputs = 1 : i64
// CHECK:         %[[X:.*]] = kernel.load %{{.*}}["r0 + 16*x0"]
// CHECK-NEXT:    %[[M:.*]] = kernel.reduce "amax" %[[X]]
// CHECK-NEXT:    %[[D:.*]] = prim.sub %[[X]], %[[M]]
// CHECK-NEXT:    %[[E:.*]] = prim.exp %[[D]]
// CHECK-NEXT:    %[[S:.*]] = kernel.reduce "sum" %[[E]]
// CHECK-NEXT:    %[[Q:.*]] = prim.div %[[E]], %[[S]]
// CHECK-NEXT:    kernel.store %[[Q]], %{{.*}}["r0 + 16*x0"]
// CHECK-NOT:   kernel.func
// CHECK:       kernel.program @graph
// CHECK-COUNT-1: kernel.launch
func.func @graph(%x: !strata.tensor<[4, 16], f32>) -> !strata.tensor<[4, 16], f32> {
  %m = prim.amax %x {dims = array<i64: 1>} : (!strata.tensor<[4, 16], f32>) -> !strata.tensor<[4], f32>
  %mb = prim.broadcast_in_dim %m {shape = [4 : i64, 16 : i64], broadcast_dimensions = array<i64: 0>} : (!strata.tensor<[4], f32>) -> !strata.tensor<[4, 16], f32>
  %d = prim.sub %x, %mb : (!strata.tensor<[4, 16], f32>, !strata.tensor<[4, 16], f32>) -> !strata.tensor<[4, 16], f32>
  %e = prim.exp %d : (!strata.tensor<[4, 16], f32>) -> !strata.tensor<[4, 16], f32>
  %s = prim.sum %e {dims = array<i64: 1>} : (!strata.tensor<[4, 16], f32>) -> !strata.tensor<[4], f32>
  %sb = prim.broadcast_in_dim %s {shape = [4 : i64, 16 : i64], broadcast_dimensions = array<i64: 0>} : (!strata.tensor<[4], f32>) -> !strata.tensor<[4, 16], f32>
  %r = prim.div %e, %sb : (!strata.tensor<[4, 16], f32>, !strata.tensor<[4, 16], f32>) -> !strata.tensor<[4, 16], f32>
  func.return %r : !strata.tensor<[4, 16], f32>
}
