// RUN: strata-opt %s -p fuse --check-values seed=3 2>&1 | filecheck %s

// On a CUDA graph an f32 linear layer whose result only kernels read (here through a
// reshape, into a residual add) becomes prim.mm, its bias added inside the kernel
// (passes/fusion/bias.py: cuBLAS's f32 bias epilogue picks slower kernels). The second
// addmm's result is returned as it is: it stays one library call.
// CHECK:       strata-opt: values agree on inputs seed=3
// CHECK:       kernel.func @k0
// CHECK:         prim.add
// CHECK:         prim.add
// CHECK:         kernel.store
// CHECK:       kernel.program @graph
// CHECK:         %[[M:.*]] = prim.mm
// CHECK-NEXT:    %[[R:.*]] = kernel.launch @k0(%[[M]]
// CHECK-NEXT:    %[[K:.*]] = prim.addmm
// CHECK-NEXT:    kernel.return %[[R]], %[[K]]
func.func @graph(%a: !strata.tensor<[6, 4], f32>, %b: !strata.tensor<[4, 8], f32>, %bias: !strata.tensor<[8], f32>, %x: !strata.tensor<[2, 3, 8], f32>) -> (!strata.tensor<[2, 3, 8], f32>, !strata.tensor<[6, 8], f32>) attributes {"strata.device" = "cuda"} {
  %h = prim.addmm %bias, %a, %b : (!strata.tensor<[8], f32>, !strata.tensor<[6, 4], f32>, !strata.tensor<[4, 8], f32>) -> !strata.tensor<[6, 8], f32>
  %v = prim.reshape %h {shape = [2 : i64, 3 : i64, 8 : i64]} : (!strata.tensor<[6, 8], f32>) -> !strata.tensor<[2, 3, 8], f32>
  %r = prim.add %v, %x : (!strata.tensor<[2, 3, 8], f32>, !strata.tensor<[2, 3, 8], f32>) -> !strata.tensor<[2, 3, 8], f32>
  %k = prim.addmm %bias, %a, %b : (!strata.tensor<[8], f32>, !strata.tensor<[6, 4], f32>, !strata.tensor<[4, 8], f32>) -> !strata.tensor<[6, 8], f32>
  func.return %r, %k : !strata.tensor<[2, 3, 8], f32>, !strata.tensor<[6, 8], f32>
}
