// RUN: strata-opt %s -p matvec-to-reduction | filecheck %s

// A graph on the CPU keeps its library call (oneDNN's GEMV).
// CHECK-LABEL: func.func @graph
// CHECK-NEXT:    %y = prim.mm %x, %w
// CHECK-NEXT:    func.return %y
func.func @graph(%x: !strata.tensor<[1, 64], f32>, %w: !strata.tensor<[64, 32], f32>) -> !strata.tensor<[1, 32], f32> attributes {strata.device = "cpu"} {
  %y = prim.mm %x, %w : (!strata.tensor<[1, 64], f32>, !strata.tensor<[64, 32], f32>) -> !strata.tensor<[1, 32], f32>
  func.return %y : !strata.tensor<[1, 32], f32>
}
