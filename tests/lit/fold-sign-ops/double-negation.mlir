// RUN: strata-opt %s -p fold-sign-ops | filecheck %s

// -(-x) is x, and |-x| is |x|, which keeps the aten op it came from.
// CHECK-LABEL: func.func @graph
// CHECK-NEXT:    %c = prim.abs %x {strata.source = "aten.abs.default @ model.py:4"}
// CHECK-NEXT:    func.return %x, %c
func.func @graph(%x: !strata.tensor<["s0", 4], f32>) -> (!strata.tensor<["s0", 4], f32>, !strata.tensor<["s0", 4], f32>) {
  %a = prim.neg %x : (!strata.tensor<["s0", 4], f32>) -> !strata.tensor<["s0", 4], f32>
  %b = prim.neg %a : (!strata.tensor<["s0", 4], f32>) -> !strata.tensor<["s0", 4], f32>
  %c = prim.abs %a {strata.source = "aten.abs.default @ model.py:4"} : (!strata.tensor<["s0", 4], f32>) -> !strata.tensor<["s0", 4], f32>
  func.return %b, %c : !strata.tensor<["s0", 4], f32>, !strata.tensor<["s0", 4], f32>
}
