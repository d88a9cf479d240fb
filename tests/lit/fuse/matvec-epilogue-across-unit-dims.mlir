// RUN: strata-opt %s -p matvec-to-reduction,fuse --check-values seed=3 2>&1 | filecheck %s

// A decode step's SwiGLU as nn.Linear traces it on a [1, 1, d] input: each product's
// [1, 96] sums are viewed as [1, 1, 96] before silu(a) · b reads them. The two shapes
// differ only in a dim of size 1, so the epilogue still runs in the products' kernel
// (at the sums' own index), which stores the bf16 row; no kernel of its own runs it.
// CHECK:       strata-opt: values agree on inputs seed=3
// CHECK:       kernel.func @k0 attributes {pointwise = [1 : i64, 96 : i64], reduction = [64 : i64]
// CHECK-COUNT-2: kernel.reduce "sum"
// CHECK:         prim.sigmoid
// CHECK:         kernel.store {{.*}} : bf16, !kernel.buffer<bf16>
// CHECK:       kernel.func @k1 attributes {pointwise = [1 : i64, 64 : i64], reduction = [96 : i64]
// CHECK-NOT:     prim.sigmoid
// CHECK:       kernel.program @graph
// CHECK-COUNT-2: kernel.launch
// CHECK-NOT:     kernel.launch
func.func @graph(%x: !strata.tensor<[1, 1, 64], bf16>, %w1: !strata.tensor<[64, 96], bf16>, %w3: !strata.tensor<[64, 96], bf16>, %w2: !strata.tensor<[96, 64], bf16>) -> !strata.tensor<[1, 1, 64], bf16> attributes {strata.device = "cuda"} {
  %x2 = prim.reshape %x {shape = [1 : i64, 64 : i64]} : (!strata.tensor<[1, 1, 64], bf16>) -> !strata.tensor<[1, 64], bf16>
  %a2 = prim.mm %x2, %w1 : (!strata.tensor<[1, 64], bf16>, !strata.tensor<[64, 96], bf16>) -> !strata.tensor<[1, 96], bf16>
  %a = prim.reshape %a2 {shape = [1 : i64, 1 : i64, 96 : i64]} : (!strata.tensor<[1, 96], bf16>) -> !strata.tensor<[1, 1, 96], bf16>
  %b2 = prim.mm %x2, %w3 : (!strata.tensor<[1, 64], bf16>, !strata.tensor<[64, 96], bf16>) -> !strata.tensor<[1, 96], bf16>
  %b = prim.reshape %b2 {shape = [1 : i64, 1 : i64, 96 : i64]} : (!strata.tensor<[1, 96], bf16>) -> !strata.tensor<[1, 1, 96], bf16>
  %s = prim.sigmoid %a : (!strata.tensor<[1, 1, 96], bf16>) -> !strata.tensor<[1, 1, 96], bf16>
  %silu = prim.mul %a, %s : (!strata.tensor<[1, 1, 96], bf16>, !strata.tensor<[1, 1, 96], bf16>) -> !strata.tensor<[1, 1, 96], bf16>
  %h = prim.mul %silu, %b : (!strata.tensor<[1, 1, 96], bf16>, !strata.tensor<[1, 1, 96], bf16>) -> !strata.tensor<[1, 1, 96], bf16>
  %h2 = prim.reshape %h {shape = [1 : i64, 96 : i64]} : (!strata.tensor<[1, 1, 96], bf16>) -> !strata.tensor<[1, 96], bf16>
  %y2 = prim.mm %h2, %w2 : (!strata.tensor<[1, 96], bf16>, !strata.tensor<[96, 64], bf16>) -> !strata.tensor<[1, 64], bf16>
  %y = prim.reshape %y2 {shape = [1 : i64, 1 : i64, 64 : i64]} : (!strata.tensor<[1, 64], bf16>) -> !strata.tensor<[1, 1, 64], bf16>
  func.return %y : !strata.tensor<[1, 1, 64], bf16>
}
