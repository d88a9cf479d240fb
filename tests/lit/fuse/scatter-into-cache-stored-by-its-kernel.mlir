// RUN: strata-opt %s -p fuse --check-values seed=2 2>&1 | filecheck %s
// RUN: strata-opt %s -p fuse --check-codegen triton 2>&1 | filecheck %s --check-prefix=TRITON
// RUN: sed 's/"cuda"/"cpu"/' %s | strata-opt -p fuse | filecheck %s --check-prefix=CPU

// A decode step's write of its new keys into the cache (`cache[:, :, pos] = k`): the
// scatter of the rows k0 computes, at a checked position, into the cache argument. The
// check of the position (a single value of the graph's arguments) joins the same kernel,
// which checks it where it loads it, and stores each element it computes at that
// position along dim 2 (a data-dependent store, v0); its launch marks that output as
// updating the cache operand (0), and no library call is left. On the CPU the scatter
// stays one.
// CHECK:       strata-opt: values agree on inputs seed=2
// CHECK:       kernel.func @k0 attributes {pointwise = [1 : i64, 1 : i64, 2 : i64, 4 : i64]
// CHECK-NEXT:  ^bb0(%[[CACHE:.*]]: !kernel.buffer<f32>, %[[POS:.*]]: !kernel.buffer<i64>, %[[K:.*]]: !kernel.buffer<f32>, %[[OUT:.*]]: !kernel.buffer<f32>):
// CHECK-NEXT:    %[[LOADED:.*]] = kernel.load %[[POS]]["0"] : !kernel.buffer<i64> -> i64
// CHECK:         %[[P:.*]] = prim.check_index %[[LOADED]]
// CHECK:         %[[X:.*]] = prim.mul
// CHECK-NEXT:    kernel.store %[[X]], %[[OUT]]["4*v0 + 48*x2 + x3"] (%[[P]] : i64) : f32, !kernel.buffer<f32>
// CHECK-NEXT:  }
// CHECK:       kernel.program @graph
// CHECK:         kernel.launch @k0(%{{.*}}, %{{.*}}, %{{.*}}) {strata.updates = [0 : i64]}
// CHECK-NOT:     kernel.launch
// CHECK-NOT:     prim.scatter
// TRITON:      strata-opt: triton kernels agree with the kernel interpreter
// CPU:         prim.scatter
func.func @graph(%cache: !strata.tensor<[1, 2, 12, 4], f32>, %pos: !strata.tensor<[1], i64>, %k: !strata.tensor<[1, 1, 2, 4], f32>) -> !strata.tensor<[1, 2, 12, 4], f32> attributes {strata.device = "cuda"} {
  %n = prim.full {shape = [1 : i64], value = 12 : i64, dtype = "i64"} : !strata.tensor<[1], i64>
  %c = prim.check_index %pos, %n {dim = 2 : i64, wraps = 1 : i64, indexing_op = "aten.index_put.default"} : (!strata.tensor<[1], i64>, !strata.tensor<[1], i64>) -> !strata.tensor<[1], i64>
  %i = prim.broadcast_in_dim %c {shape = [1 : i64, 2 : i64, 1 : i64, 4 : i64], broadcast_dimensions = array<i64: 2>} : (!strata.tensor<[1], i64>) -> !strata.tensor<[1, 2, 1, 4], i64>
  %r = prim.mul %k, %k : (!strata.tensor<[1, 1, 2, 4], f32>, !strata.tensor<[1, 1, 2, 4], f32>) -> !strata.tensor<[1, 1, 2, 4], f32>
  %t = prim.permute %r {dims = array<i64: 0, 2, 1, 3>} : (!strata.tensor<[1, 1, 2, 4], f32>) -> !strata.tensor<[1, 2, 1, 4], f32>
  %new = prim.scatter %cache, %i, %t {dim = 2 : i64, reduce = "none", include_self = 1 : i64} : (!strata.tensor<[1, 2, 12, 4], f32>, !strata.tensor<[1, 2, 1, 4], i64>, !strata.tensor<[1, 2, 1, 4], f32>) -> !strata.tensor<[1, 2, 12, 4], f32>
  func.return %new : !strata.tensor<[1, 2, 12, 4], f32>
}
