// RUN: strata-opt %s -p fuse --check-values seed=3 2>&1 | filecheck %s

// A pointwise epilogue of a library call is one kernel that reads the call's result;
// the values agree with the prim program's (strata-opt says so first, on stderr).
// CHECK:       strata-opt: values agree on inputs seed=3
// CHECK:       kernel.func @k0 attributes {pointwise = [4 : i64, 2 : i64], reduction = []
// CHECK:         prim.sigmoid
// CHECK:       kernel.program @graph
// CHECK:         %[[M:.*]] = prim.mm
// CHECK-NEXT:    %[[R:.*]] = kernel.launch @k0(%[[M]])
// CHECK-NEXT:    kernel.return %[[R]]
func.func @graph(%a: !strata.tensor<[4, 8], f32>, %b: !strata.tensor<[8, 2], f32>) -> !strata.tensor<[4, 2], f32> {
  %m = prim.mm %a, %b : (!strata.tensor<[4, 8], f32>, !strata.tensor<[8, 2], f32>) -> !strata.tensor<[4, 2], f32>
  %r = prim.sigmoid %m : (!strata.tensor<[4, 2], f32>) -> !strata.tensor<[4, 2], f32>
  func.return %r : !strata.tensor<[4, 2], f32>
}
