// RUN: strata-opt %s -p fuse --check-values seed=3 2>&1 | filecheck %s

// A result eager lays out channels-last (the importer's `strata.strides` on @graph's
// result, from the trace): the kernel making it writes it so, its launch says which
// strides, and the program names them for the runtime, which then has nothing to copy.
// CHECK:       strata-opt: values agree on inputs seed=3
// CHECK:       kernel.program @graph attributes {{.*}}strata.result_strides = {{\[}}[60 : i64, 1 : i64, 15 : i64, 3 : i64]]
// CHECK:         %[[R:.*]] = kernel.launch @k0(%{{.*}}) {strata.strides = {{\[}}[60 : i64, 1 : i64, 15 : i64, 3 : i64]]}
// CHECK-NEXT:    kernel.return %[[R]]
func.func @graph(%x: !strata.tensor<[2, 3, 4, 5], f32> {strata.strides = [60 : i64, 1 : i64, 15 : i64, 3 : i64]}) -> (!strata.tensor<[2, 3, 4, 5], f32> {strata.strides = [60 : i64, 1 : i64, 15 : i64, 3 : i64]}) {
  %r = prim.exp %x : (!strata.tensor<[2, 3, 4, 5], f32>) -> !strata.tensor<[2, 3, 4, 5], f32>
  func.return %r : !strata.tensor<[2, 3, 4, 5], f32>
}
