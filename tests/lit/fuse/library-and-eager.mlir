// RUN: strata-opt %s -p fuse | filecheck %s

// What fuse leaves to the program, without a kernel: a library call (prim.mm) and an
// aten op no rule lowered (it runs eagerly).
// CHECK-NOT:   kernel.func
// CHECK:       kernel.program @graph
// CHECK-NEXT:  ^bb0(%[[A:.*]]: !strata.tensor<[4, 8], f32>, %[[B:.*]]: !strata.tensor<[8, 2], f32>):
// CHECK-NEXT:    %[[M:.*]] = prim.mm %[[A]], %[[B]]
// CHECK-NEXT:    %[[E:.*]] = aten.elu.default %[[A]]
// CHECK-NEXT:    kernel.return %[[M]], %[[E]]
func.func @graph(%a: !strata.tensor<[4, 8], f32>, %b: !strata.tensor<[8, 2], f32>) -> (!strata.tensor<[4, 2], f32>, !strata.tensor<[4, 8], f32>) {
  %m = prim.mm %a, %b : (!strata.tensor<[4, 8], f32>, !strata.tensor<[8, 2], f32>) -> !strata.tensor<[4, 2], f32>
  %r = aten.elu.default %a : (!strata.tensor<[4, 8], f32>) -> !strata.tensor<[4, 8], f32>
  func.return %m, %r : !strata.tensor<[4, 2], f32>, !strata.tensor<[4, 8], f32>
}
