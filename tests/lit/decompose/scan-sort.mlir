// RUN: strata-opt %s -p decompose | filecheck %s

// Scans, sorts and top-k are library ops; a bool cumsum scans in i64, as eager does.
// CHECK-LABEL: func.func @graph
// CHECK-NOT:     aten.
// CHECK:         %[[B:.*]] = prim.convert_element_type %b {dtype = "i64"}
// CHECK-NEXT:    %c = prim.cumsum %[[B]] {dim = 1 : i64} : (!strata.tensor<[4, 8], i64>) -> !strata.tensor<[4, 8], i64>
// CHECK-NEXT:    %v, %i = prim.sort %x {dim = 0 : i64, descending = 1 : i64, stable = 0 : i64} : (!strata.tensor<[4, 8], f32>) -> (!strata.tensor<[4, 8], f32>, !strata.tensor<[4, 8], i64>)
// CHECK-NEXT:    %tv, %ti = prim.topk %x {k = 3 : i64, dim = 1 : i64, largest = 1 : i64, sorted = 1 : i64} : (!strata.tensor<[4, 8], f32>) -> (!strata.tensor<[4, 3], f32>, !strata.tensor<[4, 3], i64>)
// CHECK-NEXT:    func.return %c, %v, %i, %tv, %ti
func.func @graph(%x: !strata.tensor<[4, 8], f32>, %b: !strata.tensor<[4, 8], i1>) -> (!strata.tensor<[4, 8], i64>, !strata.tensor<[4, 8], f32>, !strata.tensor<[4, 8], i64>, !strata.tensor<[4, 3], f32>, !strata.tensor<[4, 3], i64>) {
  %c = aten.cumsum.default %b {dim = 1 : i64} : (!strata.tensor<[4, 8], i1>) -> !strata.tensor<[4, 8], i64>
  %v, %i = aten.sort.default %x {dim = 0 : i64, descending = true} : (!strata.tensor<[4, 8], f32>) -> (!strata.tensor<[4, 8], f32>, !strata.tensor<[4, 8], i64>)
  %tv, %ti = aten.topk.default %x {k = 3 : i64} : (!strata.tensor<[4, 8], f32>) -> (!strata.tensor<[4, 3], f32>, !strata.tensor<[4, 3], i64>)
  func.return %c, %v, %i, %tv, %ti : !strata.tensor<[4, 8], i64>, !strata.tensor<[4, 8], f32>, !strata.tensor<[4, 8], i64>, !strata.tensor<[4, 3], f32>, !strata.tensor<[4, 3], i64>
}
