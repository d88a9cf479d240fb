// RUN: strata-opt %s -p infer-shapes | filecheck %s

// torch's meta functions, run on symbolic sizes, give aten results in sympy: a cat
// along a symbolic dim adds the sizes, a view keeps the declared expression, a
// broadcast keeps the symbol.
// CHECK:       %a = aten.add.Tensor %x, %y : (!strata.tensor<["s0", 3], f32>, !strata.tensor<[3], f32>) -> !strata.tensor<["s0", 3], f32>
// CHECK-NEXT:  %c = aten.cat.default %a, %z {segments = array<i64: 2>} : (!strata.tensor<["s0", 3], f32>, !strata.tensor<["s1", 3], f32>) -> !strata.tensor<["s0 + s1", 3], f32>
// CHECK-NEXT:  %v = aten.view.default %c {size = [3 : i64, "s0 + s1"]} : (!strata.tensor<["s0 + s1", 3], f32>) -> !strata.tensor<[3, "s0 + s1"], f32>
func.func @graph(%x: !strata.tensor<["s0", 3], f32>, %y: !strata.tensor<[3], f32>, %z: !strata.tensor<["s1", 3], f32>) -> !strata.tensor<[3, "s0 + s1"], f32> {
  %a = aten.add.Tensor %x, %y : (!strata.tensor<["s0", 3], f32>, !strata.tensor<[3], f32>) -> !strata.tensor<["s0", 3], f32>
  %c = aten.cat.default %a, %z {segments = array<i64: 2>} : (!strata.tensor<["s0", 3], f32>, !strata.tensor<["s1", 3], f32>) -> !strata.tensor<["s0 + s1", 3], f32>
  %v = aten.view.default %c {size = [3 : i64, "s0 + s1"]} : (!strata.tensor<["s0 + s1", 3], f32>) -> !strata.tensor<[3, "s0 + s1"], f32>
  func.return %v : !strata.tensor<[3, "s0 + s1"], f32>
}
