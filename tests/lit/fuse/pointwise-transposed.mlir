// RUN: strata-opt %s -p fuse | filecheck %s

// A broadcast, an add and a tanh are one kernel over the result's shape; the
// transposed input is read in place through its strides (s0*x1 + x0), the broadcast
// costs no copy (x1), and the result is stored contiguously.
// CHECK:       kernel.func @k0 attributes {pointwise = ["s0", 8 : i64], reduction = [], num_inputs = 2 : i64, symbols = ["s0"]
// CHECK-NEXT:  ^bb0(%[[X:.*]]: !kernel.buffer<f32>, %[[Y:.*]]: !kernel.buffer<f32>, %[[OUT:.*]]: !kernel.buffer<f32>):
// CHECK-NEXT:    %[[A:.*]] = kernel.load %[[X]]["s0*x1 + x0"]
// CHECK-NEXT:    %[[B:.*]] = kernel.load %[[Y]]["x1"]
// CHECK-NEXT:    %[[S:.*]] = prim.add %[[A]], %[[B]] : (f32, f32) -> f32
// CHECK-NEXT:    %[[T:.*]] = prim.tanh %[[S]] : (f32) -> f32
// CHECK-NEXT:    kernel.store %[[T]], %[[OUT]]["8*x0 + x1"]
// CHECK:       kernel.program @graph
// CHECK-SAME:    arg_strides = {{\[}}[1 : i64, "s0"], [1 : i64]]
// CHECK:         %[[R:.*]] = kernel.launch @k0(%{{.*}}, %{{.*}})
// CHECK-NEXT:    kernel.return %[[R]]
func.func @graph(%x: !strata.tensor<["s0", 8], f32> {strata.strides = [1 : i64, "s0"]}, %y: !strata.tensor<[8], f32>) -> !strata.tensor<["s0", 8], f32> {
  %b = prim.broadcast_in_dim %y {shape = ["s0", 8 : i64], broadcast_dimensions = array<i64: 1>} : (!strata.tensor<[8], f32>) -> !strata.tensor<["s0", 8], f32>
  %a = prim.add %x, %b : (!strata.tensor<["s0", 8], f32>, !strata.tensor<["s0", 8], f32>) -> !strata.tensor<["s0", 8], f32>
  %t = prim.tanh %a : (!strata.tensor<["s0", 8], f32>) -> !strata.tensor<["s0", 8], f32>
  func.return %t : !strata.tensor<["s0", 8], f32>
}
