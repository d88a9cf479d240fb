// RUN: strata-opt %s -p simplify | filecheck %s

// f16 → f32 → f16 is the identity (f32 holds every f16); f32 → f16 → f32 rounds,
// so it must stay.
// CHECK-LABEL: func.func @graph
// CHECK-NEXT:    %[[D:.*]] = prim.convert_element_type %y {dtype = "f16"}
// CHECK-NEXT:    %[[U:.*]] = prim.convert_element_type %[[D]] {dtype = "f32"}
// CHECK-NEXT:    func.return %x, %[[U]]
func.func @graph(%x: !strata.tensor<[4], f16>, %y: !strata.tensor<[4], f32>) -> (!strata.tensor<[4], f16>, !strata.tensor<[4], f32>) {
  %up = prim.convert_element_type %x {dtype = "f32"} : (!strata.tensor<[4], f16>) -> !strata.tensor<[4], f32>
  %back = prim.convert_element_type %up {dtype = "f16"} : (!strata.tensor<[4], f32>) -> !strata.tensor<[4], f16>
  %down = prim.convert_element_type %y {dtype = "f16"} : (!strata.tensor<[4], f32>) -> !strata.tensor<[4], f16>
  %again = prim.convert_element_type %down {dtype = "f32"} : (!strata.tensor<[4], f16>) -> !strata.tensor<[4], f32>
  func.return %back, %again : !strata.tensor<[4], f16>, !strata.tensor<[4], f32>
}
