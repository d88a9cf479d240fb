// RUN: strata-opt %s -p matmul-to-dot | filecheck %s
// RUN: strata-opt %s -p matmul-to-dot,fuse | filecheck %s --check-prefix=KERNEL
// RUN: strata-opt %s -p 'matmul-to-dot{epilogue_fusion=false},fuse' | filecheck %s --check-prefix=ALONE

// A bf16 3×3 convolution of stride 2 and padding 1 on a CUDA graph, as an implicit
// GEMM: x viewed as [n, h·w, c] and gathered at each output's window (positions from
// iotas), zero where the window leaves the input, times the weight as [c_out, kh, kw, c],
// summed over (kh, kw, c) in f32 and rounded once; the sum names the convolution.
// CHECK-LABEL: func.func @graph
// CHECK:         %[[NHWC:.*]] = prim.permute %x {dims = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT:    %[[FLAT:.*]] = prim.reshape %[[NHWC]] {shape = [2 : i64, 64 : i64, 4 : i64]}
// CHECK-NEXT:    %[[SPREAD:.*]] = prim.broadcast_in_dim %[[FLAT]]
// CHECK-NEXT:    %[[READ:.*]] = prim.gather %[[SPREAD]], %{{.*}} {dim = 2 : i64}
// CHECK:         %[[WINDOW:.*]] = prim.where %{{.*}}, %[[READ]], %{{.*}}
// CHECK-NEXT:    %[[A:.*]] = prim.convert_element_type %[[WINDOW]] {dtype = "f32"}
// CHECK-NEXT:    %[[WK:.*]] = prim.permute %w {dims = array<i64: 0, 2, 3, 1>}
// CHECK-NEXT:    %[[B:.*]] = prim.convert_element_type %[[WK]] {dtype = "f32"}
// CHECK:         %[[S:.*]] = prim.sum %{{.*}} {strata.dot = "ieee", strata.convolution = {stride = "2,2", padding = "1,1", dilation = "1,1", x = "2,4,8,8", w = "6,4,3,3"}, dims = array<i64: 4, 5, 6>}
// CHECK-NEXT:    %y = prim.convert_element_type %[[S]] {dtype = "bf16"}
// CHECK-NOT:     prim.convolution

// Fused, the window is read where the template reads it (one load at a gathered
// position, channels innermost along k) and the per-channel scale after the
// convolution is its epilogue: one kernel.
// KERNEL:        kernel.func @k0
// KERNEL:        kernel.load %0["64*r2 + v0 + 256*x0"]
// KERNEL:        kernel.load %1["3*r0 + r1 + 9*r2 + 36*x1"]
// KERNEL:        kernel.reduce "sum" {{.*}}strata.convolution
// KERNEL:        kernel.load %2["x1"]
// KERNEL:        kernel.store
// KERNEL-NOT:    kernel.func @k1

// With epilogue_fusion off, the convolution's kernel stores it and the scale is apart.
// ALONE:         kernel.func @k0
// ALONE:         kernel.func @k1
func.func @graph(%x: !strata.tensor<[2, 4, 8, 8], bf16>, %w: !strata.tensor<[6, 4, 3, 3], bf16>, %s: !strata.tensor<[6], f32>) -> !strata.tensor<[2, 6, 4, 4], f32> attributes {strata.device = "cuda"} {
  %y = prim.convolution %x, %w {stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (!strata.tensor<[2, 4, 8, 8], bf16>, !strata.tensor<[6, 4, 3, 3], bf16>) -> !strata.tensor<[2, 6, 4, 4], bf16>
  %f = prim.convert_element_type %y {dtype = "f32"} : (!strata.tensor<[2, 6, 4, 4], bf16>) -> !strata.tensor<[2, 6, 4, 4], f32>
  %sb = prim.broadcast_in_dim %s {shape = [2, 6, 4, 4], broadcast_dimensions = array<i64: 1>} : (!strata.tensor<[6], f32>) -> !strata.tensor<[2, 6, 4, 4], f32>
  %r = prim.mul %f, %sb : (!strata.tensor<[2, 6, 4, 4], f32>, !strata.tensor<[2, 6, 4, 4], f32>) -> !strata.tensor<[2, 6, 4, 4], f32>
  func.return %r : !strata.tensor<[2, 6, 4, 4], f32>
}
