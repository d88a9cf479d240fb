// RUN: strata-opt %s -p matvec-to-reduction,fuse | filecheck %s

// A decode step's SwiGLU: the second linear layer reads silu(a) · b, one row that each
// of its 64 outputs reads in full. The row is computed once, in the kernel of the two
// products it comes from (their epilogue), and stored in bf16; the second product's
// sum loads it, rather than computing the silu once per output.
// CHECK:       kernel.func @k0 attributes {pointwise = [1 : i64, 96 : i64], reduction = [64 : i64]
// CHECK-COUNT-2: kernel.reduce "sum"
// CHECK:         prim.sigmoid
// CHECK:         kernel.store {{.*}} : bf16, !kernel.buffer<bf16>
// CHECK:       kernel.func @k1 attributes {pointwise = [1 : i64, 64 : i64], reduction = [96 : i64]
// CHECK-NOT:     prim.sigmoid
// CHECK:         kernel.load %{{.*}} : !kernel.buffer<bf16>
// CHECK:         kernel.reduce "sum"
// CHECK:       kernel.program @graph
// CHECK-COUNT-2: kernel.launch
func.func @graph(%x: !strata.tensor<[1, 64], bf16>, %w1: !strata.tensor<[64, 96], bf16>, %w3: !strata.tensor<[64, 96], bf16>, %w2: !strata.tensor<[96, 64], bf16>) -> !strata.tensor<[1, 64], bf16> attributes {strata.device = "cuda"} {
  %a = prim.mm %x, %w1 : (!strata.tensor<[1, 64], bf16>, !strata.tensor<[64, 96], bf16>) -> !strata.tensor<[1, 96], bf16>
  %b = prim.mm %x, %w3 : (!strata.tensor<[1, 64], bf16>, !strata.tensor<[64, 96], bf16>) -> !strata.tensor<[1, 96], bf16>
  %s = prim.sigmoid %a : (!strata.tensor<[1, 96], bf16>) -> !strata.tensor<[1, 96], bf16>
  %silu = prim.mul %a, %s : (!strata.tensor<[1, 96], bf16>, !strata.tensor<[1, 96], bf16>) -> !strata.tensor<[1, 96], bf16>
  %h = prim.mul %silu, %b : (!strata.tensor<[1, 96], bf16>, !strata.tensor<[1, 96], bf16>) -> !strata.tensor<[1, 96], bf16>
  %y = prim.mm %h, %w2 : (!strata.tensor<[1, 96], bf16>, !strata.tensor<[96, 64], bf16>) -> !strata.tensor<[1, 64], bf16>
  func.return %y : !strata.tensor<[1, 64], bf16>
}
