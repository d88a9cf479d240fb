// RUN: strata-opt %s -p fuse | filecheck %s

// A philox op is computed where it is read: its counter is the element's linear index
// plus the offset, its seed the seed tensor at 0; the uniform is made of scalar ops.
// The seed draw is a step of the program, before the launch that reads it.
// CHECK-LABEL: kernel.func @k0
// CHECK:         %[[SEED:.*]] = kernel.load %{{.*}}["0"] : !kernel.buffer<i64> -> i64
// CHECK-NEXT:    %[[C:.*]] = kernel.index "s0*x0 + x1 + 5" : i64
// CHECK-NEXT:    %[[W:.*]] = kernel.philox %[[SEED]], %[[C]] {word = 0 : i64} : i32
// CHECK:         prim.bitwise_not %[[W]]
// CHECK:         prim.convert_element_type %{{.*}} {dtype = "f32"} : (i32) -> f32
// CHECK:         arith.constant 4.6566126e-10 : f32
// CHECK:         prim.mul
// CHECK:         prim.add
// CHECK:         kernel.store
// CHECK-LABEL: kernel.program @graph
// CHECK:         %[[S:.*]] = prim.random_seed : !strata.tensor<[], i64>
// CHECK-NEXT:    kernel.launch @k0(%[[S]], %{{.*}})
func.func @graph(%x: !strata.tensor<[4, "s0"], f32>) -> !strata.tensor<[4, "s0"], f32> {
  %s = prim.random_seed : !strata.tensor<[], i64>
  %u = prim.philox_uniform %s {shape = [4 : i64, "s0"], offset = 5 : i64} : (!strata.tensor<[], i64>) -> !strata.tensor<[4, "s0"], f32>
  %y = prim.add %u, %x : (!strata.tensor<[4, "s0"], f32>, !strata.tensor<[4, "s0"], f32>) -> !strata.tensor<[4, "s0"], f32>
  func.return %y : !strata.tensor<[4, "s0"], f32>
}
