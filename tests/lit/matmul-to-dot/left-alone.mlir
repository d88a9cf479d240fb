// RUN: strata-opt %s -p matmul-to-dot | filecheck %s
// RUN: strata-opt %s -p 'matmul-to-dot{target="triton"}' | filecheck %s --check-prefix=TRITON

// A CPU graph keeps its library calls (the LLVM generator has no template; oneDNN
// stays); target="triton" rewrites any graph. A batched product sums over k with its
// batch dim first; a product of one row is left to matvec-to-reduction.
// CHECK-LABEL: func.func @graph
// CHECK-NEXT:    %y = prim.bmm %q, %k
// CHECK-NEXT:    %row = prim.mm %x, %w
// TRITON-LABEL:  func.func @graph
// TRITON:        prim.broadcast_in_dim {{.*}}shape = [4 : i64, 8 : i64, 16 : i64, 8 : i64], broadcast_dimensions = array<i64: 0, 1, 2>
// TRITON:        prim.broadcast_in_dim {{.*}}shape = [4 : i64, 8 : i64, 16 : i64, 8 : i64], broadcast_dimensions = array<i64: 0, 2, 3>
// TRITON:        %y = prim.sum {{.*}}strata.dot = "ieee", dims = array<i64: 2>
// TRITON-NEXT:   %row = prim.mm %x, %w
func.func @graph(%q: !strata.tensor<[4, 8, 16], f32>, %k: !strata.tensor<[4, 16, 8], f32>, %x: !strata.tensor<[1, 16], f32>, %w: !strata.tensor<[16, 8], f32>) -> (!strata.tensor<[4, 8, 8], f32>, !strata.tensor<[1, 8], f32>) attributes {strata.device = "cpu"} {
  %y = prim.bmm %q, %k : (!strata.tensor<[4, 8, 16], f32>, !strata.tensor<[4, 16, 8], f32>) -> !strata.tensor<[4, 8, 8], f32>
  %row = prim.mm %x, %w : (!strata.tensor<[1, 16], f32>, !strata.tensor<[16, 8], f32>) -> !strata.tensor<[1, 8], f32>
  func.return %y, %row : !strata.tensor<[4, 8, 8], f32>, !strata.tensor<[1, 8], f32>
}
