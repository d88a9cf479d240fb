// RUN: strata-opt %s -p coalesce-dims | filecheck %s

// kernel.index (an element's linear number, as a random draw's counter reads it) is
// rewritten with the loads and stores: its value at every point stays the same.
// CHECK-LABEL: kernel.func @counter
// CHECK-SAME:    pointwise = [12 : i64]
// CHECK:         kernel.index "x0"
// CHECK:         kernel.store %{{.*}}, %{{.*}}["x0"]
kernel.func @counter attributes {pointwise = [3 : i64, 4 : i64], reduction = [], num_inputs = 0 : i64, symbols = [], sources = ["aten.arange.default"]} {
^bb0(%out: !kernel.buffer<i64>):
  %i = kernel.index "4*x0 + x1" : i64
  kernel.store %i, %out["4*x0 + x1"] : i64, !kernel.buffer<i64>
}

// A mask built from two loop variables (a causal mask: column <= row) reads them
// apart, so they stay two loops.
// CHECK-LABEL: kernel.func @causal
// CHECK-SAME:    pointwise = [4 : i64, 4 : i64]
// CHECK:         kernel.index "x0 - x1"
kernel.func @causal attributes {pointwise = [4 : i64, 4 : i64], reduction = [], num_inputs = 0 : i64, symbols = [], sources = ["aten.tril.default"]} {
^bb0(%out: !kernel.buffer<i64>):
  %i = kernel.index "x0 - x1" : i64
  kernel.store %i, %out["4*x0 + x1"] : i64, !kernel.buffer<i64>
}

// A gather's data-dependent index (v0) is not a loop variable: the loop variables
// around it still merge.
// CHECK-LABEL: kernel.func @gather
// CHECK-SAME:    pointwise = [6 : i64]
// CHECK:         kernel.load %{{.*}}["x0"]
// CHECK:         kernel.load %{{.*}}["v0"] (%{{.*}} : i64)
// CHECK:         kernel.store %{{.*}}, %{{.*}}["x0"]
kernel.func @gather attributes {pointwise = [2 : i64, 3 : i64], reduction = [], num_inputs = 2 : i64, symbols = [], sources = ["aten.index.Tensor"]} {
^bb0(%idx: !kernel.buffer<i64>, %table: !kernel.buffer<f32>, %out: !kernel.buffer<f32>):
  %j = kernel.load %idx["3*x0 + x1"] : !kernel.buffer<i64> -> i64
  %v = kernel.load %table["v0"](%j : i64) : !kernel.buffer<f32> -> f32
  kernel.store %v, %out["3*x0 + x1"] : f32, !kernel.buffer<f32>
}

// An index with a loop variable scaled by another (not affine) keeps them apart.
// CHECK-LABEL: kernel.func @product
// CHECK-SAME:    pointwise = [3 : i64, 4 : i64]
kernel.func @product attributes {pointwise = [3 : i64, 4 : i64], reduction = [], num_inputs = 0 : i64, symbols = [], sources = ["aten.mul.Tensor"]} {
^bb0(%out: !kernel.buffer<i64>):
  %i = kernel.index "x0*x1" : i64
  kernel.store %i, %out["4*x0 + x1"] : i64, !kernel.buffer<i64>
}
