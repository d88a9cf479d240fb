// RUN: strata-opt %s -p decompose | filecheck %s

// Each random op draws its own seed. bf16 uniforms are kept below 1 after rounding;
// randn converts the f32 normals; bernoulli(x, p) is uniform < p in x's dtype.
// CHECK-LABEL: func.func @graph
// CHECK-NOT:     aten.
// CHECK:         %[[S0:.*]] = prim.random_seed
// CHECK-NEXT:    %[[U:.*]] = prim.philox_uniform %[[S0]] {shape = [4 : i64, 8 : i64], offset = 0 : i64}
// CHECK-NEXT:    %[[B:.*]] = prim.convert_element_type %[[U]] {dtype = "bf16"}
// CHECK-NEXT:    %[[LARGEST:.*]] = prim.full {shape = [4 : i64, 8 : i64], value = 0.99609375 : f64, dtype = "bf16"}
// CHECK-NEXT:    %[[R:.*]] = prim.minimum %[[B]], %[[LARGEST]]
// CHECK-NEXT:    %[[S1:.*]] = prim.random_seed
// CHECK-NEXT:    %[[N:.*]] = prim.philox_normal %[[S1]] {shape = [4 : i64, 8 : i64], offset = 0 : i64}
// CHECK-NEXT:    %[[S2:.*]] = prim.random_seed
// CHECK-NEXT:    %[[V:.*]] = prim.philox_uniform %[[S2]]
// CHECK-NEXT:    %[[P:.*]] = prim.full {shape = [4 : i64, 8 : i64], value = 2.500000e-01 : f64, dtype = "f32"}
// CHECK-NEXT:    %[[LT:.*]] = prim.lt %[[V]], %[[P]]
// CHECK-NEXT:    %[[BERN:.*]] = prim.convert_element_type %[[LT]] {dtype = "f32"}
// CHECK-NEXT:    func.return %[[R]], %[[N]], %[[BERN]]
func.func @graph(%x: !strata.tensor<[4, 8], f32>) -> (!strata.tensor<[4, 8], bf16>, !strata.tensor<[4, 8], f32>, !strata.tensor<[4, 8], f32>) {
  %r = aten.rand.default {size = [4 : i64, 8 : i64], dtype = "bf16", device = "cpu", pin_memory = false} : () -> !strata.tensor<[4, 8], bf16>
  %n = aten.call %x {overload = "aten::randn_like", arguments = {pin_memory = false}} : (!strata.tensor<[4, 8], f32>) -> !strata.tensor<[4, 8], f32>
  %b = aten.call %x {overload = "aten::bernoulli.p", arguments = {p = 2.500000e-01 : f64}} : (!strata.tensor<[4, 8], f32>) -> !strata.tensor<[4, 8], f32>
  func.return %r, %n, %b : !strata.tensor<[4, 8], bf16>, !strata.tensor<[4, 8], f32>, !strata.tensor<[4, 8], f32>
}
