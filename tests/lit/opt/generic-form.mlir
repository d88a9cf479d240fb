// RUN: strata-opt %s --print-op-generic | filecheck %s

// The generic form of strata's ops: properties in <{...}>, attributes in {...}.
// CHECK:      "aten.sum.dim_IntList"(%x) <{dim = [1 : i64], keepdim = true}> {strata.source = "aten.sum.dim_IntList @ model.py:7"} : (!strata.tensor<[3, 5], f32>) -> !strata.tensor<[3, 1], f32>
// CHECK-NEXT: "prim.broadcast_in_dim"(%s) <{shape = [3 : i64, 5 : i64], broadcast_dimensions = array<i64: 0, 1>}> : (!strata.tensor<[3, 1], f32>) -> !strata.tensor<[3, 5], f32>
func.func @graph(%x: !strata.tensor<[3, 5], f32>) -> !strata.tensor<[3, 5], f32> {
  %s = aten.sum.dim_IntList %x {dim = [1 : i64], keepdim = true, strata.source = "aten.sum.dim_IntList @ model.py:7"} : (!strata.tensor<[3, 5], f32>) -> !strata.tensor<[3, 1], f32>
  %b = prim.broadcast_in_dim %s {shape = [3 : i64, 5 : i64], broadcast_dimensions = array<i64: 0, 1>} : (!strata.tensor<[3, 1], f32>) -> !strata.tensor<[3, 5], f32>
  func.return %b : !strata.tensor<[3, 5], f32>
}
