// RUN: strata-opt %s -p fuse | filecheck %s

// A gather and the sum over what it reads are one kernel: the index is loaded,
// clamped into the gathered dim, and names the position of a data-dependent load
// (v0); the gathered tensor is read in place, transposed through its strides.
// CHECK:       kernel.func @k0 attributes {pointwise = [5 : i64], reduction = [4 : i64], num_inputs = 2 : i64
// CHECK-NEXT:  ^bb0(%[[I:.*]]: !kernel.buffer<i64>, %[[X:.*]]: !kernel.buffer<f32>, %[[OUT:.*]]: !kernel.buffer<f32>):
// CHECK-NEXT:    %[[IDX:.*]] = kernel.load %[[I]]["r0 + 4*x0"] : !kernel.buffer<i64> -> i64
// CHECK-NEXT:    %[[ZERO:.*]] = arith.constant 0 : i64
// CHECK-NEXT:    %[[LAST:.*]] = arith.constant 6 : i64
// CHECK-NEXT:    %[[LO:.*]] = prim.minimum %[[IDX]], %[[LAST]] : (i64, i64) -> i64
// CHECK-NEXT:    %[[C:.*]] = prim.maximum %[[LO]], %[[ZERO]] : (i64, i64) -> i64
// CHECK-NEXT:    %[[V:.*]] = kernel.load %[[X]]["5*v0 + x0"] (%[[C]] : i64) : !kernel.buffer<f32> -> f32
// CHECK-NEXT:    %[[S:.*]] = kernel.reduce "sum" %[[V]] : f32 -> f32
// CHECK-NEXT:    kernel.store %[[S]], %[[OUT]]["x0"]
func.func @graph(%x: !strata.tensor<[5, 7], f32> {strata.strides = [1 : i64, 5 : i64]}, %i: !strata.tensor<[5, 4], i64>) -> !strata.tensor<[5], f32> {
  %g = prim.gather %x, %i {dim = 1 : i64} : (!strata.tensor<[5, 7], f32>, !strata.tensor<[5, 4], i64>) -> !strata.tensor<[5, 4], f32>
  %s = prim.sum %g {dims = array<i64: 1>} : (!strata.tensor<[5, 4], f32>) -> !strata.tensor<[5], f32>
  func.return %s : !strata.tensor<[5], f32>
}
