// RUN: strata-opt %s -p simplify | filecheck %s

// Two seed draws are two seeds: cse does not merge them, and dce keeps an unused
// draw (it moves the generator). Philox ops are pure: equal ones merge.
// CHECK-LABEL: func.func @graph
// CHECK-NEXT:    %a = prim.random_seed
// CHECK-NEXT:    %b = prim.random_seed
// CHECK-NEXT:    %c = prim.random_seed
// CHECK-NEXT:    %u = prim.philox_uniform %a
// CHECK-NEXT:    %w = prim.philox_uniform %b
// CHECK-NEXT:    func.return %u, %u, %w
func.func @graph() -> (!strata.tensor<[8], f32>, !strata.tensor<[8], f32>, !strata.tensor<[8], f32>) {
  %a = prim.random_seed : !strata.tensor<[], i64>
  %b = prim.random_seed : !strata.tensor<[], i64>
  %c = prim.random_seed : !strata.tensor<[], i64>
  %u = prim.philox_uniform %a {shape = [8 : i64], offset = 0 : i64} : (!strata.tensor<[], i64>) -> !strata.tensor<[8], f32>
  %v = prim.philox_uniform %a {shape = [8 : i64], offset = 0 : i64} : (!strata.tensor<[], i64>) -> !strata.tensor<[8], f32>
  %w = prim.philox_uniform %b {shape = [8 : i64], offset = 0 : i64} : (!strata.tensor<[], i64>) -> !strata.tensor<[8], f32>
  func.return %u, %v, %w : !strata.tensor<[8], f32>, !strata.tensor<[8], f32>, !strata.tensor<[8], f32>
}
