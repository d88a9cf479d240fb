// RUN: not strata-opt %s 2>&1 | filecheck %s

// A property of the wrong kind (a list where the op takes an i64 array) is an error at
// the op, not a traceback from inside the parser.
// CHECK:      malformed-property.mlir:9:3
// CHECK:      the op here does not verify: [1 : i64] should be of base attribute array
// CHECK-NOT:  Traceback
func.func @graph(%b: !strata.tensor<[48], bf16>) -> !strata.tensor<[64, 48], bf16> {
  %bb = prim.broadcast_in_dim %b {shape = [64, 48], broadcast_dimensions = [1]} : (!strata.tensor<[48], bf16>) -> !strata.tensor<[64, 48], bf16>
  func.return %bb : !strata.tensor<[64, 48], bf16>
}
