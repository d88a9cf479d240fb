// RUN: strata-opt %s -p fuse | filecheck %s

// Reductions that read nothing. A tensor with a dim of size 0 has no element to load
// (its row, or the whole domain, is empty): a constant stands in for it, since views
// and strides of 0 can leave the loop variables out of a load's index, which would
// then run before the row's loop and read outside the buffer. A broadcast (stride 0)
// dim of symbolic size may be empty at run time: the load keeps the reduction
// variable through a term that is 0 within the dim, so it stays inside the loop.
// CHECK:       kernel.func @k0 attributes {pointwise = [], reduction = [1 : i64, 0 : i64], num_inputs = 0 : i64
// CHECK-NEXT:  ^bb0(%[[OUT:.*]]: !kernel.buffer<f32>):
// CHECK-NEXT:    %[[C:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:    %[[S:.*]] = kernel.reduce "sum" %[[C]]
// CHECK-NEXT:    kernel.store %[[S]], %[[OUT]]["0"]
// CHECK:       kernel.func @k1 attributes {pointwise = [3 : i64], reduction = ["s0"]
// CHECK:         kernel.load %{{.*}}["x0 + floor(r0/s0)"]
func.func @graph(%x: !strata.tensor<[1, 0], f32> {strata.strides = [0 : i64, 0 : i64]}, %y: !strata.tensor<["s0", 3], f32> {strata.strides = [0 : i64, 1 : i64]}) -> (!strata.tensor<[], f32>, !strata.tensor<[3], f32>) {
  %s = prim.sum %x {dims = array<i64: 0, 1>} : (!strata.tensor<[1, 0], f32>) -> !strata.tensor<[], f32>
  %m = prim.amax %y {dims = array<i64: 0>} : (!strata.tensor<["s0", 3], f32>) -> !strata.tensor<[3], f32>
  func.return %s, %m : !strata.tensor<[], f32>, !strata.tensor<[3], f32>
}
