// RUN: strata-opt %s -p fuse --check-values seed=2 2>&1 | filecheck %s

// A rotary embedding after a product of one row: the product's f32 sum is stored, its
// rounding to bf16 (%q) is computed where it is read, and %qf, the program's .float()
// of %q read by four products at two positions, is computed by each of them too: two
// conversions of the stored sum, where the rule looks through conversions as through
// views. Stored, %qf cost a kernel of its own between the product and the rotation
// (two a layer in a decode step: q's and k's).
// CHECK:       strata-opt: values agree on inputs seed=2
// CHECK:       kernel.func @k0
// CHECK:         kernel.reduce
// CHECK:         kernel.store {{.*}} : f32, !kernel.buffer<f32>
// CHECK:       kernel.func @k1
// CHECK-COUNT-2: kernel.load %{{.*}} : !kernel.buffer<f32> -> f32
// CHECK-COUNT-2: kernel.store {{.*}} : f32, !kernel.buffer<f32>
// CHECK:       kernel.program @graph
// CHECK-COUNT-2: kernel.launch
// CHECK-NOT:     kernel.launch
func.func @graph(%x: !strata.tensor<[1, 16], bf16>, %w: !strata.tensor<[16, 8], bf16>, %cos: !strata.tensor<[4], bf16>, %sin: !strata.tensor<[4], bf16>) -> (!strata.tensor<[4], f32>, !strata.tensor<[4], f32>) {
  %x32 = prim.convert_element_type %x {dtype = "f32"} : (!strata.tensor<[1, 16], bf16>) -> !strata.tensor<[1, 16], f32>
  %w32 = prim.convert_element_type %w {dtype = "f32"} : (!strata.tensor<[16, 8], bf16>) -> !strata.tensor<[16, 8], f32>
  %xt = prim.permute %x32 {dims = array<i64: 1, 0>} : (!strata.tensor<[1, 16], f32>) -> !strata.tensor<[16, 1], f32>
  %xb = prim.broadcast_in_dim %xt {shape = [16 : i64, 8 : i64], broadcast_dimensions = array<i64: 0, 1>} : (!strata.tensor<[16, 1], f32>) -> !strata.tensor<[16, 8], f32>
  %p = prim.mul %xb, %w32 : (!strata.tensor<[16, 8], f32>, !strata.tensor<[16, 8], f32>) -> !strata.tensor<[16, 8], f32>
  %s = prim.sum %p {dims = array<i64: 0>} : (!strata.tensor<[16, 8], f32>) -> !strata.tensor<[8], f32>
  %q = prim.convert_element_type %s {dtype = "bf16"} : (!strata.tensor<[8], f32>) -> !strata.tensor<[8], bf16>
  %qv = prim.reshape %q {shape = [4 : i64, 2 : i64]} : (!strata.tensor<[8], bf16>) -> !strata.tensor<[4, 2], bf16>
  %qf = prim.convert_element_type %qv {dtype = "f32"} : (!strata.tensor<[4, 2], bf16>) -> !strata.tensor<[4, 2], f32>
  %a = prim.slice %qf {start = [0 : i64, 0 : i64], limit = [4 : i64, 1 : i64], step = array<i64: 1, 1>} : (!strata.tensor<[4, 2], f32>) -> !strata.tensor<[4, 1], f32>
  %b = prim.slice %qf {start = [0 : i64, 1 : i64], limit = [4 : i64, 2 : i64], step = array<i64: 1, 1>} : (!strata.tensor<[4, 2], f32>) -> !strata.tensor<[4, 1], f32>
  %a1 = prim.reshape %a {shape = [4 : i64]} : (!strata.tensor<[4, 1], f32>) -> !strata.tensor<[4], f32>
  %b1 = prim.reshape %b {shape = [4 : i64]} : (!strata.tensor<[4, 1], f32>) -> !strata.tensor<[4], f32>
  %c = prim.convert_element_type %cos {dtype = "f32"} : (!strata.tensor<[4], bf16>) -> !strata.tensor<[4], f32>
  %n = prim.convert_element_type %sin {dtype = "f32"} : (!strata.tensor<[4], bf16>) -> !strata.tensor<[4], f32>
  %ac = prim.mul %a1, %c : (!strata.tensor<[4], f32>, !strata.tensor<[4], f32>) -> !strata.tensor<[4], f32>
  %bn = prim.mul %b1, %n : (!strata.tensor<[4], f32>, !strata.tensor<[4], f32>) -> !strata.tensor<[4], f32>
  %bc = prim.mul %b1, %c : (!strata.tensor<[4], f32>, !strata.tensor<[4], f32>) -> !strata.tensor<[4], f32>
  %an = prim.mul %a1, %n : (!strata.tensor<[4], f32>, !strata.tensor<[4], f32>) -> !strata.tensor<[4], f32>
  %r0 = prim.sub %ac, %bn : (!strata.tensor<[4], f32>, !strata.tensor<[4], f32>) -> !strata.tensor<[4], f32>
  %r1 = prim.add %bc, %an : (!strata.tensor<[4], f32>, !strata.tensor<[4], f32>) -> !strata.tensor<[4], f32>
  func.return %r0, %r1 : !strata.tensor<[4], f32>, !strata.tensor<[4], f32>
}
