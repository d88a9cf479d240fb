// RUN: strata-opt %s -p fuse | filecheck %s

// A normal draws words 0 and 1 of one counter; read as a row of a reduction, the
// counter names the reduction variable, and the whole thing is one kernel.
// CHECK-LABEL: kernel.func @k0
// CHECK-SAME:    reduction = [16 : i64]
// CHECK:         %[[C:.*]] = kernel.index "r0 + 16*x0" : i64
// CHECK-NEXT:    kernel.philox %{{.*}}, %[[C]] {word = 0 : i64} : i32
// CHECK-NEXT:    kernel.philox %{{.*}}, %[[C]] {word = 1 : i64} : i32
// CHECK:         prim.log
// CHECK:         prim.sqrt
// CHECK:         prim.cos
// CHECK:         kernel.reduce "sum"
// CHECK-NOT:     kernel.func
func.func @graph(%s: !strata.tensor<[], i64>) -> !strata.tensor<[3], f32> {
  %n = prim.philox_normal %s {shape = [3 : i64, 16 : i64], offset = 0 : i64} : (!strata.tensor<[], i64>) -> !strata.tensor<[3, 16], f32>
  %r = prim.sum %n {dims = array<i64: 1>} : (!strata.tensor<[3, 16], f32>) -> !strata.tensor<[3], f32>
  func.return %r : !strata.tensor<[3], f32>
}
