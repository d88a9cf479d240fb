// RUN: strata-opt %s -p decompose | filecheck %s

// constant padding reads x at p - low where that is inside x, else the value; flip
// reads at n-1-p; repeat is a broadcast and a reshape.
// CHECK-LABEL: func.func @graph
// CHECK-NOT:     aten.
// CHECK:         %[[FILL:.*]] = prim.full {shape = [4 : i64, 11 : i64], value = 5.000000e-01 : f64, dtype = "f32"}
// CHECK-NEXT:    %[[IOTA:.*]] = prim.iota {length = 11 : i64, start = 0 : i64, step = 1 : i64, dtype = "i64"}
// CHECK-NEXT:    %[[P:.*]] = prim.broadcast_in_dim %[[IOTA]]
// CHECK-NEXT:    %[[LOW:.*]] = prim.full {shape = [4 : i64, 11 : i64], value = 1 : i64, dtype = "i64"}
// CHECK-NEXT:    %[[J:.*]] = prim.sub %[[P]], %[[LOW]]
// CHECK:         %[[IN:.*]] = prim.logical_and
// CHECK-NEXT:    %[[G:.*]] = prim.gather %x, %[[J]] {dim = 1 : i64} : (!strata.tensor<[4, 8], f32>, !strata.tensor<[4, 11], i64>) -> !strata.tensor<[4, 11], f32>
// CHECK-NEXT:    %p = prim.where %[[IN]], %[[G]], %[[FILL]]
// CHECK:         %[[LAST:.*]] = prim.full {shape = [4 : i64, 8 : i64], value = 7 : i64, dtype = "i64"}
// CHECK-NEXT:    %[[R:.*]] = prim.sub %[[LAST]],
// CHECK-NEXT:    %f = prim.gather %x, %[[R]] {dim = 1 : i64}
// CHECK-NEXT:    %[[W:.*]] = prim.broadcast_in_dim %x {shape = [2 : i64, 4 : i64, 1 : i64, 8 : i64], broadcast_dimensions = array<i64: 1, 3>}
// CHECK-NEXT:    %r = prim.reshape %[[W]] {shape = [8 : i64, 8 : i64]}
// CHECK-NEXT:    func.return %p, %f, %r
func.func @graph(%x: !strata.tensor<[4, 8], f32>) -> (!strata.tensor<[4, 11], f32>, !strata.tensor<[4, 8], f32>, !strata.tensor<[8, 8], f32>) {
  %p = aten.constant_pad_nd.default %x {pad = [1 : i64, 2 : i64], value = 5.000000e-01 : f64} : (!strata.tensor<[4, 8], f32>) -> !strata.tensor<[4, 11], f32>
  %f = aten.flip.default %x {dims = [1 : i64]} : (!strata.tensor<[4, 8], f32>) -> !strata.tensor<[4, 8], f32>
  %r = aten.repeat.default %x {repeats = [2 : i64, 1 : i64]} : (!strata.tensor<[4, 8], f32>) -> !strata.tensor<[8, 8], f32>
  func.return %p, %f, %r : !strata.tensor<[4, 11], f32>, !strata.tensor<[4, 8], f32>, !strata.tensor<[8, 8], f32>
}
