// RUN: strata-opt %s -p matmul-to-dot | filecheck %s

// A linear layer of a [2, 8, 32] input: view, product, view back. The product is summed
// in the viewed shape [2, 8, 48] straight from the 3-d input, so the residual add that
// reads the view can join the product's kernel.
// CHECK-LABEL: func.func @graph
// CHECK:         %[[A:.*]] = prim.convert_element_type %x {{.*}} -> !strata.tensor<[2, 8, 32], f32>
// CHECK:         prim.broadcast_in_dim %[[A]] {shape = [2 : i64, 8 : i64, 32 : i64, 48 : i64], broadcast_dimensions = array<i64: 0, 1, 2>}
// CHECK:         %[[S:.*]] = prim.sum %{{.*}} {strata.dot = "ieee", dims = array<i64: 2>} {{.*}} -> !strata.tensor<[2, 8, 48], f32>
// CHECK:         %[[T:.*]] = prim.add %[[S]], %{{.*}} -> !strata.tensor<[2, 8, 48], f32>
// CHECK-NEXT:    %y3 = prim.convert_element_type %[[T]] {{.*}}dtype = "bf16"
// CHECK-NEXT:    %z = prim.add %y3, %r
// CHECK-NOT:     prim.addmm
func.func @graph(%x: !strata.tensor<[2, 8, 32], bf16>, %w: !strata.tensor<[32, 48], bf16>, %b: !strata.tensor<[48], bf16>, %r: !strata.tensor<[2, 8, 48], bf16>) -> !strata.tensor<[2, 8, 48], bf16> attributes {strata.device = "cuda"} {
  %x2 = prim.reshape %x {shape = [16, 32]} : (!strata.tensor<[2, 8, 32], bf16>) -> !strata.tensor<[16, 32], bf16>
  %y = prim.addmm %b, %x2, %w : (!strata.tensor<[48], bf16>, !strata.tensor<[16, 32], bf16>, !strata.tensor<[32, 48], bf16>) -> !strata.tensor<[16, 48], bf16>
  %y3 = prim.reshape %y {shape = [2, 8, 48]} : (!strata.tensor<[16, 48], bf16>) -> !strata.tensor<[2, 8, 48], bf16>
  %z = prim.add %y3, %r : (!strata.tensor<[2, 8, 48], bf16>, !strata.tensor<[2, 8, 48], bf16>) -> !strata.tensor<[2, 8, 48], bf16>
  func.return %z : !strata.tensor<[2, 8, 48], bf16>
}
