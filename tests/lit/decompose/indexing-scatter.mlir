// RUN: strata-opt %s -p decompose | filecheck %s

// Scatters stay one library op, prim.scatter, with torch's reduction and
// include_self: several sources may meet one element, which torch's kernel orders.
// CHECK-LABEL: func.func @graph
// CHECK-NOT:     aten.
// CHECK:         %a = prim.scatter %x, %i, %s {dim = 1 : i64, reduce = "sum", include_self = 1 : i64}
// CHECK-NEXT:    %r = prim.scatter %x, %i, %s {dim = 1 : i64, reduce = "amax", include_self = 0 : i64}
// CHECK-NEXT:    func.return %a, %r
func.func @graph(%x: !strata.tensor<[4, 8], f32>, %i: !strata.tensor<[4, 3], i64>, %s: !strata.tensor<[4, 3], f32>) -> (!strata.tensor<[4, 8], f32>, !strata.tensor<[4, 8], f32>) {
  %a = aten.scatter_add.default %x, %i, %s {dim = 1 : i64} : (!strata.tensor<[4, 8], f32>, !strata.tensor<[4, 3], i64>, !strata.tensor<[4, 3], f32>) -> !strata.tensor<[4, 8], f32>
  %r = aten.scatter_reduce.two %x, %i, %s {dim = 1 : i64, reduce = "amax", include_self = false} : (!strata.tensor<[4, 8], f32>, !strata.tensor<[4, 3], i64>, !strata.tensor<[4, 3], f32>) -> !strata.tensor<[4, 8], f32>
  func.return %a, %r : !strata.tensor<[4, 8], f32>, !strata.tensor<[4, 8], f32>
}
