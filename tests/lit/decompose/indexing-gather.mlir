// RUN: strata-opt %s -p decompose | filecheck %s

// Every index a user gave is checked first, as eager checks it (prim.check_index,
// against the size of the dim it indexes): gather's and index_select's may not be
// negative; advanced indexing's may (wraps = 1: they count from the end). gather is
// then prim.gather itself; index_select broadcasts its 1-d index over the result;
// advanced indexing gathers along the indexed dim, its index checked once broadcast
// over the result (eager checks no index of an empty result).
// CHECK-LABEL: func.func @graph
// CHECK-NOT:     aten.
// CHECK:         %[[N8:.*]] = prim.full {shape = [4 : i64, 3 : i64], value = 8 : i64, dtype = "i64"}
// CHECK-NEXT:    %[[CI:.*]] = prim.check_index %i, %[[N8]] {dim = 1 : i64, wraps = 0 : i64, indexing_op = "aten.gather.default"}
// CHECK-NEXT:    %g = prim.gather %x, %[[CI]] {dim = 1 : i64} : (!strata.tensor<[4, 8], f32>, !strata.tensor<[4, 3], i64>) -> !strata.tensor<[4, 3], f32>
// CHECK-NEXT:    %[[N4:.*]] = prim.full {shape = [3 : i64], value = 4 : i64, dtype = "i64"}
// CHECK-NEXT:    %[[CJ:.*]] = prim.check_index %j, %[[N4]] {dim = 0 : i64, wraps = 0 : i64, indexing_op = "aten.index_select.default"}
// CHECK-NEXT:    %[[B:.*]] = prim.broadcast_in_dim %[[CJ]] {shape = [3 : i64, 8 : i64], broadcast_dimensions = array<i64: 0>}
// CHECK-NEXT:    %s = prim.gather %x, %[[B]] {dim = 0 : i64} : (!strata.tensor<[4, 8], f32>, !strata.tensor<[3, 8], i64>) -> !strata.tensor<[3, 8], f32>
// CHECK-NEXT:    %[[I:.*]] = prim.broadcast_in_dim %j {shape = [4 : i64, 3 : i64], broadcast_dimensions = array<i64: 1>}
// CHECK-NEXT:    %[[M8:.*]] = prim.full {shape = [4 : i64, 3 : i64], value = 8 : i64, dtype = "i64"}
// CHECK-NEXT:    %[[W:.*]] = prim.check_index %[[I]], %[[M8]] {dim = 1 : i64, wraps = 1 : i64, indexing_op = "aten.index.Tensor"}
// CHECK-NEXT:    %t = prim.gather %x, %[[W]] {dim = 1 : i64}
// CHECK-NEXT:    func.return %g, %s, %t
func.func @graph(%x: !strata.tensor<[4, 8], f32>, %i: !strata.tensor<[4, 3], i64>, %j: !strata.tensor<[3], i64>) -> (!strata.tensor<[4, 3], f32>, !strata.tensor<[3, 8], f32>, !strata.tensor<[4, 3], f32>) {
  %g = aten.gather.default %x, %i {dim = 1 : i64} : (!strata.tensor<[4, 8], f32>, !strata.tensor<[4, 3], i64>) -> !strata.tensor<[4, 3], f32>
  %s = aten.index_select.default %x, %j {dim = 0 : i64} : (!strata.tensor<[4, 8], f32>, !strata.tensor<[3], i64>) -> !strata.tensor<[3, 8], f32>
  %t = aten.index.Tensor %x, %j {segments = array<i64: 1, 2, 0, 1>} : (!strata.tensor<[4, 8], f32>, !strata.tensor<[3], i64>) -> !strata.tensor<[4, 3], f32>
  func.return %g, %s, %t : !strata.tensor<[4, 3], f32>, !strata.tensor<[3, 8], f32>, !strata.tensor<[4, 3], f32>
}
