// RUN: strata-opt %s -p decompose | filecheck %s

// _softmax of bf16 over a symbolic batch: computed in f32 (amax, sub, exp, sum,
// div), converted back once.
// CHECK-LABEL: func.func @graph
// CHECK:         %[[X:.*]] = prim.convert_element_type %x {dtype = "f32"}
// CHECK-NEXT:    %[[M:.*]] = prim.amax %[[X]] {dims = array<i64: 1>} : (!strata.tensor<["s0", 16], f32>) -> !strata.tensor<["s0"], f32>
// CHECK-NEXT:    %[[MB:.*]] = prim.broadcast_in_dim %[[M]] {shape = ["s0", 16 : i64], broadcast_dimensions = array<i64: 0>}
// CHECK-NEXT:    %[[D:.*]] = prim.sub %[[X]], %[[MB]]
// CHECK-NEXT:    %[[E:.*]] = prim.exp %[[D]]
// CHECK-NEXT:    %[[S:.*]] = prim.sum %[[E]] {dims = array<i64: 1>}
// CHECK-NEXT:    %[[SB:.*]] = prim.broadcast_in_dim %[[S]]
// CHECK-NEXT:    %[[Q:.*]] = prim.div %[[E]], %[[SB]]
// CHECK-NEXT:    %{{.*}} = prim.convert_element_type %[[Q]] {dtype = "bf16"} : (!strata.tensor<["s0", 16], f32>) -> !strata.tensor<["s0", 16], bf16>
func.func @graph(%x: !strata.tensor<["s0", 16], bf16>) -> !strata.tensor<["s0", 16], bf16> {
  %r = aten._softmax.default %x {dim = -1 : i64, half_to_float = false} : (!strata.tensor<["s0", 16], bf16>) -> !strata.tensor<["s0", 16], bf16>
  func.return %r : !strata.tensor<["s0", 16], bf16>
}
