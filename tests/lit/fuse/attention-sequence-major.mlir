// RUN: strata-opt %s -p fuse | filecheck %s

// On a GPU, an attention result that only kernels read stays as torch's fused attention
// kernels write it, [B, S, H, E] in memory (`strata.layout = "sequence_major"`), and the
// kernel reading it through the transpose back and the reshape to [B, S, H·E] reads it
// through those strides: here, in order (x2 = 16·h + e).
// CHECK:       kernel.func @k0
// CHECK:         kernel.load %{{.*}}["512*x0 + 64*x1 + Mod(x2, 16) + 16*floor(x2/16)"]
// CHECK:       kernel.program @graph
// CHECK:         prim.sdpa {{.*}}strata.layout = "sequence_major"
// CHECK-NEXT:    kernel.launch @k0
func.func @graph(%q: !strata.tensor<[2, 4, 8, 16], f32>, %k: !strata.tensor<[2, 4, 8, 16], f32>, %v: !strata.tensor<[2, 4, 8, 16], f32>) -> !strata.tensor<[2, 8, 64], f32> attributes {strata.device = "cuda"} {
  %o = prim.sdpa %q, %k, %v {is_causal = false} : (!strata.tensor<[2, 4, 8, 16], f32>, !strata.tensor<[2, 4, 8, 16], f32>, !strata.tensor<[2, 4, 8, 16], f32>) -> !strata.tensor<[2, 4, 8, 16], f32>
  %t = prim.permute %o {dims = array<i64: 0, 2, 1, 3>} : (!strata.tensor<[2, 4, 8, 16], f32>) -> !strata.tensor<[2, 8, 4, 16], f32>
  %r = prim.reshape %t {shape = [2 : i64, 8 : i64, 64 : i64]} : (!strata.tensor<[2, 8, 4, 16], f32>) -> !strata.tensor<[2, 8, 64], f32>
  %y = prim.tanh %r : (!strata.tensor<[2, 8, 64], f32>) -> !strata.tensor<[2, 8, 64], f32>
  func.return %y : !strata.tensor<[2, 8, 64], f32>
}
