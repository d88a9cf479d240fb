// RUN: strata-opt %s -p fold-sign-ops | filecheck %s

// Four negations are none; ||x|| is |x|; integers fold as floats do.
// CHECK-LABEL: func.func @graph
// CHECK-NEXT:    %[[A:.*]] = prim.abs %n
// CHECK-NEXT:    func.return %x, %[[A]]
func.func @graph(%x: !strata.tensor<[3], f16>, %n: !strata.tensor<[3], i32>) -> (!strata.tensor<[3], f16>, !strata.tensor<[3], i32>) {
  %a = prim.neg %x : (!strata.tensor<[3], f16>) -> !strata.tensor<[3], f16>
  %b = prim.neg %a : (!strata.tensor<[3], f16>) -> !strata.tensor<[3], f16>
  %c = prim.neg %b : (!strata.tensor<[3], f16>) -> !strata.tensor<[3], f16>
  %d = prim.neg %c : (!strata.tensor<[3], f16>) -> !strata.tensor<[3], f16>
  %e = prim.abs %n : (!strata.tensor<[3], i32>) -> !strata.tensor<[3], i32>
  %f = prim.abs %e : (!strata.tensor<[3], i32>) -> !strata.tensor<[3], i32>
  func.return %d, %f : !strata.tensor<[3], f16>, !strata.tensor<[3], i32>
}
