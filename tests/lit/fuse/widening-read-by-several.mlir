// RUN: strata-opt %s -p fuse --check-values seed=1 2>&1 | filecheck %s

// A conversion read by several elementwise consumers is computed by each where it
// reads it, if reading its source again moves no more bytes: %w, a bf16 → f32
// widening read by two kernels (one of them reads it transposed), is never stored;
// each kernel loads %x. %n, an f32 → bf16 rounding of %y read four times, is stored
// once: four reads of four-byte elements would move more than one kernel writing
// two-byte ones that the others read back.
// CHECK:       strata-opt: values agree on inputs seed=1
// CHECK:       kernel.func @k0
// CHECK:         kernel.load %{{.*}}["8*x0 + x1"] : !kernel.buffer<bf16> -> bf16
// CHECK:         kernel.store {{.*}} : f32, !kernel.buffer<f32>
// CHECK:         kernel.load %{{.*}}["8*x0 + x1"] : !kernel.buffer<f32> -> f32
// CHECK-COUNT-2: kernel.store {{.*}} : bf16, !kernel.buffer<bf16>
// CHECK:       kernel.func @k1
// CHECK-NOT:     !kernel.buffer<f32> -> f32
// CHECK-COUNT-2: kernel.load %{{.*}}["x0 + 8*x1"] : !kernel.buffer<bf16> -> bf16
// CHECK-NOT:     !kernel.buffer<f32> -> f32
// CHECK:       kernel.program @graph
// CHECK-COUNT-2: kernel.launch
func.func @graph(%x: !strata.tensor<[4, 8], bf16>, %y: !strata.tensor<[4, 8], f32>) -> (!strata.tensor<[4, 8], f32>, !strata.tensor<[8, 4], f32>, !strata.tensor<[4, 8], bf16>, !strata.tensor<[8, 4], bf16>) {
  %w = prim.convert_element_type %x {dtype = "f32"} : (!strata.tensor<[4, 8], bf16>) -> !strata.tensor<[4, 8], f32>
  %a = prim.sin %w : (!strata.tensor<[4, 8], f32>) -> !strata.tensor<[4, 8], f32>
  %wt = prim.permute %w {dims = array<i64: 1, 0>} : (!strata.tensor<[4, 8], f32>) -> !strata.tensor<[8, 4], f32>
  %b = prim.exp %wt : (!strata.tensor<[8, 4], f32>) -> !strata.tensor<[8, 4], f32>
  %n = prim.convert_element_type %y {dtype = "bf16"} : (!strata.tensor<[4, 8], f32>) -> !strata.tensor<[4, 8], bf16>
  %n2 = prim.mul %n, %n : (!strata.tensor<[4, 8], bf16>, !strata.tensor<[4, 8], bf16>) -> !strata.tensor<[4, 8], bf16>
  %nt = prim.permute %n {dims = array<i64: 1, 0>} : (!strata.tensor<[4, 8], bf16>) -> !strata.tensor<[8, 4], bf16>
  %m = prim.mul %nt, %nt : (!strata.tensor<[8, 4], bf16>, !strata.tensor<[8, 4], bf16>) -> !strata.tensor<[8, 4], bf16>
  func.return %a, %b, %n2, %m : !strata.tensor<[4, 8], f32>, !strata.tensor<[8, 4], f32>, !strata.tensor<[4, 8], bf16>, !strata.tensor<[8, 4], bf16>
}
