// RUN: strata-opt %s -p fold-grouped-attention | filecheck %s

// One query of 4 heads over 2 kv heads repeated twice (repeat_interleave): the group
// folds into the query rows, K and V are read as they are, and the mask, one row shared
// by all heads, stays as it is.
// CHECK-LABEL: func.func @graph
// CHECK:         %[[Q:.*]] = prim.reshape %q {shape = [1 : i64, 2 : i64, 2 : i64, 16 : i64]}
// CHECK-NEXT:    %[[O:.*]] = prim.sdpa %[[Q]], %k, %v, %m {is_causal = false}
// CHECK-NEXT:    %o = prim.reshape %[[O]] {shape = [1 : i64, 4 : i64, 1 : i64, 16 : i64]}
// CHECK-NEXT:    func.return %o
func.func @graph(%q: !strata.tensor<[1, 4, 1, 16], f32>, %k: !strata.tensor<[1, 2, 64, 16], f32>, %v: !strata.tensor<[1, 2, 64, 16], f32>, %m: !strata.tensor<[1, 1, 1, 64], i1>) -> !strata.tensor<[1, 4, 1, 16], f32> {
  %k1 = prim.reshape %k {shape = [1 : i64, 2 : i64, 1 : i64, 64 : i64, 16 : i64]} : (!strata.tensor<[1, 2, 64, 16], f32>) -> !strata.tensor<[1, 2, 1, 64, 16], f32>
  %k2 = prim.broadcast_in_dim %k1 {shape = [1 : i64, 2 : i64, 2 : i64, 64 : i64, 16 : i64], broadcast_dimensions = array<i64: 0, 1, 2, 3, 4>} : (!strata.tensor<[1, 2, 1, 64, 16], f32>) -> !strata.tensor<[1, 2, 2, 64, 16], f32>
  %k3 = prim.reshape %k2 {shape = [1 : i64, 4 : i64, 64 : i64, 16 : i64]} : (!strata.tensor<[1, 2, 2, 64, 16], f32>) -> !strata.tensor<[1, 4, 64, 16], f32>
  %v1 = prim.reshape %v {shape = [1 : i64, 2 : i64, 1 : i64, 64 : i64, 16 : i64]} : (!strata.tensor<[1, 2, 64, 16], f32>) -> !strata.tensor<[1, 2, 1, 64, 16], f32>
  %v2 = prim.broadcast_in_dim %v1 {shape = [1 : i64, 2 : i64, 2 : i64, 64 : i64, 16 : i64], broadcast_dimensions = array<i64: 0, 1, 2, 3, 4>} : (!strata.tensor<[1, 2, 1, 64, 16], f32>) -> !strata.tensor<[1, 2, 2, 64, 16], f32>
  %v3 = prim.reshape %v2 {shape = [1 : i64, 4 : i64, 64 : i64, 16 : i64]} : (!strata.tensor<[1, 2, 2, 64, 16], f32>) -> !strata.tensor<[1, 4, 64, 16], f32>
  %o = prim.sdpa %q, %k3, %v3, %m {is_causal = false} : (!strata.tensor<[1, 4, 1, 16], f32>, !strata.tensor<[1, 4, 64, 16], f32>, !strata.tensor<[1, 4, 64, 16], f32>, !strata.tensor<[1, 1, 1, 64], i1>) -> !strata.tensor<[1, 4, 1, 16], f32>
  func.return %o : !strata.tensor<[1, 4, 1, 16], f32>
}
