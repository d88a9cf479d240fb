// RUN: strata-opt %s -p fuse --check-values seed=2 2>&1 | filecheck %s
// RUN: strata-opt %s -p fuse --check-codegen triton 2>&1 | filecheck %s --check-prefix=TRITON

// Keys and values as slices of one product's result (q, k and v computed as one product,
// passes/row_product_siblings.py): the key is squared by a kernel of its own, which
// stores it into its cache, and the value is written into its cache as it is. The
// product's kernel has 16 points, the value 8 elements, so it cannot store the value;
// the key's kernel, of 8 points and run once the product is done, stores it too. Its
// launch updates both caches, and no library call is left.
// CHECK:       strata-opt: values agree on inputs seed=2
// CHECK:       kernel.func @k0 attributes {pointwise = [1 : i64, 16 : i64], reduction = [4 : i64]
// CHECK:       kernel.func @k1 attributes {pointwise = [1 : i64, 8 : i64]
// CHECK:         %[[K:.*]] = kernel.load %{{.*}}["x1"]
// CHECK:         kernel.store %{{.*}}, %{{.*}}["4*v0 + Mod(x1, 4) + 48*floor(x1/4)"]
// CHECK-NEXT:    %[[V:.*]] = kernel.load %{{.*}}["x1 + 8"]
// CHECK-NEXT:    kernel.store %[[V]], %{{.*}}["4*v0 + Mod(x1, 4) + 48*floor(x1/4)"]
// CHECK:       kernel.program @graph
// CHECK:         kernel.launch @k0
// CHECK-NEXT:    kernel.launch @k1({{.*}}) {strata.updates = [0 : i64, 1 : i64]}
// CHECK-NOT:     prim.scatter
// TRITON:      strata-opt: triton kernels agree with the kernel interpreter
func.func @graph(%kc: !strata.tensor<[1, 2, 12, 4], f32>, %vc: !strata.tensor<[1, 2, 12, 4], f32>, %pos: !strata.tensor<[1], i64>, %x: !strata.tensor<[1, 4], f32>, %w: !strata.tensor<[4, 16], f32>) -> (!strata.tensor<[1, 2, 12, 4], f32>, !strata.tensor<[1, 2, 12, 4], f32>) attributes {strata.device = "cuda"} {
  %xb = prim.broadcast_in_dim %x {shape = [1 : i64, 4 : i64, 16 : i64], broadcast_dimensions = array<i64: 0, 1>} : (!strata.tensor<[1, 4], f32>) -> !strata.tensor<[1, 4, 16], f32>
  %wb = prim.broadcast_in_dim %w {shape = [1 : i64, 4 : i64, 16 : i64], broadcast_dimensions = array<i64: 1, 2>} : (!strata.tensor<[4, 16], f32>) -> !strata.tensor<[1, 4, 16], f32>
  %p = prim.mul %xb, %wb : (!strata.tensor<[1, 4, 16], f32>, !strata.tensor<[1, 4, 16], f32>) -> !strata.tensor<[1, 4, 16], f32>
  %kv = prim.sum %p {dims = array<i64: 1>} : (!strata.tensor<[1, 4, 16], f32>) -> !strata.tensor<[1, 16], f32>
  %n = prim.full {shape = [1 : i64], value = 12 : i64, dtype = "i64"} : !strata.tensor<[1], i64>
  %c = prim.check_index %pos, %n {dim = 2 : i64, wraps = 1 : i64, indexing_op = "aten.index_put.default"} : (!strata.tensor<[1], i64>, !strata.tensor<[1], i64>) -> !strata.tensor<[1], i64>
  %i = prim.broadcast_in_dim %c {shape = [1 : i64, 2 : i64, 1 : i64, 4 : i64], broadcast_dimensions = array<i64: 2>} : (!strata.tensor<[1], i64>) -> !strata.tensor<[1, 2, 1, 4], i64>
  %k = prim.slice %kv {start = [0 : i64, 0 : i64], limit = [1 : i64, 8 : i64], step = array<i64: 1, 1>} : (!strata.tensor<[1, 16], f32>) -> !strata.tensor<[1, 8], f32>
  %k2 = prim.mul %k, %k : (!strata.tensor<[1, 8], f32>, !strata.tensor<[1, 8], f32>) -> !strata.tensor<[1, 8], f32>
  %kr = prim.reshape %k2 {shape = [1 : i64, 2 : i64, 1 : i64, 4 : i64]} : (!strata.tensor<[1, 8], f32>) -> !strata.tensor<[1, 2, 1, 4], f32>
  %newk = prim.scatter %kc, %i, %kr {dim = 2 : i64, reduce = "none", include_self = 1 : i64} : (!strata.tensor<[1, 2, 12, 4], f32>, !strata.tensor<[1, 2, 1, 4], i64>, !strata.tensor<[1, 2, 1, 4], f32>) -> !strata.tensor<[1, 2, 12, 4], f32>
  %v = prim.slice %kv {start = [0 : i64, 8 : i64], limit = [1 : i64, 16 : i64], step = array<i64: 1, 1>} : (!strata.tensor<[1, 16], f32>) -> !strata.tensor<[1, 8], f32>
  %vr = prim.reshape %v {shape = [1 : i64, 2 : i64, 1 : i64, 4 : i64]} : (!strata.tensor<[1, 8], f32>) -> !strata.tensor<[1, 2, 1, 4], f32>
  %newv = prim.scatter %vc, %i, %vr {dim = 2 : i64, reduce = "none", include_self = 1 : i64} : (!strata.tensor<[1, 2, 12, 4], f32>, !strata.tensor<[1, 2, 1, 4], i64>, !strata.tensor<[1, 2, 1, 4], f32>) -> !strata.tensor<[1, 2, 12, 4], f32>
  func.return %newk, %newv : !strata.tensor<[1, 2, 12, 4], f32>, !strata.tensor<[1, 2, 12, 4], f32>
}
