// RUN: strata-opt %s -p matmul-to-dot | filecheck %s

// Autocast casts a linear layer's f32 input to bf16 after flattening it: the product
// reads the cast of the 3-d input instead ([2, 8, 32]), so that the cast, a kernel of
// its own, keeps the shape of the kernel that computes its input.
// CHECK-LABEL: func.func @graph
// CHECK:         %[[CAST:.*]] = prim.convert_element_type %x {dtype = "bf16"} {{.*}} -> !strata.tensor<[2, 8, 32], bf16>
// CHECK-NEXT:    %[[WIDE:.*]] = prim.convert_element_type %[[CAST]] {dtype = "f32"} {{.*}} -> !strata.tensor<[2, 8, 32], f32>
// CHECK:         prim.broadcast_in_dim %[[WIDE]] {shape = [2 : i64, 8 : i64, 32 : i64, 48 : i64]
// CHECK:         prim.sum {{.*}}strata.dot = "ieee"{{.*}} -> !strata.tensor<[2, 8, 48], f32>
func.func @graph(%x: !strata.tensor<[2, 8, 32], f32>, %w: !strata.tensor<[32, 48], bf16>) -> !strata.tensor<[2, 8, 48], bf16> attributes {strata.device = "cuda"} {
  %x2 = prim.reshape %x {shape = [16, 32]} : (!strata.tensor<[2, 8, 32], f32>) -> !strata.tensor<[16, 32], f32>
  %xb = prim.convert_element_type %x2 {dtype = "bf16"} : (!strata.tensor<[16, 32], f32>) -> !strata.tensor<[16, 32], bf16>
  %y = prim.mm %xb, %w : (!strata.tensor<[16, 32], bf16>, !strata.tensor<[32, 48], bf16>) -> !strata.tensor<[16, 48], bf16>
  %y3 = prim.reshape %y {shape = [2, 8, 48]} : (!strata.tensor<[16, 48], bf16>) -> !strata.tensor<[2, 8, 48], bf16>
  func.return %y3 : !strata.tensor<[2, 8, 48], bf16>
}
