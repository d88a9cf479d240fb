// RUN: strata-opt %s -p pow-to-mul | filecheck %s

// Only a constant 2 on the right is a square: pow(x, 3), pow(2, x) and pow(x, y)
// stay as they are.
// CHECK-LABEL: func.func @graph
// CHECK:         prim.pow %x, %three
// CHECK-NEXT:    prim.pow %two, %x
// CHECK-NEXT:    prim.pow %x, %y
// CHECK-NOT:     prim.mul
func.func @graph(%x: !strata.tensor<[4], f32>, %y: !strata.tensor<[4], f32>) -> (!strata.tensor<[4], f32>, !strata.tensor<[4], f32>, !strata.tensor<[4], f32>) {
  %three = prim.full {shape = [4 : i64], value = 3.0 : f64, dtype = "f32"} : !strata.tensor<[4], f32>
  %two = prim.full {shape = [4 : i64], value = 2.0 : f64, dtype = "f32"} : !strata.tensor<[4], f32>
  %a = prim.pow %x, %three : (!strata.tensor<[4], f32>, !strata.tensor<[4], f32>) -> !strata.tensor<[4], f32>
  %b = prim.pow %two, %x : (!strata.tensor<[4], f32>, !strata.tensor<[4], f32>) -> !strata.tensor<[4], f32>
  %c = prim.pow %x, %y : (!strata.tensor<[4], f32>, !strata.tensor<[4], f32>) -> !strata.tensor<[4], f32>
  func.return %a, %b, %c : !strata.tensor<[4], f32>, !strata.tensor<[4], f32>, !strata.tensor<[4], f32>
}
