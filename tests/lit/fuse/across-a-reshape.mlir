// RUN: strata-opt %s -p fuse --check-values seed=5 2>&1 | filecheck %s

// A bias added to a matmul's [6, 8] result, viewed as [2, 3, 8], then read twice (as
// gelu reads its input): the add is realized, and the kernel that computes it runs
// over the finer shape, so the consumer after the reshape joins it: one kernel, the
// add's value read at [3·x0 + x1, x2] without a store.
// CHECK:       strata-opt: values agree on inputs seed=5
// CHECK:       kernel.func @k0 attributes {pointwise = [2 : i64, 3 : i64, 8 : i64], reduction = []
// CHECK-NOT:     kernel.store
// CHECK:         prim.add
// CHECK:         prim.tanh
// CHECK:         kernel.store
// CHECK-NOT:   kernel.func @k1
// CHECK:       kernel.program @graph
// CHECK:         %[[M:.*]] = prim.mm
// CHECK-NEXT:    %[[R:.*]] = kernel.launch @k0(%[[M]]
// CHECK-NEXT:    kernel.return %[[R]]
func.func @graph(%a: !strata.tensor<[6, 4], f32>, %b: !strata.tensor<[4, 8], f32>, %bias: !strata.tensor<[8], f32>) -> !strata.tensor<[2, 3, 8], f32> {
  %m = prim.mm %a, %b : (!strata.tensor<[6, 4], f32>, !strata.tensor<[4, 8], f32>) -> !strata.tensor<[6, 8], f32>
  %bb = prim.broadcast_in_dim %bias {shape = [6 : i64, 8 : i64], broadcast_dimensions = array<i64: 1>} : (!strata.tensor<[8], f32>) -> !strata.tensor<[6, 8], f32>
  %h = prim.add %m, %bb : (!strata.tensor<[6, 8], f32>, !strata.tensor<[6, 8], f32>) -> !strata.tensor<[6, 8], f32>
  %v = prim.reshape %h {shape = [2 : i64, 3 : i64, 8 : i64]} : (!strata.tensor<[6, 8], f32>) -> !strata.tensor<[2, 3, 8], f32>
  %t = prim.tanh %v : (!strata.tensor<[2, 3, 8], f32>) -> !strata.tensor<[2, 3, 8], f32>
  %r = prim.mul %v, %t : (!strata.tensor<[2, 3, 8], f32>, !strata.tensor<[2, 3, 8], f32>) -> !strata.tensor<[2, 3, 8], f32>
  func.return %r : !strata.tensor<[2, 3, 8], f32>
}
