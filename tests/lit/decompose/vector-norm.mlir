// RUN: strata-opt %s -p decompose | filecheck %s

// linalg_vector_norm as eager's CPU kernel computes it. The 3-norm of f16 rows over a
// symbolic batch: |x|^3 summed in f32, then ^(1/3) with 1/3 rounded to f32, converted
// back once; keepdim is a reshape.
// CHECK-LABEL: func.func @graph
// CHECK:         %[[X:.*]] = prim.convert_element_type %x {dtype = "f32"}
// CHECK-NEXT:    %[[A:.*]] = prim.abs %[[X]]
// CHECK-NEXT:    %[[P:.*]] = prim.full {shape = ["s0", 8 : i64], value = 3.000000e+00 : f64, dtype = "f32"}
// CHECK-NEXT:    %[[AP:.*]] = prim.pow %[[A]], %[[P]]
// CHECK-NEXT:    %[[S:.*]] = prim.sum %[[AP]] {dims = array<i64: 1>} : (!strata.tensor<["s0", 8], f32>) -> !strata.tensor<["s0"], f32>
// CHECK-NEXT:    %[[I:.*]] = prim.full {shape = ["s0"], value = 0.3333333432674408 : f64, dtype = "f32"}
// CHECK-NEXT:    %[[R:.*]] = prim.pow %[[S]], %[[I]]
// CHECK-NEXT:    %[[H:.*]] = prim.convert_element_type %[[R]] {dtype = "f16"}
// CHECK-NEXT:    %r = prim.reshape %[[H]] {shape = ["s0", 1 : i64]}
// The 2-norm over a dim of size 1 is |y| (eager's special case: no square, no root).
// CHECK-NEXT:    %[[Y:.*]] = prim.abs %y : (!strata.tensor<[4, 1], f32>) -> !strata.tensor<[4, 1], f32>
// CHECK-NEXT:    %n = prim.reshape %[[Y]] {shape = [4 : i64]}
// CHECK-NEXT:    func.return %r, %n
func.func @graph(%x: !strata.tensor<["s0", 8], f16>, %y: !strata.tensor<[4, 1], f32>) -> (!strata.tensor<["s0", 1], f16>, !strata.tensor<[4], f32>) {
  %r = aten.call %x {overload = "aten::linalg_vector_norm", arguments = {ord = 3.0 : f64, dim = [-1 : i64], keepdim = true}} : (!strata.tensor<["s0", 8], f16>) -> !strata.tensor<["s0", 1], f16>
  %n = aten.call %y {overload = "aten::linalg_vector_norm", arguments = {dim = [1 : i64]}} : (!strata.tensor<[4, 1], f32>) -> !strata.tensor<[4], f32>
  func.return %r, %n : !strata.tensor<["s0", 1], f16>, !strata.tensor<[4], f32>
}
