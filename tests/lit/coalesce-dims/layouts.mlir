// RUN: strata-opt %s -p coalesce-dims | filecheck %s

// An NCHW-to-NHWC copy (a ResNet block's input, before its first convolution): both
// accesses walk (h, w) as one run of 28·28 elements, so the kernel has three loops,
// and the tiles of a back end cover 784 points (49 of 16) instead of rows of 28.
// CHECK-LABEL: kernel.func @nchw_to_nhwc
// CHECK-SAME:    pointwise = [8 : i64, 64 : i64, 784 : i64]
// CHECK:         kernel.load %{{.*}}["50176*x0 + 784*x1 + x2"]
// CHECK:         kernel.store %{{.*}}, %{{.*}}["50176*x0 + x1 + 64*x2"]
kernel.func @nchw_to_nhwc attributes {pointwise = [8 : i64, 64 : i64, 28 : i64, 28 : i64], reduction = [], num_inputs = 1 : i64, symbols = [], sources = ["aten.convolution.default"]} {
^bb0(%x: !kernel.buffer<f32>, %out: !kernel.buffer<f32>):
  %v = kernel.load %x["50176*x0 + 784*x1 + 28*x2 + x3"] : !kernel.buffer<f32> -> f32
  kernel.store %v, %out["50176*x0 + x1 + 1792*x2 + 64*x3"] : f32, !kernel.buffer<f32>
}

// A contiguous pointwise kernel is one loop.
// CHECK-LABEL: kernel.func @contiguous
// CHECK-SAME:    pointwise = [24 : i64]
// CHECK:         kernel.load %{{.*}}["x0"]
// CHECK:         kernel.load %{{.*}}["x0"]
// CHECK:         kernel.store %{{.*}}, %{{.*}}["x0"]
kernel.func @contiguous attributes {pointwise = [2 : i64, 3 : i64, 4 : i64], reduction = [], num_inputs = 2 : i64, symbols = [], sources = ["aten.add.Tensor"]} {
^bb0(%a: !kernel.buffer<f32>, %b: !kernel.buffer<f32>, %out: !kernel.buffer<f32>):
  %x = kernel.load %a["12*x0 + 4*x1 + x2"] : !kernel.buffer<f32> -> f32
  %y = kernel.load %b["12*x0 + 4*x1 + x2"] : !kernel.buffer<f32> -> f32
  %s = prim.add %x, %y : (f32, f32) -> f32
  kernel.store %s, %out["12*x0 + 4*x1 + x2"] : f32, !kernel.buffer<f32>
}

// A bias broadcast along the last dim keeps that dim apart; the two before it, which
// no access tells apart, merge.
// CHECK-LABEL: kernel.func @broadcast_last
// CHECK-SAME:    pointwise = [20 : i64, 6 : i64]
// CHECK:         kernel.load %{{.*}}["6*x0 + x1"]
// CHECK:         kernel.load %{{.*}}["x1"]
// CHECK:         kernel.store %{{.*}}, %{{.*}}["6*x0 + x1"]
kernel.func @broadcast_last attributes {pointwise = [4 : i64, 5 : i64, 6 : i64], reduction = [], num_inputs = 2 : i64, symbols = [], sources = ["aten.add.Tensor"]} {
^bb0(%a: !kernel.buffer<f32>, %b: !kernel.buffer<f32>, %out: !kernel.buffer<f32>):
  %x = kernel.load %a["30*x0 + 6*x1 + x2"] : !kernel.buffer<f32> -> f32
  %y = kernel.load %b["x2"] : !kernel.buffer<f32> -> f32
  %s = prim.add %x, %y : (f32, f32) -> f32
  kernel.store %s, %out["30*x0 + 6*x1 + x2"] : f32, !kernel.buffer<f32>
}

// A transpose's two dims are walked in opposite orders: nothing merges.
// CHECK-LABEL: kernel.func @transposed
// CHECK-SAME:    pointwise = ["s0", 8 : i64]
// CHECK:         kernel.load %{{.*}}["s0*x1 + x0"]
kernel.func @transposed attributes {pointwise = ["s0", 8 : i64], reduction = [], num_inputs = 1 : i64, symbols = ["s0"], sources = ["aten.tanh.default"]} {
^bb0(%a: !kernel.buffer<f32>, %out: !kernel.buffer<f32>):
  %x = kernel.load %a["s0*x1 + x0"] : !kernel.buffer<f32> -> f32
  %t = prim.tanh %x : (f32) -> f32
  kernel.store %t, %out["8*x0 + x1"] : f32, !kernel.buffer<f32>
}

// Symbolic extents merge too: the merged extent is their product.
// CHECK-LABEL: kernel.func @symbolic
// CHECK-SAME:    pointwise = ["s0*s1"]
// CHECK:         kernel.store %{{.*}}, %{{.*}}["x0"]
kernel.func @symbolic attributes {pointwise = ["s0", "s1"], reduction = [], num_inputs = 1 : i64, symbols = ["s0", "s1"], sources = ["aten.neg.default"]} {
^bb0(%a: !kernel.buffer<f32>, %out: !kernel.buffer<f32>):
  %x = kernel.load %a["s1*x0 + x1"] : !kernel.buffer<f32> -> f32
  %n = prim.neg %x : (f32) -> f32
  kernel.store %n, %out["s1*x0 + x1"] : f32, !kernel.buffer<f32>
}

// A dim of extent 1 that no index names is dropped; then its neighbours merge.
// CHECK-LABEL: kernel.func @unit_dim
// CHECK-SAME:    pointwise = [32 : i64]
// CHECK:         kernel.store %{{.*}}, %{{.*}}["x0"]
kernel.func @unit_dim attributes {pointwise = [4 : i64, 1 : i64, 8 : i64], reduction = [], num_inputs = 1 : i64, symbols = [], sources = ["aten.neg.default"]} {
^bb0(%a: !kernel.buffer<f32>, %out: !kernel.buffer<f32>):
  %x = kernel.load %a["8*x0 + x2"] : !kernel.buffer<f32> -> f32
  %n = prim.neg %x : (f32) -> f32
  kernel.store %n, %out["8*x0 + x2"] : f32, !kernel.buffer<f32>
}

// An index that is not affine in a pair (a Mod, as a gather of an expanded view
// writes it) keeps the pair apart.
// CHECK-LABEL: kernel.func @not_affine
// CHECK-SAME:    pointwise = [4 : i64, 6 : i64]
// CHECK:         kernel.load %{{.*}}["3*x0 + Mod(x1, 3)"]
kernel.func @not_affine attributes {pointwise = [4 : i64, 6 : i64], reduction = [], num_inputs = 1 : i64, symbols = [], sources = ["aten.neg.default"]} {
^bb0(%a: !kernel.buffer<f32>, %out: !kernel.buffer<f32>):
  %x = kernel.load %a["3*x0 + Mod(x1, 3)"] : !kernel.buffer<f32> -> f32
  %n = prim.neg %x : (f32) -> f32
  kernel.store %n, %out["6*x0 + x1"] : f32, !kernel.buffer<f32>
}
