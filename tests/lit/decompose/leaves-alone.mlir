// RUN: strata-opt %s -p decompose | filecheck %s

// What decompose must leave as it is: an overload without a rule (as_strided), an op whose
// rule declines (relu of bool, an error in eager), and an op outside the core set
// without a rule (aten.call of softplus). They run eagerly later.
// CHECK-LABEL: func.func @graph
// CHECK-NEXT:    %e = aten.as_strided.default %x {size = [3 : i64], stride = [1 : i64]} : (!strata.tensor<[3], f32>) -> !strata.tensor<[3], f32>
// CHECK-NEXT:    %r = aten.relu.default %b : (!strata.tensor<[3], i1>) -> !strata.tensor<[3], i1>
// CHECK-NEXT:    %s = aten.call %x {overload = "aten::softplus", arguments = {}}
// CHECK-NEXT:    func.return %e, %r, %s
func.func @graph(%x: !strata.tensor<[3], f32>, %b: !strata.tensor<[3], i1>) -> (!strata.tensor<[3], f32>, !strata.tensor<[3], i1>, !strata.tensor<[3], f32>) {
  %e = aten.as_strided.default %x {size = [3 : i64], stride = [1 : i64]} : (!strata.tensor<[3], f32>) -> !strata.tensor<[3], f32>
  %r = aten.relu.default %b : (!strata.tensor<[3], i1>) -> !strata.tensor<[3], i1>
  %s = aten.call %x {overload = "aten::softplus", arguments = {}} : (!strata.tensor<[3], f32>) -> !strata.tensor<[3], f32>
  func.return %e, %r, %s : !strata.tensor<[3], f32>, !strata.tensor<[3], i1>, !strata.tensor<[3], f32>
}
