// RUN: strata-opt %s -p matvec-to-reduction | filecheck %s

// Without the option, the graph's own device decides: a CUDA graph's f32 product of one
// row (TF32 off) becomes the f32 sum, no conversions; each new op keeps the aten op it
// came from.
// CHECK-LABEL: func.func @graph
// CHECK-NEXT:    %[[ROW:.*]] = prim.broadcast_in_dim %x {strata.source = "aten.mm.default @ model.py:7", shape = [1 : i64, 8 : i64, 4 : i64]
// CHECK-NEXT:    %[[COLS:.*]] = prim.broadcast_in_dim %w {strata.source = "aten.mm.default @ model.py:7", shape = [1 : i64, 8 : i64, 4 : i64]
// CHECK-NEXT:    %[[P:.*]] = prim.mul %[[ROW]], %[[COLS]] {strata.source = "aten.mm.default @ model.py:7"}
// CHECK-NEXT:    %[[S:.*]] = prim.sum %[[P]] {strata.source = "aten.mm.default @ model.py:7", dims = array<i64: 1>}
// CHECK-NEXT:    func.return %[[S]]
func.func @graph(%x: !strata.tensor<[1, 8], f32>, %w: !strata.tensor<[8, 4], f32>) -> !strata.tensor<[1, 4], f32> attributes {strata.device = "cuda"} {
  %y = prim.mm %x, %w {strata.source = "aten.mm.default @ model.py:7"} : (!strata.tensor<[1, 8], f32>, !strata.tensor<[8, 4], f32>) -> !strata.tensor<[1, 4], f32>
  func.return %y : !strata.tensor<[1, 4], f32>
}
