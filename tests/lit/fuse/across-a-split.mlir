// RUN: strata-opt %s -p fuse --check-values seed=5 2>&1 | filecheck %s

// The other way round, left alone: a [2, 3, 8] value, realized because it is read
// twice, viewed as [6, 8]. Its kernel runs over [2, 3, 8]; the consumer would read it
// at [floor((3·x0 + x1)/3), Mod(3·x0 + x1, 3), x2], which the planner does not prove
// equal to [x0, x1, x2], so it starts a kernel of its own and reads a stored copy.
// (In bf16: an f32 exp its reader would compute itself, shared_values.py; a
// bf16 one is stored rounded, so where it is computed would change its bits.)
// CHECK:       strata-opt: values agree on inputs seed=5
// CHECK:       kernel.func @k0 attributes {pointwise = [2 : i64, 3 : i64, 8 : i64], reduction = []
// CHECK:         prim.exp
// CHECK:         kernel.store
// CHECK:       kernel.func @k1 attributes {pointwise = [6 : i64, 8 : i64], reduction = []
// CHECK:         prim.sin
func.func @graph(%x: !strata.tensor<[2, 3, 8], bf16>) -> !strata.tensor<[6, 8], bf16> {
  %e = prim.exp %x : (!strata.tensor<[2, 3, 8], bf16>) -> !strata.tensor<[2, 3, 8], bf16>
  %v = prim.reshape %e {shape = [6 : i64, 8 : i64]} : (!strata.tensor<[2, 3, 8], bf16>) -> !strata.tensor<[6, 8], bf16>
  %s = prim.sin %v : (!strata.tensor<[6, 8], bf16>) -> !strata.tensor<[6, 8], bf16>
  %r = prim.add %v, %s : (!strata.tensor<[6, 8], bf16>, !strata.tensor<[6, 8], bf16>) -> !strata.tensor<[6, 8], bf16>
  func.return %r : !strata.tensor<[6, 8], bf16>
}
