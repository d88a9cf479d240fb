// RUN: strata-opt %s -p decompose | filecheck %s

// aten.add.Tensor broadcasts explicitly and scales `other` by alpha.
// CHECK-LABEL: func.func @graph
// CHECK-NOT:     aten.
// CHECK:         %[[B:.*]] = prim.broadcast_in_dim %y {shape = [4 : i64, 8 : i64], broadcast_dimensions = array<i64: 1>}
// CHECK-NEXT:    %[[A:.*]] = prim.full {shape = [4 : i64, 8 : i64], value = 2.000000e+00 : f64, dtype = "f32"}
// CHECK-NEXT:    %[[S:.*]] = prim.mul %[[B]], %[[A]]
// CHECK-NEXT:    %[[R:.*]] = prim.add %x, %[[S]] : (!strata.tensor<[4, 8], f32>, !strata.tensor<[4, 8], f32>) -> !strata.tensor<[4, 8], f32>
// CHECK-NEXT:    func.return %[[R]]
func.func @graph(%x: !strata.tensor<[4, 8], f32>, %y: !strata.tensor<[8], f32>) -> !strata.tensor<[4, 8], f32> {
  %r = aten.add.Tensor %x, %y {alpha = 2 : i64} : (!strata.tensor<[4, 8], f32>, !strata.tensor<[8], f32>) -> !strata.tensor<[4, 8], f32>
  func.return %r : !strata.tensor<[4, 8], f32>
}
