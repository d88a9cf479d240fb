// RUN: strata-opt %s -p simplify | filecheck %s

// Identity views fold away; a permute of a permute and a reshape of a reshape become
// one; a broadcast of a broadcast becomes one.
// CHECK-LABEL: func.func @graph
// CHECK-NEXT:    %[[P:.*]] = prim.permute %x {dims = array<i64: 2, 0, 1>} : (!strata.tensor<[2, 3, 4], f32>) -> !strata.tensor<[4, 2, 3], f32>
// CHECK-NEXT:    %[[R:.*]] = prim.reshape %x {shape = [24 : i64]}
// CHECK-NEXT:    %[[B:.*]] = prim.broadcast_in_dim %y {shape = [5 : i64, 2 : i64, 3 : i64], broadcast_dimensions = array<i64: 2>}
// CHECK-NEXT:    func.return %[[P]], %[[R]], %x, %[[B]]
func.func @graph(%x: !strata.tensor<[2, 3, 4], f32>, %y: !strata.tensor<[3], f32>) -> (!strata.tensor<[4, 2, 3], f32>, !strata.tensor<[24], f32>, !strata.tensor<[2, 3, 4], f32>, !strata.tensor<[5, 2, 3], f32>) {
  %p1 = prim.permute %x {dims = array<i64: 1, 0, 2>} : (!strata.tensor<[2, 3, 4], f32>) -> !strata.tensor<[3, 2, 4], f32>
  %p2 = prim.permute %p1 {dims = array<i64: 2, 1, 0>} : (!strata.tensor<[3, 2, 4], f32>) -> !strata.tensor<[4, 2, 3], f32>
  %r1 = prim.reshape %x {shape = [6 : i64, 4 : i64]} : (!strata.tensor<[2, 3, 4], f32>) -> !strata.tensor<[6, 4], f32>
  %r2 = prim.reshape %r1 {shape = [24 : i64]} : (!strata.tensor<[6, 4], f32>) -> !strata.tensor<[24], f32>
  %id = prim.permute %x {dims = array<i64: 0, 1, 2>} : (!strata.tensor<[2, 3, 4], f32>) -> !strata.tensor<[2, 3, 4], f32>
  %b1 = prim.broadcast_in_dim %y {shape = [2 : i64, 3 : i64], broadcast_dimensions = array<i64: 1>} : (!strata.tensor<[3], f32>) -> !strata.tensor<[2, 3], f32>
  %b2 = prim.broadcast_in_dim %b1 {shape = [5 : i64, 2 : i64, 3 : i64], broadcast_dimensions = array<i64: 1, 2>} : (!strata.tensor<[2, 3], f32>) -> !strata.tensor<[5, 2, 3], f32>
  func.return %p2, %r2, %id, %b2 : !strata.tensor<[4, 2, 3], f32>, !strata.tensor<[24], f32>, !strata.tensor<[2, 3, 4], f32>, !strata.tensor<[5, 2, 3], f32>
}
