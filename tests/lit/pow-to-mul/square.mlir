// RUN: strata-opt %s -p pow-to-mul | filecheck %s

// pow(x, 2) is mul(x, x): a float 2, an integer 2, and a 2 that arrives broadcast
// from a smaller full. The fulls, now unused, are gone.
// CHECK-LABEL: func.func @graph
// CHECK-NEXT:    %y = prim.mul %x, %x : (!strata.tensor<["s0", 4], f32>, !strata.tensor<["s0", 4], f32>) -> !strata.tensor<["s0", 4], f32>
// CHECK-NEXT:    %v = prim.mul %x, %x
// CHECK-NEXT:    %k = prim.mul %i, %i : (!strata.tensor<[3], i64>, !strata.tensor<[3], i64>) -> !strata.tensor<[3], i64>
// CHECK-NEXT:    func.return %y, %v, %k
func.func @graph(%x: !strata.tensor<["s0", 4], f32>, %i: !strata.tensor<[3], i64>) -> (!strata.tensor<["s0", 4], f32>, !strata.tensor<["s0", 4], f32>, !strata.tensor<[3], i64>) {
  %two = prim.full {shape = ["s0", 4 : i64], value = 2.0 : f64, dtype = "f32"} : !strata.tensor<["s0", 4], f32>
  %y = prim.pow %x, %two : (!strata.tensor<["s0", 4], f32>, !strata.tensor<["s0", 4], f32>) -> !strata.tensor<["s0", 4], f32>
  %c = prim.full {shape = [4 : i64], value = 2.0 : f64, dtype = "f32"} : !strata.tensor<[4], f32>
  %b = prim.broadcast_in_dim %c {shape = ["s0", 4 : i64], broadcast_dimensions = array<i64: 1>} : (!strata.tensor<[4], f32>) -> !strata.tensor<["s0", 4], f32>
  %v = prim.pow %x, %b : (!strata.tensor<["s0", 4], f32>, !strata.tensor<["s0", 4], f32>) -> !strata.tensor<["s0", 4], f32>
  %itwo = prim.full {shape = [3 : i64], value = 2 : i64, dtype = "i64"} : !strata.tensor<[3], i64>
  %k = prim.pow %i, %itwo : (!strata.tensor<[3], i64>, !strata.tensor<[3], i64>) -> !strata.tensor<[3], i64>
  func.return %y, %v, %k : !strata.tensor<["s0", 4], f32>, !strata.tensor<["s0", 4], f32>, !strata.tensor<[3], i64>
}
