// RUN: strata-opt %s -p matvec-to-reduction,fuse --check-values seed=3 2>&1 | filecheck %s
// RUN: strata-opt %s -p matvec-to-reduction,fuse --check-codegen triton 2>&1 | filecheck %s --check-prefix=TRITON

// A decode step's RMSNorm read by the gate and up products (both [1, 48]): the
// normalized row is not written by a kernel of its own. The products' kernel recomputes
// it where it reads it, from the row and the weight, and the sum of squares joins that
// kernel, computed at every point of it (its index is 0 where the products have x1; it
// is a single value). One kernel, where a norm kernel and the products' kernel ran. The
// recomputed row is rounded to bf16 where it is computed, as its stored copy was (the
// weight's product's opmath rounding, which a value kept in a kernel otherwise skips).
// CHECK:       strata-opt: values agree on inputs seed=3
// CHECK:       kernel.func @k0 attributes {pointwise = [1 : i64, 48 : i64], reduction = [64 : i64]
// CHECK-NEXT:  ^bb0(%[[H:.*]]: !kernel.buffer<f32>, %{{.*}}: !kernel.buffer<bf16>, %{{.*}}: !kernel.buffer<bf16>, %{{.*}}: !kernel.buffer<bf16>, %{{.*}}: !kernel.buffer<bf16>, %{{.*}}: !kernel.buffer<bf16>):
// CHECK-NEXT:    %[[ROW:.*]] = kernel.load %[[H]]["r0"]
// CHECK-NEXT:    %[[SQ:.*]] = prim.mul %[[ROW]], %[[ROW]]
// CHECK-NEXT:    %[[S:.*]] = kernel.reduce "sum" %[[SQ]]
// CHECK:         prim.rsqrt
// CHECK:         kernel.load %{{.*}}["r0"] : !kernel.buffer<bf16> -> bf16
// CHECK:         %[[SCALED:.*]] = prim.mul
// CHECK-NEXT:    %[[ROUNDED:.*]] = prim.convert_element_type %[[SCALED]] {dtype = "bf16"}
// CHECK-NEXT:    %[[SIDE:.*]] = prim.convert_element_type %[[ROUNDED]] {dtype = "f32"}
// CHECK-NEXT:    kernel.load {{.*}}["r0 + 64*x1"]
// CHECK:         prim.mul %[[SIDE]]
// CHECK-COUNT-2: kernel.reduce "sum"
// CHECK-NOT:     kernel.func
// CHECK:       kernel.program @graph
// CHECK-COUNT-1: kernel.launch
// CHECK-NOT:     kernel.launch
// TRITON:      strata-opt: triton kernels agree with the kernel interpreter
func.func @graph(%h: !strata.tensor<[1, 1, 64], f32>, %g: !strata.tensor<[64], bf16>, %wg: !strata.tensor<[48, 64], bf16>, %wu: !strata.tensor<[48, 64], bf16>) -> (!strata.tensor<[1, 48], bf16>, !strata.tensor<[1, 48], bf16>) attributes {strata.device = "cuda"} {
  %sq = prim.mul %h, %h : (!strata.tensor<[1, 1, 64], f32>, !strata.tensor<[1, 1, 64], f32>) -> !strata.tensor<[1, 1, 64], f32>
  %s = prim.sum %sq {dims = array<i64: 2>} : (!strata.tensor<[1, 1, 64], f32>) -> !strata.tensor<[1, 1], f32>
  %d = prim.full {shape = [1 : i64, 1 : i64], value = 6.400000e+01 : f64, dtype = "f32"} : !strata.tensor<[1, 1], f32>
  %mean = prim.div %s, %d : (!strata.tensor<[1, 1], f32>, !strata.tensor<[1, 1], f32>) -> !strata.tensor<[1, 1], f32>
  %eps = prim.full {shape = [1 : i64, 1 : i64], value = 1.000000e-05 : f64, dtype = "f32"} : !strata.tensor<[1, 1], f32>
  %v = prim.add %mean, %eps : (!strata.tensor<[1, 1], f32>, !strata.tensor<[1, 1], f32>) -> !strata.tensor<[1, 1], f32>
  %r = prim.rsqrt %v : (!strata.tensor<[1, 1], f32>) -> !strata.tensor<[1, 1], f32>
  %rb = prim.broadcast_in_dim %r {shape = [1 : i64, 1 : i64, 64 : i64], broadcast_dimensions = array<i64: 0, 1>} : (!strata.tensor<[1, 1], f32>) -> !strata.tensor<[1, 1, 64], f32>
  %n = prim.mul %h, %rb : (!strata.tensor<[1, 1, 64], f32>, !strata.tensor<[1, 1, 64], f32>) -> !strata.tensor<[1, 1, 64], f32>
  %nb = prim.convert_element_type %n {dtype = "bf16"} : (!strata.tensor<[1, 1, 64], f32>) -> !strata.tensor<[1, 1, 64], bf16>
  %nf = prim.convert_element_type %nb {dtype = "f32"} : (!strata.tensor<[1, 1, 64], bf16>) -> !strata.tensor<[1, 1, 64], f32>
  %gf = prim.convert_element_type %g {dtype = "f32"} : (!strata.tensor<[64], bf16>) -> !strata.tensor<[64], f32>
  %gb = prim.broadcast_in_dim %gf {shape = [1 : i64, 1 : i64, 64 : i64], broadcast_dimensions = array<i64: 2>} : (!strata.tensor<[64], f32>) -> !strata.tensor<[1, 1, 64], f32>
  %yf = prim.mul %nf, %gb : (!strata.tensor<[1, 1, 64], f32>, !strata.tensor<[1, 1, 64], f32>) -> !strata.tensor<[1, 1, 64], f32>
  %y = prim.convert_element_type %yf {strata.opmath_rounding, dtype = "bf16"} : (!strata.tensor<[1, 1, 64], f32>) -> !strata.tensor<[1, 1, 64], bf16>
  %y2 = prim.reshape %y {shape = [1 : i64, 64 : i64]} : (!strata.tensor<[1, 1, 64], bf16>) -> !strata.tensor<[1, 64], bf16>
  %wgt = prim.permute %wg {dims = array<i64: 1, 0>} : (!strata.tensor<[48, 64], bf16>) -> !strata.tensor<[64, 48], bf16>
  %gate = prim.mm %y2, %wgt : (!strata.tensor<[1, 64], bf16>, !strata.tensor<[64, 48], bf16>) -> !strata.tensor<[1, 48], bf16>
  %wut = prim.permute %wu {dims = array<i64: 1, 0>} : (!strata.tensor<[48, 64], bf16>) -> !strata.tensor<[64, 48], bf16>
  %up = prim.mm %y2, %wut : (!strata.tensor<[1, 64], bf16>, !strata.tensor<[64, 48], bf16>) -> !strata.tensor<[1, 48], bf16>
  func.return %gate, %up : !strata.tensor<[1, 48], bf16>, !strata.tensor<[1, 48], bf16>
}
