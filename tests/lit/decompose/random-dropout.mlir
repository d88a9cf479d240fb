// RUN: strata-opt %s -p decompose | filecheck %s
// RUN: strata-opt %s -p 'decompose{fallback_random=true}' | filecheck %s --check-prefix=EAGER

// Training-mode dropout draws a seed of its own and keeps an element where its uniform
// is above p; the output is x * mask * 1/(1 - p), and the mask is the second result.
// CHECK-LABEL: func.func @graph
// CHECK-NOT:     aten.
// CHECK:         %[[SEED:.*]] = prim.random_seed : !strata.tensor<[], i64>
// CHECK-NEXT:    %[[U:.*]] = prim.philox_uniform %[[SEED]] {shape = [4 : i64, "s0"], offset = 0 : i64} : (!strata.tensor<[], i64>) -> !strata.tensor<[4, "s0"], f32>
// CHECK-NEXT:    %[[P:.*]] = prim.full {shape = [4 : i64, "s0"], value = 2.500000e-01 : f64, dtype = "f32"}
// CHECK-NEXT:    %[[KEEP:.*]] = prim.gt %[[U]], %[[P]]
// CHECK:         prim.mul %x
// CHECK:         value = 1.3333333333333333 : f64
// CHECK:         func.return %{{.*}}, %[[KEEP]]
// With fallback_random the op stays aten, to run as eager's kernel.
// EAGER:         aten.native_dropout.default %x
// EAGER-NOT:     prim.random_seed
func.func @graph(%x: !strata.tensor<[4, "s0"], f32>) -> (!strata.tensor<[4, "s0"], f32>, !strata.tensor<[4, "s0"], i1>) {
  %y, %m = aten.native_dropout.default %x {p = 2.500000e-01 : f64, train = true} : (!strata.tensor<[4, "s0"], f32>) -> (!strata.tensor<[4, "s0"], f32>, !strata.tensor<[4, "s0"], i1>)
  func.return %y, %m : !strata.tensor<[4, "s0"], f32>, !strata.tensor<[4, "s0"], i1>
}
