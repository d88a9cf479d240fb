// RUN: strata-opt %s -p coalesce-dims | filecheck %s

// A sum over (h, w) of a contiguous NCHW tensor (global average pooling) is a
// reduction over one dim of h·w, and (n, c) one pointwise dim: a back end's lanes
// then run along 49 contiguous elements instead of rows of 7.
// CHECK-LABEL: kernel.func @pool
// CHECK-SAME:    pointwise = [1024 : i64], reduction = [49 : i64]
// CHECK:         kernel.load %{{.*}}["r0 + 49*x0"]
// CHECK:         kernel.store %{{.*}}, %{{.*}}["x0"]
kernel.func @pool attributes {pointwise = [2 : i64, 512 : i64], reduction = [7 : i64, 7 : i64], num_inputs = 1 : i64, symbols = [], sources = ["aten.mean.dim"]} {
^bb0(%x: !kernel.buffer<f32>, %out: !kernel.buffer<f32>):
  %v = kernel.load %x["25088*x0 + 49*x1 + 7*r0 + r1"] : !kernel.buffer<f32> -> f32
  %s = kernel.reduce "sum" %v : f32 -> f32
  kernel.store %s, %out["512*x0 + x1"] : f32, !kernel.buffer<f32>
}

// A row stored back (a softmax over the last two dims) merges like a load, and a
// reduction dim of extent 1 that no index names is dropped.
// CHECK-LABEL: kernel.func @rows
// CHECK-SAME:    pointwise = [3 : i64], reduction = [20 : i64]
// CHECK:         kernel.load %{{.*}}["r0 + 20*x0"]
// CHECK:         kernel.store %{{.*}}, %{{.*}}["r0 + 20*x0"]
kernel.func @rows attributes {pointwise = [3 : i64], reduction = [1 : i64, 4 : i64, 5 : i64], num_inputs = 1 : i64, symbols = [], sources = ["aten._softmax.default"]} {
^bb0(%x: !kernel.buffer<f32>, %out: !kernel.buffer<f32>):
  %v = kernel.load %x["20*x0 + 5*r1 + r2"] : !kernel.buffer<f32> -> f32
  %m = kernel.reduce "amax" %v : f32 -> f32
  %d = prim.sub %v, %m : (f32, f32) -> f32
  kernel.store %d, %out["20*x0 + 5*r1 + r2"] : f32, !kernel.buffer<f32>
}

// A reduction domain keeps its last dim, even of extent 1.
// CHECK-LABEL: kernel.func @one_element_rows
// CHECK-SAME:    pointwise = [6 : i64], reduction = [1 : i64]
kernel.func @one_element_rows attributes {pointwise = [2 : i64, 3 : i64], reduction = [1 : i64], num_inputs = 1 : i64, symbols = [], sources = ["aten.sum.dim_IntList"]} {
^bb0(%x: !kernel.buffer<f32>, %out: !kernel.buffer<f32>):
  %v = kernel.load %x["3*x0 + x1"] : !kernel.buffer<f32> -> f32
  %s = kernel.reduce "sum" %v : f32 -> f32
  kernel.store %s, %out["3*x0 + x1"] : f32, !kernel.buffer<f32>
}
