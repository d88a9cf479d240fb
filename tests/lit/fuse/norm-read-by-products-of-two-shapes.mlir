// RUN: strata-opt %s -p matvec-to-reduction,fuse --check-values seed=3 2>&1 | filecheck %s

// A norm read by products of two shapes (q [1, 48] and k [1, 16]) is written once, by
// a kernel of its own. matvec-to-reduction makes the two one product over both weights
// side by side ([1, 64], passes/row_product_siblings.py), which reads the row once per
// program: recomputing the norm there would take a second pass over the row in each
// program (one output row each in a decode step's tiles), which costs more than the
// norm's kernel (norm-recomputed-by-its-products.mlir is the case that pays: a gate and
// an up product of one shape, whose kernel recomputes the row once for both).
// CHECK:       strata-opt: values agree on inputs seed=3
// CHECK:       kernel.func @k0 attributes {pointwise = [1 : i64, 1 : i64], reduction = [64 : i64]
// CHECK:         prim.rsqrt
// CHECK:         kernel.store {{.*}} : bf16, !kernel.buffer<bf16>
// CHECK:       kernel.func @k1 attributes {pointwise = [1 : i64, 64 : i64], reduction = [64 : i64]
// CHECK-NOT:     prim.rsqrt
// CHECK:       kernel.program @graph
// CHECK:         %[[N:.*]] = kernel.launch @k0
// CHECK-NEXT:    kernel.launch @k1(%[[N]], %{{.*}}, %{{.*}}) : ({{.*}}, !strata.tensor<[48, 64], bf16>, !strata.tensor<[16, 64], bf16>) -> !strata.tensor<[1, 64], bf16>
func.func @graph(%h: !strata.tensor<[1, 1, 64], f32>, %g: !strata.tensor<[64], bf16>, %wq: !strata.tensor<[48, 64], bf16>, %wk: !strata.tensor<[16, 64], bf16>) -> (!strata.tensor<[1, 48], bf16>, !strata.tensor<[1, 16], bf16>) attributes {strata.device = "cuda"} {
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
  %gb = prim.broadcast_in_dim %g {shape = [1 : i64, 1 : i64, 64 : i64], broadcast_dimensions = array<i64: 2>} : (!strata.tensor<[64], bf16>) -> !strata.tensor<[1, 1, 64], bf16>
  %y = prim.mul %nb, %gb : (!strata.tensor<[1, 1, 64], bf16>, !strata.tensor<[1, 1, 64], bf16>) -> !strata.tensor<[1, 1, 64], bf16>
  %y2 = prim.reshape %y {shape = [1 : i64, 64 : i64]} : (!strata.tensor<[1, 1, 64], bf16>) -> !strata.tensor<[1, 64], bf16>
  %wqt = prim.permute %wq {dims = array<i64: 1, 0>} : (!strata.tensor<[48, 64], bf16>) -> !strata.tensor<[64, 48], bf16>
  %q = prim.mm %y2, %wqt : (!strata.tensor<[1, 64], bf16>, !strata.tensor<[64, 48], bf16>) -> !strata.tensor<[1, 48], bf16>
  %wkt = prim.permute %wk {dims = array<i64: 1, 0>} : (!strata.tensor<[16, 64], bf16>) -> !strata.tensor<[64, 16], bf16>
  %k = prim.mm %y2, %wkt : (!strata.tensor<[1, 64], bf16>, !strata.tensor<[64, 16], bf16>) -> !strata.tensor<[1, 16], bf16>
  func.return %q, %k : !strata.tensor<[1, 48], bf16>, !strata.tensor<[1, 16], bf16>
}
