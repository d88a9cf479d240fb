// RUN: strata-opt %s -p 'matvec-to-reduction{device="cuda"}' | filecheck %s

// One row times a bf16 weight: a sum over k of f32 products, rounded once; the addmm's
// bias is added in f32 before that rounding. The sum runs over the middle dim of
// [1, k, n], so it has the product's shape (what reads it fuses with no reshape
// between). Two rows stay a library call.
// CHECK-LABEL: func.func @graph
// CHECK:         %[[A:.*]] = prim.convert_element_type %x {{.*}}dtype = "f32"
// CHECK-NEXT:    %[[B:.*]] = prim.convert_element_type %w {{.*}}dtype = "f32"
// CHECK-NEXT:    %[[ROW:.*]] = prim.broadcast_in_dim %[[A]] {shape = [1 : i64, 64 : i64, 32 : i64], broadcast_dimensions = array<i64: 0, 1>}
// CHECK-NEXT:    %[[COLS:.*]] = prim.broadcast_in_dim %[[B]] {shape = [1 : i64, 64 : i64, 32 : i64], broadcast_dimensions = array<i64: 1, 2>}
// CHECK-NEXT:    %[[P:.*]] = prim.mul %[[ROW]], %[[COLS]]
// CHECK-NEXT:    %[[S:.*]] = prim.sum %[[P]] {dims = array<i64: 1>} {{.*}} -> !strata.tensor<[1, 32], f32>
// CHECK-NEXT:    %y = prim.convert_element_type %[[S]] {{.*}}dtype = "bf16"
// CHECK:         prim.sum
// CHECK:         %[[BIAS:.*]] = prim.convert_element_type %bias {{.*}}dtype = "f32"
// CHECK-NEXT:    %[[WIDE:.*]] = prim.broadcast_in_dim %[[BIAS]] {shape = [1 : i64, 32 : i64], broadcast_dimensions = array<i64: 1>}
// CHECK-NEXT:    %[[T:.*]] = prim.add %{{.*}}, %[[WIDE]]
// CHECK-NEXT:    %z = prim.convert_element_type %[[T]] {{.*}}dtype = "bf16"
// CHECK-NEXT:    %two = prim.mm %x2, %w
// CHECK-NEXT:    func.return %y, %z, %two
func.func @graph(%x: !strata.tensor<[1, 64], bf16>, %w: !strata.tensor<[64, 32], bf16>, %bias: !strata.tensor<[32], bf16>, %x2: !strata.tensor<[2, 64], bf16>) -> (!strata.tensor<[1, 32], bf16>, !strata.tensor<[1, 32], bf16>, !strata.tensor<[2, 32], bf16>) {
  %y = prim.mm %x, %w : (!strata.tensor<[1, 64], bf16>, !strata.tensor<[64, 32], bf16>) -> !strata.tensor<[1, 32], bf16>
  %z = prim.addmm %bias, %x, %w : (!strata.tensor<[32], bf16>, !strata.tensor<[1, 64], bf16>, !strata.tensor<[64, 32], bf16>) -> !strata.tensor<[1, 32], bf16>
  %two = prim.mm %x2, %w : (!strata.tensor<[2, 64], bf16>, !strata.tensor<[64, 32], bf16>) -> !strata.tensor<[2, 32], bf16>
  func.return %y, %z, %two : !strata.tensor<[1, 32], bf16>, !strata.tensor<[1, 32], bf16>, !strata.tensor<[2, 32], bf16>
}
