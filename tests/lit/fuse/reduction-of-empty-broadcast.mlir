// RUN: strata-opt %s -p fuse | filecheck %s

// A reduction over a broadcast (stride 0) dim that may be empty: the load keeps the
// reduction variable, so that it runs inside the row's loop, never when the row is
// empty (an empty tensor may have no storage). A dim of size 0 addresses nothing,
// so any stride will do (r1); a symbolic one gets a term that is 0 within the dim.
// CHECK:       kernel.func @k0 attributes {pointwise = [], reduction = [1 : i64, 0 : i64]
// CHECK:         kernel.load %{{.*}}["r1"]
// CHECK:       kernel.func @k1 attributes {pointwise = [3 : i64], reduction = ["s0"]
// CHECK:         kernel.load %{{.*}}["x0 + floor(r0/s0)"]
func.func @graph(%x: !strata.tensor<[1, 0], f32> {strata.strides = [0 : i64, 0 : i64]}, %y: !strata.tensor<["s0", 3], f32> {strata.strides = [0 : i64, 1 : i64]}) -> (!strata.tensor<[], f32>, !strata.tensor<[3], f32>) {
  %s = prim.sum %x {dims = array<i64: 0, 1>} : (!strata.tensor<[1, 0], f32>) -> !strata.tensor<[], f32>
  %m = prim.amax %y {dims = array<i64: 0>} : (!strata.tensor<["s0", 3], f32>) -> !strata.tensor<[3], f32>
  func.return %s, %m : !strata.tensor<[], f32>, !strata.tensor<[3], f32>
}
