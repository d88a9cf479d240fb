// RUN: strata-opt %s -p fuse --check-values seed=4 2>&1 | filecheck %s

// A prefill's write of a prompt's keys into the cache: three rows, each at its own
// checked position. The kernel computing the rows over [1, 3, 2, 4] stores each at the
// element of src it becomes through the transpose (x1 along dim 2, whose position it
// loads for that row): its own point, so it stores what it computed there.
// CHECK:       strata-opt: values agree on inputs seed=4
// CHECK:       kernel.func @k1 attributes {pointwise = [1 : i64, 3 : i64, 2 : i64, 4 : i64]
// CHECK:         %[[X:.*]] = prim.mul
// CHECK:         %[[P:.*]] = kernel.load %{{.*}}["x1"] : !kernel.buffer<i64> -> i64
// CHECK-NEXT:    kernel.store %[[X]], %{{.*}}["4*v0 + 48*x2 + x3"] (%[[P]] : i64) : f32, !kernel.buffer<f32>
// CHECK:       kernel.program @graph
// CHECK:         kernel.launch @k1({{.*}}) {strata.updates = [0 : i64]}
// CHECK-NOT:     prim.scatter
func.func @graph(%cache: !strata.tensor<[1, 2, 12, 4], f32>, %pos: !strata.tensor<[3], i64>, %k: !strata.tensor<[1, 3, 2, 4], f32>) -> !strata.tensor<[1, 2, 12, 4], f32> attributes {strata.device = "cuda"} {
  %n = prim.full {shape = [3 : i64], value = 12 : i64, dtype = "i64"} : !strata.tensor<[3], i64>
  %c = prim.check_index %pos, %n {dim = 2 : i64, wraps = 1 : i64, indexing_op = "aten.index_put.default"} : (!strata.tensor<[3], i64>, !strata.tensor<[3], i64>) -> !strata.tensor<[3], i64>
  %i = prim.broadcast_in_dim %c {shape = [1 : i64, 2 : i64, 3 : i64, 4 : i64], broadcast_dimensions = array<i64: 2>} : (!strata.tensor<[3], i64>) -> !strata.tensor<[1, 2, 3, 4], i64>
  %r = prim.mul %k, %k : (!strata.tensor<[1, 3, 2, 4], f32>, !strata.tensor<[1, 3, 2, 4], f32>) -> !strata.tensor<[1, 3, 2, 4], f32>
  %t = prim.permute %r {dims = array<i64: 0, 2, 1, 3>} : (!strata.tensor<[1, 3, 2, 4], f32>) -> !strata.tensor<[1, 2, 3, 4], f32>
  %new = prim.scatter %cache, %i, %t {dim = 2 : i64, reduce = "none", include_self = 1 : i64} : (!strata.tensor<[1, 2, 12, 4], f32>, !strata.tensor<[1, 2, 3, 4], i64>, !strata.tensor<[1, 2, 3, 4], f32>) -> !strata.tensor<[1, 2, 12, 4], f32>
  func.return %new : !strata.tensor<[1, 2, 12, 4], f32>
}
