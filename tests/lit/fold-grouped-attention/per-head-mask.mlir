// RUN: strata-opt %s -p fold-grouped-attention | filecheck %s

// Two queries and an additive mask per head: the mask is laid out as the folded rows
// are (head kv·G + g, query l → row g·L + l of kv head kv); K and V repeated by an
// expand over a new dim are read as they are.
// CHECK-LABEL: func.func @graph
// CHECK:         %[[Q:.*]] = prim.reshape %q {shape = [1 : i64, 1 : i64, 6 : i64, 8 : i64]}
// CHECK-NEXT:    %[[M:.*]] = prim.reshape %m {shape = [1 : i64, 1 : i64, 6 : i64, 5 : i64]}
// CHECK-NEXT:    %[[O:.*]] = prim.sdpa %[[Q]], %k, %v, %[[M]] {is_causal = false}
// CHECK-NEXT:    %o = prim.reshape %[[O]] {shape = [1 : i64, 3 : i64, 2 : i64, 8 : i64]}
func.func @graph(%q: !strata.tensor<[1, 3, 2, 8], f32>, %k: !strata.tensor<[1, 1, 5, 8], f32>, %v: !strata.tensor<[1, 1, 5, 8], f32>, %m: !strata.tensor<[1, 3, 2, 5], f32>) -> !strata.tensor<[1, 3, 2, 8], f32> {
  %k2 = prim.broadcast_in_dim %k {shape = [1 : i64, 1 : i64, 3 : i64, 5 : i64, 8 : i64], broadcast_dimensions = array<i64: 0, 1, 3, 4>} : (!strata.tensor<[1, 1, 5, 8], f32>) -> !strata.tensor<[1, 1, 3, 5, 8], f32>
  %k3 = prim.reshape %k2 {shape = [1 : i64, 3 : i64, 5 : i64, 8 : i64]} : (!strata.tensor<[1, 1, 3, 5, 8], f32>) -> !strata.tensor<[1, 3, 5, 8], f32>
  %v2 = prim.broadcast_in_dim %v {shape = [1 : i64, 1 : i64, 3 : i64, 5 : i64, 8 : i64], broadcast_dimensions = array<i64: 0, 1, 3, 4>} : (!strata.tensor<[1, 1, 5, 8], f32>) -> !strata.tensor<[1, 1, 3, 5, 8], f32>
  %v3 = prim.reshape %v2 {shape = [1 : i64, 3 : i64, 5 : i64, 8 : i64]} : (!strata.tensor<[1, 1, 3, 5, 8], f32>) -> !strata.tensor<[1, 3, 5, 8], f32>
  %o = prim.sdpa %q, %k3, %v3, %m {is_causal = false} : (!strata.tensor<[1, 3, 2, 8], f32>, !strata.tensor<[1, 3, 5, 8], f32>, !strata.tensor<[1, 3, 5, 8], f32>, !strata.tensor<[1, 3, 2, 5], f32>) -> !strata.tensor<[1, 3, 2, 8], f32>
  func.return %o : !strata.tensor<[1, 3, 2, 8], f32>
}
