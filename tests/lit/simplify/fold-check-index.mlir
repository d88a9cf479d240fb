// RUN: strata-opt %s -p simplify | filecheck %s

// A check of an index that cannot be out of range is the index itself: an iota
// within the dim, a clamp into it, a remainder by its size. A user's index, or one
// that may be negative, keeps its check.
// CHECK-LABEL: func.func @graph
// CHECK-NEXT:    %[[IOTA:.*]] = prim.iota
// CHECK-NEXT:    %[[N:.*]] = prim.full
// CHECK-NOT:     prim.check_index %[[IOTA]]
// CHECK:         %[[LOW:.*]] = prim.maximum %i
// CHECK-NEXT:    %[[CLAMPED:.*]] = prim.minimum %[[LOW]]
// CHECK-NOT:     prim.check_index %[[CLAMPED]]
// CHECK:         %[[R:.*]] = prim.remainder %i
// CHECK-NOT:     prim.check_index %[[R]]
// CHECK:         %[[U:.*]] = prim.check_index %i, %[[N]]
// CHECK:         %[[M:.*]] = prim.sub %[[IOTA]]
// CHECK-NEXT:    %[[CM:.*]] = prim.check_index %[[M]], %[[N]]
// CHECK-NEXT:    func.return %[[IOTA]], %[[CLAMPED]], %[[R]], %[[U]], %[[CM]]
func.func @graph(%i: !strata.tensor<[10], i64>) -> (!strata.tensor<[10], i64>, !strata.tensor<[10], i64>, !strata.tensor<[10], i64>, !strata.tensor<[10], i64>, !strata.tensor<[10], i64>) {
  %iota = prim.iota {length = 10 : i64, start = 0 : i64, step = 1 : i64, dtype = "i64"} : !strata.tensor<[10], i64>
  %n = prim.full {shape = [10 : i64], value = 10 : i64, dtype = "i64"} : !strata.tensor<[10], i64>
  %zero = prim.full {shape = [10 : i64], value = 0 : i64, dtype = "i64"} : !strata.tensor<[10], i64>
  %nine = prim.full {shape = [10 : i64], value = 9 : i64, dtype = "i64"} : !strata.tensor<[10], i64>
  %a = prim.check_index %iota, %n {dim = 0 : i64, wraps = 0 : i64, indexing_op = "aten.index.Tensor"} : (!strata.tensor<[10], i64>, !strata.tensor<[10], i64>) -> !strata.tensor<[10], i64>
  %low = prim.maximum %i, %zero : (!strata.tensor<[10], i64>, !strata.tensor<[10], i64>) -> !strata.tensor<[10], i64>
  %clamped = prim.minimum %low, %nine : (!strata.tensor<[10], i64>, !strata.tensor<[10], i64>) -> !strata.tensor<[10], i64>
  %b = prim.check_index %clamped, %n {dim = 0 : i64, wraps = 1 : i64, indexing_op = "aten.index.Tensor"} : (!strata.tensor<[10], i64>, !strata.tensor<[10], i64>) -> !strata.tensor<[10], i64>
  %r = prim.remainder %i, %n : (!strata.tensor<[10], i64>, !strata.tensor<[10], i64>) -> !strata.tensor<[10], i64>
  %c = prim.check_index %r, %n {dim = 0 : i64, wraps = 0 : i64, indexing_op = "aten.gather.default"} : (!strata.tensor<[10], i64>, !strata.tensor<[10], i64>) -> !strata.tensor<[10], i64>
  %d = prim.check_index %i, %n {dim = 0 : i64, wraps = 1 : i64, indexing_op = "aten.index.Tensor"} : (!strata.tensor<[10], i64>, !strata.tensor<[10], i64>) -> !strata.tensor<[10], i64>
  %m = prim.sub %iota, %nine : (!strata.tensor<[10], i64>, !strata.tensor<[10], i64>) -> !strata.tensor<[10], i64>
  %e = prim.check_index %m, %n {dim = 0 : i64, wraps = 1 : i64, indexing_op = "aten.index.Tensor"} : (!strata.tensor<[10], i64>, !strata.tensor<[10], i64>) -> !strata.tensor<[10], i64>
  func.return %a, %b, %c, %d, %e : !strata.tensor<[10], i64>, !strata.tensor<[10], i64>, !strata.tensor<[10], i64>, !strata.tensor<[10], i64>, !strata.tensor<[10], i64>
}
