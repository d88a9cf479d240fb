// RUN: strata-opt %s -p fuse | filecheck %s

// A value made of constants alone (here the 1 of `1 - exp(y)` and `1 - t*t`, as a
// sigmoid's and a tanh's backward write it: a 0-d fill converted to f32) is computed
// by each reader: no kernel of its own, which would have split the pointwise work.
// CHECK:       kernel.func @k0 attributes {pointwise = [4 : i64, 16 : i64], reduction = [], num_inputs = 2 : i64
// CHECK:         prim.exp
// CHECK:         prim.sub
// CHECK:         prim.sub
// CHECK-NOT:   kernel.func
// CHECK:       kernel.program @graph
// CHECK-COUNT-1: kernel.launch
// CHECK-NOT:   kernel.launch
func.func @graph(%y: !strata.tensor<[4, 16], f32>, %t: !strata.tensor<[4, 16], f32>) -> (!strata.tensor<[4, 16], f32>, !strata.tensor<[4, 16], f32>) {
  %one = prim.full {shape = [], value = 1 : i64, dtype = "i64"} : !strata.tensor<[], i64>
  %onef = prim.convert_element_type %one {dtype = "f32"} : (!strata.tensor<[], i64>) -> !strata.tensor<[], f32>
  %b = prim.broadcast_in_dim %onef {shape = [4 : i64, 16 : i64], broadcast_dimensions = array<i64>} : (!strata.tensor<[], f32>) -> !strata.tensor<[4, 16], f32>
  %e = prim.exp %y : (!strata.tensor<[4, 16], f32>) -> !strata.tensor<[4, 16], f32>
  %s = prim.sub %b, %e : (!strata.tensor<[4, 16], f32>, !strata.tensor<[4, 16], f32>) -> !strata.tensor<[4, 16], f32>
  %sq = prim.mul %t, %t : (!strata.tensor<[4, 16], f32>, !strata.tensor<[4, 16], f32>) -> !strata.tensor<[4, 16], f32>
  %u = prim.sub %b, %sq : (!strata.tensor<[4, 16], f32>, !strata.tensor<[4, 16], f32>) -> !strata.tensor<[4, 16], f32>
  func.return %s, %u : !strata.tensor<[4, 16], f32>, !strata.tensor<[4, 16], f32>
}
