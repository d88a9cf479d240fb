// RUN: strata-opt %s -p decompose | filecheck %s

// any and all read their input as bool and reduce it by sum ("or") and prod ("and"),
// whose identities are eager's any and all of nothing: False and True over an empty
// dim (amax and amin, which eager refuses there, are not used).
// CHECK-LABEL: func.func @graph
// CHECK:         %[[B:.*]] = prim.convert_element_type %x {dtype = "i1"} : (!strata.tensor<[0, "s0"], f32>) -> !strata.tensor<[0, "s0"], i1>
// CHECK-NEXT:    %[[ANY:.*]] = prim.sum %[[B]] {dims = array<i64: 0>} : (!strata.tensor<[0, "s0"], i1>) -> !strata.tensor<["s0"], i1>
// CHECK-NEXT:    %[[C:.*]] = prim.convert_element_type %x {dtype = "i1"}
// CHECK-NEXT:    %[[ALL:.*]] = prim.prod %[[C]] {dims = array<i64: 0, 1>} : (!strata.tensor<[0, "s0"], i1>) -> !strata.tensor<[], i1>
// CHECK-NEXT:    %[[KEPT:.*]] = prim.reshape %[[ALL]] {shape = [1 : i64, 1 : i64]}
// CHECK-NEXT:    func.return %[[ANY]], %[[KEPT]]
func.func @graph(%x: !strata.tensor<[0, "s0"], f32>) -> (!strata.tensor<["s0"], i1>, !strata.tensor<[1, 1], i1>) {
  %a = aten.any.dim %x {dim = 0 : i64} : (!strata.tensor<[0, "s0"], f32>) -> !strata.tensor<["s0"], i1>
  %l = aten.call %x {overload = "aten::all.dims", arguments = {dim = [0 : i64, 1 : i64], keepdim = true}} : (!strata.tensor<[0, "s0"], f32>) -> !strata.tensor<[1, 1], i1>
  func.return %a, %l : !strata.tensor<["s0"], i1>, !strata.tensor<[1, 1], i1>
}
