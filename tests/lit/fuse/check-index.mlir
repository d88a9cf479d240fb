// RUN: strata-opt %s -p fuse | filecheck %s
// RUN: strata-opt %s -p 'fuse{index_bounds_checks=false}' | filecheck %s --check-prefix=OFF

// A user's index is checked where the kernel reads it: prim.check_index on scalars,
// naming the op for the error, whose result is within the dim (the gather does not
// clamp it again). With the checks off only the wrap of a negative index is left, and
// the gather clamps.
// CHECK:       kernel.func @k0
// CHECK-NEXT:  ^bb0(%[[I:.*]]: !kernel.buffer<i64>, %[[X:.*]]: !kernel.buffer<f32>, %[[OUT:.*]]: !kernel.buffer<f32>):
// CHECK-NEXT:    %[[IDX:.*]] = kernel.load %[[I]]["x0"] : !kernel.buffer<i64> -> i64
// CHECK-NEXT:    %[[N:.*]] = arith.constant 10 : i64
// CHECK-NEXT:    %[[C:.*]] = prim.check_index %[[IDX]], %[[N]] {dim = 0 : i64, wraps = 1 : i64, indexing_op = "aten.index.Tensor"} : (i64, i64) -> i64
// CHECK-NEXT:    %[[V:.*]] = kernel.load %[[X]]["v0"] (%[[C]] : i64) : !kernel.buffer<f32> -> f32
// CHECK-NEXT:    kernel.store %[[V]], %[[OUT]]["x0"]
// OFF:         kernel.func @k0
// OFF-NOT:       = prim.check_index
// OFF:           %[[NEG:.*]] = prim.lt
// OFF:           %[[W:.*]] = prim.where %[[NEG]]
// OFF:           prim.minimum %[[W]]
// OFF-NEXT:      %[[CL:.*]] = prim.maximum
// OFF-NEXT:      kernel.load %{{.*}}["v0"] (%[[CL]] : i64)
func.func @graph(%x: !strata.tensor<[10], f32>, %i: !strata.tensor<[3], i64>) -> !strata.tensor<[3], f32> {
  %n = prim.full {shape = [3 : i64], value = 10 : i64, dtype = "i64"} : !strata.tensor<[3], i64>
  %c = prim.check_index %i, %n {dim = 0 : i64, wraps = 1 : i64, indexing_op = "aten.index.Tensor"} : (!strata.tensor<[3], i64>, !strata.tensor<[3], i64>) -> !strata.tensor<[3], i64>
  %g = prim.gather %x, %c {dim = 0 : i64} : (!strata.tensor<[10], f32>, !strata.tensor<[3], i64>) -> !strata.tensor<[3], f32>
  func.return %g : !strata.tensor<[3], f32>
}
