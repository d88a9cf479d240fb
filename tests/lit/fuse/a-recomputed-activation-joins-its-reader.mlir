// RUN: strata-opt %s -p fuse --check-values seed=1 2>&1 | filecheck %s

// A backward graph recomputes an activation (here tanh(x), read twice by its
// derivative) before the matrix product whose result the derivative multiplies. Placed
// where the program reaches it, it would join the kernel before the product (k0, the
// exp: the same domain, its input ready) and be stored for the kernel after it. It is
// placed with its first reader instead (passes/fusion/shared_values.py): k1
// computes it, k0 stores only the exp.
// CHECK:       strata-opt: values agree on inputs seed=1
// CHECK:       kernel.func @k0 {{.*}}sources = ["prim.exp"]
// CHECK-NOT:     prim.tanh
// CHECK:       kernel.func @k1
// CHECK:         prim.tanh
// CHECK:       kernel.program @graph
// CHECK:         kernel.launch @k0({{[^,]*}}) :
// CHECK:         prim.mm
// CHECK:         kernel.launch @k1
func.func @graph(%a: !strata.tensor<[8, 16], f32>, %x: !strata.tensor<[8, 16], f32>, %b: !strata.tensor<[8, 4], f32>, %c: !strata.tensor<[4, 16], f32>) -> (!strata.tensor<[8, 16], f32>, !strata.tensor<[8, 16], f32>) {
  %y = prim.exp %a : (!strata.tensor<[8, 16], f32>) -> !strata.tensor<[8, 16], f32>
  %t = prim.tanh %x : (!strata.tensor<[8, 16], f32>) -> !strata.tensor<[8, 16], f32>
  %tt = prim.mul %t, %t : (!strata.tensor<[8, 16], f32>, !strata.tensor<[8, 16], f32>) -> !strata.tensor<[8, 16], f32>
  %one = prim.sub %t, %tt : (!strata.tensor<[8, 16], f32>, !strata.tensor<[8, 16], f32>) -> !strata.tensor<[8, 16], f32>
  %g = prim.mm %b, %c : (!strata.tensor<[8, 4], f32>, !strata.tensor<[4, 16], f32>) -> !strata.tensor<[8, 16], f32>
  %z = prim.mul %g, %one : (!strata.tensor<[8, 16], f32>, !strata.tensor<[8, 16], f32>) -> !strata.tensor<[8, 16], f32>
  func.return %y, %z : !strata.tensor<[8, 16], f32>, !strata.tensor<[8, 16], f32>
}
