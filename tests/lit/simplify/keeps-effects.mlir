// RUN: strata-opt %s -p simplify | filecheck %s

// An unused aten op that draws random numbers must stay (later draws depend on it),
// and so must a non-identity broadcast and a reshape that changes the shape; an
// unused pure aten op goes.
// CHECK-LABEL: func.func @graph
// CHECK-NEXT:    %{{.*}}, %{{.*}} = aten.native_dropout.default %x
// CHECK-NOT:     aten.abs
// CHECK-NEXT:    %[[B:.*]] = prim.broadcast_in_dim %x
// CHECK-NEXT:    %[[R:.*]] = prim.reshape %[[B]]
// CHECK-NEXT:    func.return %[[R]]
func.func @graph(%x: !strata.tensor<[4], f32>) -> !strata.tensor<[8], f32> {
  %d, %m = aten.native_dropout.default %x {p = 5.000000e-01 : f64, train = true} : (!strata.tensor<[4], f32>) -> (!strata.tensor<[4], f32>, !strata.tensor<[4], i1>)
  %a = aten.abs.default %x : (!strata.tensor<[4], f32>) -> !strata.tensor<[4], f32>
  %b = prim.broadcast_in_dim %x {shape = [2 : i64, 4 : i64], broadcast_dimensions = array<i64: 1>} : (!strata.tensor<[4], f32>) -> !strata.tensor<[2, 4], f32>
  %r = prim.reshape %b {shape = [8 : i64]} : (!strata.tensor<[2, 4], f32>) -> !strata.tensor<[8], f32>
  func.return %r : !strata.tensor<[8], f32>
}
