// RUN: strata-opt %s -p decompose | filecheck %s

// Rounding division of bf16 tensors as eager's CPU kernel does it: on vectors of
// bf16, so the f32 quotient is rounded to bf16 (and back) before trunc; floor rounds
// each step of ATen's div_floor_floating_vec (the quotient, x - fmod(x, y), its
// division by y, the step down by one). A divisor of one element (or a scalar) is
// taken out of eager's loop: that division stays in f32.
// CHECK-LABEL: func.func @graph
// CHECK:         %[[Q:.*]] = prim.div %{{.*}}, %{{.*}} : (!strata.tensor<[4, 8], f32>, !strata.tensor<[4, 8], f32>) -> !strata.tensor<[4, 8], f32>
// CHECK-NEXT:    %[[QH:.*]] = prim.convert_element_type %[[Q]] {dtype = "bf16"}
// CHECK-NEXT:    %[[QF:.*]] = prim.convert_element_type %[[QH]] {dtype = "f32"}
// CHECK-NEXT:    %[[T:.*]] = prim.trunc %[[QF]]
// CHECK-NEXT:    %t = prim.convert_element_type %[[T]] {strata.opmath_rounding, dtype = "bf16"}

// CHECK:         %[[FQ:.*]] = prim.div %[[X:.*]], %[[Y:.*]] : (!strata.tensor<[4, 8], f32>, !strata.tensor<[4, 8], f32>) -> !strata.tensor<[4, 8], f32>
// CHECK-NEXT:    prim.convert_element_type %[[FQ]] {dtype = "bf16"}
// CHECK:         %[[MOD:.*]] = prim.fmod %[[X]], %[[Y]]
// CHECK:         %[[MULT:.*]] = prim.sub %[[X]], %[[MOD]]
// CHECK-NEXT:    %[[MH:.*]] = prim.convert_element_type %[[MULT]] {dtype = "bf16"}
// CHECK-NEXT:    %[[MF:.*]] = prim.convert_element_type %[[MH]] {dtype = "f32"}
// CHECK-NEXT:    %[[M:.*]] = prim.where %{{.*}}, %[[X]], %[[MF]]
// CHECK-NEXT:    %[[D:.*]] = prim.div %[[M]], %[[Y]]
// CHECK-NEXT:    %[[DH:.*]] = prim.convert_element_type %[[D]] {dtype = "bf16"}
// CHECK-NEXT:    prim.convert_element_type %[[DH]] {dtype = "f32"}
// CHECK:         prim.floor
// CHECK:         %f = prim.convert_element_type %{{.*}} {strata.opmath_rounding, dtype = "bf16"}

// CHECK:         %[[OQ:.*]] = prim.div %{{.*}}, %{{.*}} : (!strata.tensor<[4, 8], f32>, !strata.tensor<[4, 8], f32>) -> !strata.tensor<[4, 8], f32>
// CHECK-NEXT:    %[[OT:.*]] = prim.trunc %[[OQ]]
// CHECK-NEXT:    %o = prim.convert_element_type %[[OT]] {strata.opmath_rounding, dtype = "bf16"}
func.func @graph(%x: !strata.tensor<[4, 8], bf16>, %y: !strata.tensor<[8], bf16>, %z: !strata.tensor<[1], bf16>) -> (!strata.tensor<[4, 8], bf16>, !strata.tensor<[4, 8], bf16>, !strata.tensor<[4, 8], bf16>) {
  %t = aten.div.Tensor_mode %x, %y {rounding_mode = "trunc"} : (!strata.tensor<[4, 8], bf16>, !strata.tensor<[8], bf16>) -> !strata.tensor<[4, 8], bf16>
  %f = aten.div.Tensor_mode %x, %y {rounding_mode = "floor"} : (!strata.tensor<[4, 8], bf16>, !strata.tensor<[8], bf16>) -> !strata.tensor<[4, 8], bf16>
  %o = aten.div.Tensor_mode %x, %z {rounding_mode = "trunc"} : (!strata.tensor<[4, 8], bf16>, !strata.tensor<[1], bf16>) -> !strata.tensor<[4, 8], bf16>
  func.return %t, %f, %o : !strata.tensor<[4, 8], bf16>, !strata.tensor<[4, 8], bf16>, !strata.tensor<[4, 8], bf16>
}
