// RUN: not strata-opt %s 2>&1 | filecheck %s
// RUN: strata-opt %s --verify-diagnostics | filecheck %s

// An op that does not verify is reported with its location in the input, the
// message, the op, and the aten op it came from; the exit status is 1 (0 with
// --verify-diagnostics, which prints the report on stdout). Line 13 is the prim.add.
// CHECK:      the IR does not verify in the input
// CHECK-NEXT: {{.*}}verify-error.mlir:13:3: error: 'prim.add' op: operands must have one shape and dtype (prim does not broadcast or promote), got !strata.tensor<[3], f32>, !strata.tensor<[4], f32>
// CHECK-NEXT:   %c = "prim.add"(%a, %b) {strata.source = "aten.add.Tensor @ model.py:12"}
// CHECK-NEXT:   (from aten.add.Tensor @ model.py:12)
func.func @graph(%a: !strata.tensor<[3], f32>, %b: !strata.tensor<[4], f32>) -> !strata.tensor<[3], f32> {
  %ok = prim.neg %a : (!strata.tensor<[3], f32>) -> !strata.tensor<[3], f32>
  %c = prim.add %a, %b {strata.source = "aten.add.Tensor @ model.py:12"} : (!strata.tensor<[3], f32>, !strata.tensor<[4], f32>) -> !strata.tensor<[3], f32>
  func.return %c : !strata.tensor<[3], f32>
}
