// RUN: strata-opt %s -p fuse | filecheck %s
// RUN: strata-opt %s -p 'fuse{index_bounds_checks=false}' | filecheck %s --check-prefix=OFF

// x[i][::2].exp(): the gather is computed only at every other index, and eager checks them
// all. The check gets a kernel of its own over the index (its result stored, never
// returned), and the gather reads the checked indices from that buffer. With the
// checks off there is nothing to run on its own.
// CHECK:       kernel.func @k0 attributes {pointwise = [4 : i64]
// CHECK:         %[[C:.*]] = prim.check_index
// CHECK-NEXT:    kernel.store %[[C]]
// CHECK:       kernel.func @k1 attributes {pointwise = [2 : i64]
// CHECK-NOT:     prim.check_index
// CHECK:       kernel.program @graph
// CHECK-NEXT:  ^bb0(%[[X:.*]]: !strata.tensor<[10], f32>, %[[I:.*]]: !strata.tensor<[4], i64>):
// CHECK-NEXT:    %[[CHECKED:.*]] = kernel.launch @k0(%[[I]])
// CHECK-NEXT:    %[[G:.*]] = kernel.launch @k1(%[[CHECKED]], %[[X]])
// CHECK-NEXT:    kernel.return %[[G]]
// OFF:         kernel.func @k0 attributes {pointwise = [2 : i64]
// OFF-NOT:     kernel.func @k1
func.func @graph(%x: !strata.tensor<[10], f32>, %i: !strata.tensor<[4], i64>) -> !strata.tensor<[2], f32> {
  %n = prim.full {shape = [4 : i64], value = 10 : i64, dtype = "i64"} : !strata.tensor<[4], i64>
  %c = prim.check_index %i, %n {dim = 0 : i64, wraps = 1 : i64, indexing_op = "aten.index.Tensor"} : (!strata.tensor<[4], i64>, !strata.tensor<[4], i64>) -> !strata.tensor<[4], i64>
  %g = prim.gather %x, %c {dim = 0 : i64} : (!strata.tensor<[10], f32>, !strata.tensor<[4], i64>) -> !strata.tensor<[4], f32>
  %s = prim.slice %g {start = [0 : i64], limit = [4 : i64], step = array<i64: 2>} : (!strata.tensor<[4], f32>) -> !strata.tensor<[2], f32>
  %m = prim.exp %s : (!strata.tensor<[2], f32>) -> !strata.tensor<[2], f32>
  func.return %m : !strata.tensor<[2], f32>
}
