// RUN: %python -X importtime -m strata.opt %s -p canonicalize 2>&1 | filecheck %s

// strata-opt imports torch only where the IR or a pass needs it: strata's dialects
// and passes load on first use, so IR of xDSL's dialects alone runs without torch.
// CHECK-NOT: {{[|] +torch$}}
// CHECK:     func.func @f(%a: i32) -> i32 {
// CHECK-NEXT:  func.return %a : i32
func.func @f(%a: i32) -> i32 {
  %c = arith.constant 0 : i32
  %b = arith.addi %a, %c : i32
  func.return %b : i32
}
