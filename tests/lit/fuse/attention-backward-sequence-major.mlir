// RUN: strata-opt %s -p fuse | filecheck %s

// On a GPU, the attention backward's dq, dk and dv, read only by kernels (in a GPT, the
// one that stacks them as [B, S, 3·H·E] for the product with the projection's weight),
// stay as the backward kernels write them, [B, S, H, E] in memory: the op asks for
// `strata.layout = "sequence_major"`, all three or none, and the kernel reads each
// through those strides (h at 8, s at 24). Made contiguous, each was a copy after the
// call (25 µs each, three a layer, for a GPT of d 1024 at 8k tokens a step).
// CHECK:       kernel.func @k0
// CHECK-COUNT-3: kernel.load %{{.*}}["120*x0 + 8*x1 + 24*x2 + x3"]
// CHECK:       kernel.program @graph
// CHECK:         prim.sdpa_backward {{.*}}strata.layout = "sequence_major"
// CHECK-NEXT:    kernel.launch @k0
func.func @graph(%g: !strata.tensor<[2, 3, 5, 8], bf16>, %q: !strata.tensor<[2, 3, 5, 8], bf16>, %k: !strata.tensor<[2, 3, 5, 8], bf16>, %v: !strata.tensor<[2, 3, 5, 8], bf16>, %o: !strata.tensor<[2, 3, 5, 8], bf16>, %lse: !strata.tensor<[2, 3, 5, 1], f32>) -> !strata.tensor<[2, 5, 24], bf16> attributes {strata.device = "cuda"} {
  %dq, %dk, %dv = prim.sdpa_backward %g, %q, %k, %v, %o, %lse {is_causal = true, backend = 3 : i64} : (!strata.tensor<[2, 3, 5, 8], bf16>, !strata.tensor<[2, 3, 5, 8], bf16>, !strata.tensor<[2, 3, 5, 8], bf16>, !strata.tensor<[2, 3, 5, 8], bf16>, !strata.tensor<[2, 3, 5, 8], bf16>, !strata.tensor<[2, 3, 5, 1], f32>) -> (!strata.tensor<[2, 3, 5, 8], bf16>, !strata.tensor<[2, 3, 5, 8], bf16>, !strata.tensor<[2, 3, 5, 8], bf16>)
  %s = prim.add %dq, %dk : (!strata.tensor<[2, 3, 5, 8], bf16>, !strata.tensor<[2, 3, 5, 8], bf16>) -> !strata.tensor<[2, 3, 5, 8], bf16>
  %s2 = prim.add %s, %dv : (!strata.tensor<[2, 3, 5, 8], bf16>, !strata.tensor<[2, 3, 5, 8], bf16>) -> !strata.tensor<[2, 3, 5, 8], bf16>
  %t = prim.permute %s2 {dims = array<i64: 0, 2, 1, 3>} : (!strata.tensor<[2, 3, 5, 8], bf16>) -> !strata.tensor<[2, 5, 3, 8], bf16>
  %r = prim.reshape %t {shape = [2 : i64, 5 : i64, 24 : i64]} : (!strata.tensor<[2, 5, 3, 8], bf16>) -> !strata.tensor<[2, 5, 24], bf16>
  func.return %r : !strata.tensor<[2, 5, 24], bf16>
}
