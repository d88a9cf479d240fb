// RUN: not %python %S/../Inputs/strata_opt_with_breaking_pass.py %s -p simplify,break-add 2>&1 | filecheck %s

// The IR is verified after every pass: an op a pass made invalid is reported with
// the pass's name, the op, and (for an op the pass created) the aten op it came from.
// CHECK:      strata-opt: error: the IR does not verify after pass 'break-add'
// CHECK-NEXT: <unknown location: an op a pass created>: error: 'prim.add' op: operands must have one shape and dtype
// CHECK-NEXT:   %{{.*}} = "prim.add"
// CHECK-NEXT:   (from aten.add.Tensor @ model.py:3)
func.func @graph(%a: !strata.tensor<[3], f32>) -> !strata.tensor<[3], f32> {
  %c = prim.add %a, %a {strata.source = "aten.add.Tensor @ model.py:3"} : (!strata.tensor<[3], f32>, !strata.tensor<[3], f32>) -> !strata.tensor<[3], f32>
  func.return %c : !strata.tensor<[3], f32>
}
