// RUN: strata-opt %s -p fold-grouped-attention | filecheck %s

// A causal attention (its triangle follows the query rows) and heads that are not
// repeated stay as they are.
// CHECK-LABEL: func.func @graph
// CHECK-NEXT:    %k1 = prim.reshape %k
// CHECK-NEXT:    %k2 = prim.broadcast_in_dim %k1
// CHECK-NEXT:    %k3 = prim.reshape %k2
// CHECK-NEXT:    %o = prim.sdpa %q, %k3, %k3 {is_causal = true}
// CHECK-NEXT:    %p = prim.sdpa %q, %q, %q {is_causal = false}
func.func @graph(%q: !strata.tensor<[1, 4, 2, 16], f32>, %k: !strata.tensor<[1, 2, 2, 16], f32>) -> (!strata.tensor<[1, 4, 2, 16], f32>, !strata.tensor<[1, 4, 2, 16], f32>) {
  %k1 = prim.reshape %k {shape = [1 : i64, 2 : i64, 1 : i64, 2 : i64, 16 : i64]} : (!strata.tensor<[1, 2, 2, 16], f32>) -> !strata.tensor<[1, 2, 1, 2, 16], f32>
  %k2 = prim.broadcast_in_dim %k1 {shape = [1 : i64, 2 : i64, 2 : i64, 2 : i64, 16 : i64], broadcast_dimensions = array<i64: 0, 1, 2, 3, 4>} : (!strata.tensor<[1, 2, 1, 2, 16], f32>) -> !strata.tensor<[1, 2, 2, 2, 16], f32>
  %k3 = prim.reshape %k2 {shape = [1 : i64, 4 : i64, 2 : i64, 16 : i64]} : (!strata.tensor<[1, 2, 2, 2, 16], f32>) -> !strata.tensor<[1, 4, 2, 16], f32>
  %o = prim.sdpa %q, %k3, %k3 {is_causal = true} : (!strata.tensor<[1, 4, 2, 16], f32>, !strata.tensor<[1, 4, 2, 16], f32>, !strata.tensor<[1, 4, 2, 16], f32>) -> !strata.tensor<[1, 4, 2, 16], f32>
  %p = prim.sdpa %q, %q, %q {is_causal = false} : (!strata.tensor<[1, 4, 2, 16], f32>, !strata.tensor<[1, 4, 2, 16], f32>, !strata.tensor<[1, 4, 2, 16], f32>) -> !strata.tensor<[1, 4, 2, 16], f32>
  func.return %o, %p : !strata.tensor<[1, 4, 2, 16], f32>, !strata.tensor<[1, 4, 2, 16], f32>
}
