// RUN: strata-opt %s -p decompose | filecheck %s

// A linear layer's addmm (beta = alpha = 1) is one library call, prim.addmm, that adds
// the bias before rounding the product, as eager's addmm does.
// CHECK-LABEL: func.func @linear
// CHECK-NOT:     aten.
// CHECK:         %[[R:.*]] = prim.addmm %b, %x, %w : (!strata.tensor<[8], bf16>, !strata.tensor<["s0", 4], bf16>, !strata.tensor<[4, 8], bf16>) -> !strata.tensor<["s0", 8], bf16>
// CHECK-NEXT:    func.return %[[R]]
func.func @linear(%b: !strata.tensor<[8], bf16>, %x: !strata.tensor<["s0", 4], bf16>, %w: !strata.tensor<[4, 8], bf16>) -> !strata.tensor<["s0", 8], bf16> {
  %r = aten.addmm.default %b, %x, %w : (!strata.tensor<[8], bf16>, !strata.tensor<["s0", 4], bf16>, !strata.tensor<[4, 8], bf16>) -> !strata.tensor<["s0", 8], bf16>
  func.return %r : !strata.tensor<["s0", 8], bf16>
}

// A scaled one stays a product with elementwise scaling around it.
// CHECK-LABEL: func.func @scaled
// CHECK-NOT:     prim.addmm
// CHECK:         prim.mm %x, %w
// CHECK:         prim.mul
// CHECK:         prim.add
func.func @scaled(%b: !strata.tensor<[8], f32>, %x: !strata.tensor<[2, 4], f32>, %w: !strata.tensor<[4, 8], f32>) -> !strata.tensor<[2, 8], f32> {
  %r = aten.addmm.default %b, %x, %w {beta = 5.000000e-01 : f64, alpha = 2 : i64} : (!strata.tensor<[8], f32>, !strata.tensor<[2, 4], f32>, !strata.tensor<[4, 8], f32>) -> !strata.tensor<[2, 8], f32>
  func.return %r : !strata.tensor<[2, 8], f32>
}
