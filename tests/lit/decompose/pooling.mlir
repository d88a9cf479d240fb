// RUN: strata-opt %s -p decompose | filecheck %s

// A 2x2 max pool: four taps, each a gather of the input plane (rows and columns
// merged), each replacing the running maximum and its index where greater or NaN.
// CHECK-LABEL: func.func @graph
// CHECK-NOT:     aten.
// CHECK-COUNT-4: prim.gather %{{.*}} {dim = 3 : i64} : (!strata.tensor<[1, 2, 2, 16], f32>, !strata.tensor<[1, 2, 2, 2], i64>) -> !strata.tensor<[1, 2, 2, 2], f32>
// CHECK:         func.return
func.func @graph(%x: !strata.tensor<[1, 2, 4, 4], f32>) -> (!strata.tensor<[1, 2, 2, 2], f32>, !strata.tensor<[1, 2, 2, 2], i64>) {
  %v, %i = aten.max_pool2d_with_indices.default %x {kernel_size = [2 : i64, 2 : i64]} : (!strata.tensor<[1, 2, 4, 4], f32>) -> (!strata.tensor<[1, 2, 2, 2], f32>, !strata.tensor<[1, 2, 2, 2], i64>)
  func.return %v, %i : !strata.tensor<[1, 2, 2, 2], f32>, !strata.tensor<[1, 2, 2, 2], i64>
}
