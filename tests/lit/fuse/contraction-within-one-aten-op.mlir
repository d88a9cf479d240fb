// RUN: strata-opt %s -p fuse | filecheck %s

// A product and the add or sum that reads it are marked strata.contract (a code
// generator may make them one fused multiply-add) when both come from one aten op, as
// in eager's own kernel: here an addcmul's `b + x * w` and a variance's sum of d * d.
// A product that is an aten op's result (aten.mul) is rounded before another op
// (aten.add) reads it, as eager rounds it: no mark on either.
// CHECK:       kernel.func @k0 attributes {pointwise = [4 : i64], reduction = [16 : i64]
// CHECK:         %[[P:.*]] = prim.mul %{{.*}}, %{{.*}} {strata.contract}
// CHECK:         %[[S:.*]] = prim.add %[[P]], %{{.*}} {strata.contract}
// CHECK:         %[[Q:.*]] = prim.mul %[[S]], %{{.*}} :
// CHECK-NEXT:    %{{.*}} = prim.add %[[Q]], %{{.*}} :
// CHECK:         %[[DD:.*]] = prim.mul %[[D:.*]], %[[D]] {strata.contract}
// CHECK-NEXT:    kernel.reduce "sum" %[[DD]] {strata.contract}
func.func @graph(%x: !strata.tensor<[4, 16], f32>, %w: !strata.tensor<[4, 16], f32>, %b: !strata.tensor<[4, 16], f32>) -> (!strata.tensor<[4, 16], f32>, !strata.tensor<[4], f32>) {
  %p = prim.mul %x, %w {strata.source = "aten.addcmul.default"} : (!strata.tensor<[4, 16], f32>, !strata.tensor<[4, 16], f32>) -> !strata.tensor<[4, 16], f32>
  %s = prim.add %p, %b {strata.source = "aten.addcmul.default"} : (!strata.tensor<[4, 16], f32>, !strata.tensor<[4, 16], f32>) -> !strata.tensor<[4, 16], f32>
  %q = prim.mul %s, %x {strata.source = "aten.mul.Tensor"} : (!strata.tensor<[4, 16], f32>, !strata.tensor<[4, 16], f32>) -> !strata.tensor<[4, 16], f32>
  %t = prim.add %q, %b {strata.source = "aten.add.Tensor"} : (!strata.tensor<[4, 16], f32>, !strata.tensor<[4, 16], f32>) -> !strata.tensor<[4, 16], f32>
  %d = prim.sub %t, %x {strata.source = "aten.var.correction"} : (!strata.tensor<[4, 16], f32>, !strata.tensor<[4, 16], f32>) -> !strata.tensor<[4, 16], f32>
  %dd = prim.mul %d, %d {strata.source = "aten.var.correction"} : (!strata.tensor<[4, 16], f32>, !strata.tensor<[4, 16], f32>) -> !strata.tensor<[4, 16], f32>
  %v = prim.sum %dd {dims = array<i64: 1>, strata.source = "aten.var.correction"} : (!strata.tensor<[4, 16], f32>) -> !strata.tensor<[4], f32>
  func.return %t, %v : !strata.tensor<[4, 16], f32>, !strata.tensor<[4], f32>
}
