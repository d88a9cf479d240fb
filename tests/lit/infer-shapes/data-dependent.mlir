// RUN: strata-opt %s -p infer-shapes | filecheck %s

// A size only the data decides (nonzero's row count) is left as declared.
// CHECK:       %n = aten.nonzero.default %x : (!strata.tensor<["s0", 3], f32>) -> !strata.tensor<["u0", 2], i64>
// CHECK-NEXT:  %r = prim.neg %n : (!strata.tensor<["u0", 2], i64>) -> !strata.tensor<["u0", 2], i64>
func.func @graph(%x: !strata.tensor<["s0", 3], f32>) -> !strata.tensor<["u0", 2], i64> {
  %n = aten.nonzero.default %x : (!strata.tensor<["s0", 3], f32>) -> !strata.tensor<["u0", 2], i64>
  %r = prim.neg %n : (!strata.tensor<["u0", 2], i64>) -> !strata.tensor<["u0", 2], i64>
  func.return %r : !strata.tensor<["u0", 2], i64>
}
