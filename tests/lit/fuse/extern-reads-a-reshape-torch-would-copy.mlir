// RUN: strata-opt %s -p fuse | filecheck %s

// A product reads exp(x) permuted and reshaped to [8, 64]: no strides express that
// reshape of a permuted tensor, so torch would copy it before the product on every
// call. The kernel that computes exp writes the reshaped value itself, and the
// product reads it as it is. A reshape that is a view of a contiguous tensor (tanh's
// [4, 8, 16] as [32, 16]) stays a view of the kernel's output.
// CHECK:       kernel.func @k0 attributes {pointwise = [8 : i64, 64 : i64]
// CHECK-SAME:    sources = ["prim.exp", "prim.permute", "prim.reshape"]
// CHECK:         kernel.load %{{.*}}["16*x0 + Mod(x1, 16) + 128*floor(x1/16)"]
// CHECK:         kernel.store %{{.*}}, %{{.*}}["64*x0 + x1"]
// CHECK:       kernel.program @graph
// CHECK:         %[[K:.*]] = kernel.launch @k0(%{{.*}}) : (!strata.tensor<[4, 8, 16], f32>) -> !strata.tensor<[8, 64], f32>
// CHECK-NEXT:    prim.mm %[[K]], %{{.*}} : (!strata.tensor<[8, 64], f32>
// CHECK-NEXT:    %[[T:.*]] = kernel.launch @k1
// CHECK-NEXT:    %[[S:.*]] = prim.reshape %[[T]] {shape = [32 : i64, 16 : i64]}
// CHECK-NEXT:    prim.mm %[[S]]
func.func @graph(%x: !strata.tensor<[4, 8, 16], f32>, %w: !strata.tensor<[64, 5], f32>, %v: !strata.tensor<[16, 5], f32>) -> (!strata.tensor<[8, 5], f32>, !strata.tensor<[32, 5], f32>) {
  %e = prim.exp %x : (!strata.tensor<[4, 8, 16], f32>) -> !strata.tensor<[4, 8, 16], f32>
  %p = prim.permute %e {dims = array<i64: 1, 0, 2>} : (!strata.tensor<[4, 8, 16], f32>) -> !strata.tensor<[8, 4, 16], f32>
  %r = prim.reshape %p {shape = [8 : i64, 64 : i64]} : (!strata.tensor<[8, 4, 16], f32>) -> !strata.tensor<[8, 64], f32>
  %m = prim.mm %r, %w : (!strata.tensor<[8, 64], f32>, !strata.tensor<[64, 5], f32>) -> !strata.tensor<[8, 5], f32>
  %t = prim.tanh %x : (!strata.tensor<[4, 8, 16], f32>) -> !strata.tensor<[4, 8, 16], f32>
  %s = prim.reshape %t {shape = [32 : i64, 16 : i64]} : (!strata.tensor<[4, 8, 16], f32>) -> !strata.tensor<[32, 16], f32>
  %n = prim.mm %s, %v : (!strata.tensor<[32, 16], f32>, !strata.tensor<[16, 5], f32>) -> !strata.tensor<[32, 5], f32>
  func.return %m, %n : !strata.tensor<[8, 5], f32>, !strata.tensor<[32, 5], f32>
}
