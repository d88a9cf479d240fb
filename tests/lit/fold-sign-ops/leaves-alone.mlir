// RUN: strata-opt %s -p fold-sign-ops | filecheck %s

// -|x| is not |x| or x, and one negation stays.
// CHECK-LABEL: func.func @graph
// CHECK-NEXT:    %a = prim.abs %x
// CHECK-NEXT:    %b = prim.neg %a
// CHECK-NEXT:    %c = prim.neg %x
// CHECK-NEXT:    func.return %b, %c
func.func @graph(%x: !strata.tensor<[3], f32>) -> (!strata.tensor<[3], f32>, !strata.tensor<[3], f32>) {
  %a = prim.abs %x : (!strata.tensor<[3], f32>) -> !strata.tensor<[3], f32>
  %b = prim.neg %a : (!strata.tensor<[3], f32>) -> !strata.tensor<[3], f32>
  %c = prim.neg %x : (!strata.tensor<[3], f32>) -> !strata.tensor<[3], f32>
  func.return %b, %c : !strata.tensor<[3], f32>, !strata.tensor<[3], f32>
}
