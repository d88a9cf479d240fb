// RUN: strata-opt %s -p matmul-to-dot | filecheck %s
// RUN: strata-opt %s -p 'matmul-to-dot{epilogue_fusion=false}' | filecheck %s --check-prefix=ALONE

// A bf16 linear layer on a CUDA graph: the sum over k of f32 products, marked for the
// Triton template, its bias added in f32 and the result rounded once, as cuBLAS does.
// CHECK-LABEL: func.func @graph
// CHECK:         %[[A:.*]] = prim.convert_element_type %x {{.*}}dtype = "f32"
// CHECK-NEXT:    %[[B:.*]] = prim.convert_element_type %w {{.*}}dtype = "f32"
// CHECK-NEXT:    %[[WA:.*]] = prim.broadcast_in_dim %[[A]] {shape = [64 : i64, 32 : i64, 48 : i64], broadcast_dimensions = array<i64: 0, 1>}
// CHECK-NEXT:    %[[WB:.*]] = prim.broadcast_in_dim %[[B]] {shape = [64 : i64, 32 : i64, 48 : i64], broadcast_dimensions = array<i64: 1, 2>}
// CHECK-NEXT:    %[[P:.*]] = prim.mul %[[WA]], %[[WB]]
// CHECK-NEXT:    %[[S:.*]] = prim.sum %[[P]] {strata.dot = "ieee", dims = array<i64: 1>}
// CHECK-NEXT:    %[[BIAS:.*]] = prim.convert_element_type %b {{.*}}dtype = "f32"
// CHECK-NEXT:    %[[WIDE:.*]] = prim.broadcast_in_dim %[[BIAS]] {shape = [64 : i64, 48 : i64], broadcast_dimensions = array<i64: 1>}
// CHECK-NEXT:    %[[T:.*]] = prim.add %[[S]], %[[WIDE]]
// CHECK-NEXT:    %y = prim.convert_element_type %[[T]] {{.*}}dtype = "bf16"
// CHECK-NEXT:    %r = prim.tanh %y

// With epilogue_fusion off, the product's ops are marked to stay alone in their kernel.
// ALONE:         prim.sum {{.*}}strata.no_epilogue
// ALONE:         prim.add {{.*}}strata.no_epilogue
// ALONE:         %y = prim.convert_element_type {{.*}}strata.no_epilogue
// ALONE-NEXT:    %r = prim.tanh %y
func.func @graph(%x: !strata.tensor<[64, 32], bf16>, %w: !strata.tensor<[32, 48], bf16>, %b: !strata.tensor<[48], bf16>) -> !strata.tensor<[64, 48], bf16> attributes {strata.device = "cuda"} {
  %y = prim.addmm %b, %x, %w : (!strata.tensor<[48], bf16>, !strata.tensor<[64, 32], bf16>, !strata.tensor<[32, 48], bf16>) -> !strata.tensor<[64, 48], bf16>
  %r = prim.tanh %y : (!strata.tensor<[64, 48], bf16>) -> !strata.tensor<[64, 48], bf16>
  func.return %r : !strata.tensor<[64, 48], bf16>
}
