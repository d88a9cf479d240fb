// RUN: strata-opt %s -p schedule-collectives | filecheck %s

// The wait for an all_reduce moves down to its first reader: the product that does not
// need the reduced value runs while it is in flight.
// CHECK-LABEL: kernel.program @graph
// CHECK:         %[[R:.*]] = prim.all_reduce %{{.*}} {reduce_op = "sum", group = "0"}
// CHECK-NEXT:    %[[M:.*]] = prim.mm
// CHECK-NEXT:    %[[W:.*]] = prim.wait %[[R]]
// CHECK-NEXT:    prim.mm %[[W]]
kernel.program @graph attributes {function_type = (!strata.tensor<[4, 8], f32>, !strata.tensor<[8, 8], f32>) -> (!strata.tensor<[4, 8], f32>, !strata.tensor<[4, 8], f32>), arg_symbols = ["", ""], arg_strides = [[8 : i64, 1 : i64], [8 : i64, 1 : i64]]} {
^bb0(%a: !strata.tensor<[4, 8], f32>, %w: !strata.tensor<[8, 8], f32>):
  %r = prim.all_reduce %a {reduce_op = "sum", group = "0"} : (!strata.tensor<[4, 8], f32>) -> !strata.tensor<[4, 8], f32>
  %rw = prim.wait %r : (!strata.tensor<[4, 8], f32>) -> !strata.tensor<[4, 8], f32>
  %m = prim.mm %a, %w : (!strata.tensor<[4, 8], f32>, !strata.tensor<[8, 8], f32>) -> !strata.tensor<[4, 8], f32>
  %out = prim.mm %rw, %w : (!strata.tensor<[4, 8], f32>, !strata.tensor<[8, 8], f32>) -> !strata.tensor<[4, 8], f32>
  kernel.return %out, %m : !strata.tensor<[4, 8], f32>, !strata.tensor<[4, 8], f32>
}
