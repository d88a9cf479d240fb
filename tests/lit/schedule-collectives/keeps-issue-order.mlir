// RUN: strata-opt %s -p schedule-collectives | filecheck %s

// Collectives keep their order of issue (every rank must issue them in one order): the
// all_reduce of an argument is not moved above the reduce_scatter issued before it,
// though its operand is ready first; each moves up to just after what it reads.
// CHECK-LABEL: kernel.program @graph
// CHECK:         %[[M:.*]] = prim.mm
// CHECK-NEXT:    %[[S:.*]] = prim.reduce_scatter %[[M]]
// CHECK-NEXT:    %[[R:.*]] = prim.all_reduce
// CHECK-NEXT:    prim.mm
// CHECK-NEXT:    prim.wait %[[S]]
// CHECK-NEXT:    prim.wait %[[R]]
// CHECK-NEXT:    kernel.return
kernel.program @graph attributes {function_type = (!strata.tensor<[4, 8], f32>, !strata.tensor<[8, 8], f32>) -> (!strata.tensor<[2, 8], f32>, !strata.tensor<[4, 8], f32>, !strata.tensor<[4, 8], f32>), arg_symbols = ["", ""], arg_strides = [[8 : i64, 1 : i64], [8 : i64, 1 : i64]]} {
^bb0(%a: !strata.tensor<[4, 8], f32>, %w: !strata.tensor<[8, 8], f32>):
  %m = prim.mm %a, %w : (!strata.tensor<[4, 8], f32>, !strata.tensor<[8, 8], f32>) -> !strata.tensor<[4, 8], f32>
  %m2 = prim.mm %m, %w : (!strata.tensor<[4, 8], f32>, !strata.tensor<[8, 8], f32>) -> !strata.tensor<[4, 8], f32>
  %s = prim.reduce_scatter %m {reduce_op = "sum", group_size = 2 : i64, group = "0"} : (!strata.tensor<[4, 8], f32>) -> !strata.tensor<[2, 8], f32>
  %sw = prim.wait %s : (!strata.tensor<[2, 8], f32>) -> !strata.tensor<[2, 8], f32>
  %r = prim.all_reduce %a {reduce_op = "sum", group = "0"} : (!strata.tensor<[4, 8], f32>) -> !strata.tensor<[4, 8], f32>
  %rw = prim.wait %r : (!strata.tensor<[4, 8], f32>) -> !strata.tensor<[4, 8], f32>
  kernel.return %sw, %rw, %m2 : !strata.tensor<[2, 8], f32>, !strata.tensor<[4, 8], f32>, !strata.tensor<[4, 8], f32>
}
