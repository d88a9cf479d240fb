// RUN: strata-opt %s -p decompose | filecheck %s

// argmax is the first position holding the maximum, or a NaN: amax, then the least
// matching position (the row's length where none matches).
// CHECK-LABEL: func.func @graph
// CHECK-NOT:     aten.
// CHECK:         %[[M:.*]] = prim.amax %x {dims = array<i64: 1>}
// CHECK-NEXT:    %[[MB:.*]] = prim.broadcast_in_dim %[[M]] {shape = [4 : i64, 8 : i64], broadcast_dimensions = array<i64: 0>}
// CHECK-NEXT:    %[[EQ:.*]] = prim.eq %x, %[[MB]]
// CHECK-NEXT:    %[[NAN:.*]] = prim.isnan %x
// CHECK-NEXT:    %[[HIT:.*]] = prim.logical_or %[[EQ]], %[[NAN]]
// CHECK-NEXT:    %[[IOTA:.*]] = prim.iota {length = 8 : i64, start = 0 : i64, step = 1 : i64, dtype = "i64"}
// CHECK-NEXT:    %[[POS:.*]] = prim.broadcast_in_dim %[[IOTA]] {shape = [4 : i64, 8 : i64], broadcast_dimensions = array<i64: 1>}
// CHECK-NEXT:    %[[NONE:.*]] = prim.full {shape = [4 : i64, 8 : i64], value = 8 : i64, dtype = "i64"}
// CHECK-NEXT:    %[[C:.*]] = prim.where %[[HIT]], %[[POS]], %[[NONE]]
// CHECK-NEXT:    %a = prim.amin %[[C]] {dims = array<i64: 1>} : (!strata.tensor<[4, 8], i64>) -> !strata.tensor<[4], i64>
// CHECK-NEXT:    func.return %a
func.func @graph(%x: !strata.tensor<[4, 8], f32>) -> !strata.tensor<[4], i64> {
  %a = aten.argmax.default %x {dim = 1 : i64} : (!strata.tensor<[4, 8], f32>) -> !strata.tensor<[4], i64>
  func.return %a : !strata.tensor<[4], i64>
}
