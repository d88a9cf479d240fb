// RUN: strata-opt %s -p decompose | filecheck %s

// gather is prim.gather itself; index_select broadcasts its 1-d index over the
// result; advanced indexing wraps negative indices first (eager reads them from the
// end), then gathers along the indexed dim.
// CHECK-LABEL: func.func @graph
// CHECK-NOT:     aten.
// CHECK:         %g = prim.gather %x, %i {dim = 1 : i64} : (!strata.tensor<[4, 8], f32>, !strata.tensor<[4, 3], i64>) -> !strata.tensor<[4, 3], f32>
// CHECK-NEXT:    %[[B:.*]] = prim.broadcast_in_dim %j {shape = [3 : i64, 8 : i64], broadcast_dimensions = array<i64: 0>}
// CHECK-NEXT:    %s = prim.gather %x, %[[B]] {dim = 0 : i64} : (!strata.tensor<[4, 8], f32>, !strata.tensor<[3, 8], i64>) -> !strata.tensor<[3, 8], f32>
// CHECK:         %[[NEG:.*]] = prim.lt %j,
// CHECK:         %[[UP:.*]] = prim.add %j,
// CHECK-NEXT:    %[[W:.*]] = prim.where %[[NEG]], %[[UP]], %j
// CHECK-NEXT:    %[[I:.*]] = prim.broadcast_in_dim %[[W]] {shape = [4 : i64, 3 : i64], broadcast_dimensions = array<i64: 1>}
// CHECK-NEXT:    %t = prim.gather %x, %[[I]] {dim = 1 : i64}
// CHECK-NEXT:    func.return %g, %s, %t
func.func @graph(%x: !strata.tensor<[4, 8], f32>, %i: !strata.tensor<[4, 3], i64>, %j: !strata.tensor<[3], i64>) -> (!strata.tensor<[4, 3], f32>, !strata.tensor<[3, 8], f32>, !strata.tensor<[4, 3], f32>) {
  %g = aten.gather.default %x, %i {dim = 1 : i64} : (!strata.tensor<[4, 8], f32>, !strata.tensor<[4, 3], i64>) -> !strata.tensor<[4, 3], f32>
  %s = aten.index_select.default %x, %j {dim = 0 : i64} : (!strata.tensor<[4, 8], f32>, !strata.tensor<[3], i64>) -> !strata.tensor<[3, 8], f32>
  %t = aten.index.Tensor %x, %j {segments = array<i64: 1, 2, 0, 1>} : (!strata.tensor<[4, 8], f32>, !strata.tensor<[3], i64>) -> !strata.tensor<[4, 3], f32>
  func.return %g, %s, %t : !strata.tensor<[4, 3], f32>, !strata.tensor<[3, 8], f32>, !strata.tensor<[4, 3], f32>
}
