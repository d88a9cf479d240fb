// RUN: strata-opt %s -p schedule-collectives | filecheck %s

// An all_gather of a value ready at the start is issued first, before the products
// that do not read it; its wait stays just before its reader.
// CHECK-LABEL: kernel.program @graph
// CHECK-NEXT:  ^{{.*}}(%[[A:.*]]: !strata.tensor<[4, 8], f32>, %{{.*}}: !strata.tensor<[8, 8], f32>):
// CHECK-NEXT:    %[[G:.*]] = prim.all_gather %[[A]] {group_size = 2 : i64, group = "0"}
// CHECK-NEXT:    prim.mm
// CHECK-NEXT:    prim.mm
// CHECK-NEXT:    %[[W:.*]] = prim.wait %[[G]]
// CHECK-NEXT:    kernel.return
kernel.program @graph attributes {function_type = (!strata.tensor<[4, 8], f32>, !strata.tensor<[8, 8], f32>) -> (!strata.tensor<[4, 8], f32>, !strata.tensor<[8, 8], f32>), arg_symbols = ["", ""], arg_strides = [[8 : i64, 1 : i64], [8 : i64, 1 : i64]]} {
^bb0(%a: !strata.tensor<[4, 8], f32>, %w: !strata.tensor<[8, 8], f32>):
  %m = prim.mm %a, %w : (!strata.tensor<[4, 8], f32>, !strata.tensor<[8, 8], f32>) -> !strata.tensor<[4, 8], f32>
  %m2 = prim.mm %m, %w : (!strata.tensor<[4, 8], f32>, !strata.tensor<[8, 8], f32>) -> !strata.tensor<[4, 8], f32>
  %g = prim.all_gather %a {group_size = 2 : i64, group = "0"} : (!strata.tensor<[4, 8], f32>) -> !strata.tensor<[8, 8], f32>
  %gw = prim.wait %g : (!strata.tensor<[8, 8], f32>) -> !strata.tensor<[8, 8], f32>
  kernel.return %m2, %gw : !strata.tensor<[4, 8], f32>, !strata.tensor<[8, 8], f32>
}
