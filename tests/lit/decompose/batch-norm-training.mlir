// RUN: strata-opt %s -p decompose | filecheck %s

// Batch norm in training: the batch's statistics per channel (dims 0, 2, 3), the
// normalized output, and the running statistics blended with momentum 0.1, the
// variance made unbiased (divided by n - 1 = 31).
// CHECK-LABEL: func.func @graph
// CHECK-NOT:     aten.
// CHECK:         %[[N:.*]] = prim.full {shape = [4 : i64], value = 3.200000e+01 : f64, dtype = "f32"}
// CHECK-NEXT:    %[[S:.*]] = prim.sum %x {dims = array<i64: 0, 2, 3>}
// CHECK-NEXT:    %[[MEAN:.*]] = prim.div %[[S]], %[[N]]
// CHECK:         %[[SQ:.*]] = prim.sum %{{.*}} {dims = array<i64: 0, 2, 3>}
// CHECK-NEXT:    %[[VAR:.*]] = prim.div %[[SQ]], %[[N]]
// CHECK:         prim.rsqrt
// CHECK-NEXT:    %[[ONE:.*]] = prim.full {shape = [4 : i64], value = 1.000000e+00 : f64, dtype = "f32"}
// CHECK-NEXT:    %[[NM1:.*]] = prim.sub %[[N]], %[[ONE]]
// CHECK-NEXT:    %[[UNB:.*]] = prim.div %[[SQ]], %[[NM1]]
// CHECK:         value = 1.000000e-01 : f64
// CHECK:         value = 9.000000e-01 : f64
// CHECK:         func.return
func.func @graph(%x: !strata.tensor<[2, 4, 4, 4], f32>, %w: !strata.tensor<[4], f32>, %b: !strata.tensor<[4], f32>, %rm: !strata.tensor<[4], f32>, %rv: !strata.tensor<[4], f32>) -> (!strata.tensor<[2, 4, 4, 4], f32>, !strata.tensor<[4], f32>, !strata.tensor<[4], f32>) {
  %y, %m, %r, %nm, %nv = aten.call %x, %w, %b, %rm, %rv {overload = "aten::_native_batch_norm_legit_functional", arguments = {training = true, momentum = 1.000000e-01 : f64, eps = 1.000000e-05 : f64}, segments = array<i64: 1, 1, 1, 1, 1>} : (!strata.tensor<[2, 4, 4, 4], f32>, !strata.tensor<[4], f32>, !strata.tensor<[4], f32>, !strata.tensor<[4], f32>, !strata.tensor<[4], f32>) -> (!strata.tensor<[2, 4, 4, 4], f32>, !strata.tensor<[4], f32>, !strata.tensor<[4], f32>, !strata.tensor<[4], f32>, !strata.tensor<[4], f32>)
  func.return %y, %nm, %nv : !strata.tensor<[2, 4, 4, 4], f32>, !strata.tensor<[4], f32>, !strata.tensor<[4], f32>
}
