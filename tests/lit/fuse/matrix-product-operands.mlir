// RUN: strata-opt %s -p matmul-to-dot,fuse | filecheck %s
// RUN: strata-opt %s -p 'matmul-to-dot{epilogue_fusion=false},fuse' | filecheck %s --check-prefix=ALONE

// Autocast's casts of f32 operands to bf16 run in kernels of their own (read in f32
// inside the template, each element would be converted once per tile of the other
// side); the first product takes its tanh as an epilogue; the second reads the first's
// bf16 result through a transpose-free view, as it is.
// CHECK:       kernel.func @k0 attributes {pointwise = [64 : i64, 32 : i64], reduction = []
// CHECK:       kernel.func @k1 attributes {pointwise = [48 : i64, 32 : i64], reduction = []
// CHECK:       kernel.func @k2 attributes {pointwise = [64 : i64, 48 : i64], reduction = [32 : i64]
// CHECK:         kernel.reduce "sum" {{.*}}strata.dot = "ieee"
// CHECK:         prim.tanh
// CHECK:       kernel.func @k3 attributes {pointwise = [64 : i64, 32 : i64], reduction = [48 : i64]
// CHECK:         kernel.load %{{.*}}["r0 + 48*x0"] : !kernel.buffer<bf16>
// CHECK:       kernel.program @graph
// CHECK-COUNT-4: kernel.launch

// With epilogue_fusion off, the tanh is a kernel of its own.
// ALONE:       kernel.func @k2 attributes {pointwise = [64 : i64, 48 : i64], reduction = [32 : i64]
// ALONE-NOT:     prim.tanh
// ALONE:       kernel.func @k3 attributes {pointwise = [64 : i64, 48 : i64], reduction = []
// ALONE:         prim.tanh
func.func @graph(%x: !strata.tensor<[64, 32], f32>, %w: !strata.tensor<[48, 32], f32>, %w2: !strata.tensor<[32, 48], bf16>) -> !strata.tensor<[64, 32], bf16> attributes {strata.device = "cuda"} {
  %xb = prim.convert_element_type %x {dtype = "bf16"} : (!strata.tensor<[64, 32], f32>) -> !strata.tensor<[64, 32], bf16>
  %wb = prim.convert_element_type %w {dtype = "bf16"} : (!strata.tensor<[48, 32], f32>) -> !strata.tensor<[48, 32], bf16>
  %wt = prim.permute %wb {dims = array<i64: 1, 0>} : (!strata.tensor<[48, 32], bf16>) -> !strata.tensor<[32, 48], bf16>
  %h = prim.mm %xb, %wt : (!strata.tensor<[64, 32], bf16>, !strata.tensor<[32, 48], bf16>) -> !strata.tensor<[64, 48], bf16>
  %g = prim.tanh %h : (!strata.tensor<[64, 48], bf16>) -> !strata.tensor<[64, 48], bf16>
  %w2t = prim.permute %w2 {dims = array<i64: 1, 0>} : (!strata.tensor<[32, 48], bf16>) -> !strata.tensor<[48, 32], bf16>
  %y = prim.mm %g, %w2t : (!strata.tensor<[64, 48], bf16>, !strata.tensor<[48, 32], bf16>) -> !strata.tensor<[64, 32], bf16>
  func.return %y : !strata.tensor<[64, 32], bf16>
}
