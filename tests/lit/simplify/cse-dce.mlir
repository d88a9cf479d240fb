// RUN: strata-opt %s -p simplify | filecheck %s

// Two equal prim ops are one (even from different aten ops: attributes such as
// strata.source do not count); an unused prim op goes.
// CHECK-LABEL: func.func @graph
// CHECK-NEXT:    %[[E:.*]] = prim.exp %x {strata.source = "aten.exp.default"}
// CHECK-NEXT:    %[[S:.*]] = prim.add %[[E]], %[[E]]
// CHECK-NEXT:    func.return %[[S]]
func.func @graph(%x: !strata.tensor<["s0"], f32>) -> !strata.tensor<["s0"], f32> {
  %a = prim.exp %x {strata.source = "aten.exp.default"} : (!strata.tensor<["s0"], f32>) -> !strata.tensor<["s0"], f32>
  %b = prim.exp %x {strata.source = "aten.exp.default @ model.py:3"} : (!strata.tensor<["s0"], f32>) -> !strata.tensor<["s0"], f32>
  %unused = prim.sin %x : (!strata.tensor<["s0"], f32>) -> !strata.tensor<["s0"], f32>
  %s = prim.add %a, %b : (!strata.tensor<["s0"], f32>, !strata.tensor<["s0"], f32>) -> !strata.tensor<["s0"], f32>
  func.return %s : !strata.tensor<["s0"], f32>
}
