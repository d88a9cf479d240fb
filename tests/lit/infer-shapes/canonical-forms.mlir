// RUN: strata-opt %s -p infer-shapes | filecheck %s

// Declared dims that are equal to the inferred ones but written otherwise take the
// canonical form, result after result, down to the function's type.
// CHECK:       func.func @graph(%x: !strata.tensor<["s0", "s0"], f32>) -> !strata.tensor<["s0**2 - 1", 1], f32>
// CHECK:         prim.slice %{{.*}} -> !strata.tensor<["s0**2 - 1"], f32>
// CHECK-NEXT:    aten.unsqueeze.default %{{.*}} : (!strata.tensor<["s0**2 - 1"], f32>) -> !strata.tensor<["s0**2 - 1", 1], f32>
func.func @graph(%x: !strata.tensor<["s0", "s0"], f32>) -> !strata.tensor<["(s0 - 1)*(s0 + 1)", 1], f32> {
  %f = prim.reshape %x {shape = ["s0**2"]} : (!strata.tensor<["s0", "s0"], f32>) -> !strata.tensor<["s0**2"], f32>
  %s = prim.slice %f {start = [1 : i64], limit = ["s0**2"], step = array<i64: 1>} : (!strata.tensor<["s0**2"], f32>) -> !strata.tensor<["(s0 - 1)*(s0 + 1)"], f32>
  %r = aten.unsqueeze.default %s {dim = 1 : i64} : (!strata.tensor<["(s0 - 1)*(s0 + 1)"], f32>) -> !strata.tensor<["(s0 - 1)*(s0 + 1)", 1], f32>
  func.return %r : !strata.tensor<["(s0 - 1)*(s0 + 1)", 1], f32>
}
