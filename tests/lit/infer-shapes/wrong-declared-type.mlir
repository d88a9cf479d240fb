// RUN: not strata-opt %s -p infer-shapes 2>&1 | filecheck %s

// A declared type that contradicts the operands is an error naming the op and both
// types, not a silent rewrite.
// CHECK: strata-opt: error: pass 'infer-shapes' failed: PassFailedException: infer-shapes: aten.sum.dim_IntList declares result 0 as !strata.tensor<["s0", 4], f32>, but its operands (!strata.tensor<["s0", 3], f32>) give !strata.tensor<["s0", 1], f32>
func.func @graph(%x: !strata.tensor<["s0", 3], f32>) -> !strata.tensor<["s0", 4], f32> {
  %a = aten.sum.dim_IntList %x {dim = [1 : i64], keepdim = true} : (!strata.tensor<["s0", 3], f32>) -> !strata.tensor<["s0", 4], f32>
  func.return %a : !strata.tensor<["s0", 4], f32>
}
