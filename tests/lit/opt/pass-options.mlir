// RUN: strata-opt %s -p 'simplify,arith-add-fastmath{flags=fast},dce' | filecheck %s

// strata's passes run in one pipeline with xDSL's own, options in braces.
// CHECK:       kernel.func @k
// CHECK:         %[[C:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:    %[[M:.*]] = arith.mulf %{{.*}}, %[[C]] fastmath<fast> : f32
kernel.func @k attributes {pointwise = [4 : i64], reduction = [], num_inputs = 1 : i64, symbols = [], sources = []} {
^bb0(%in: !kernel.buffer<f32>, %out: !kernel.buffer<f32>):
  %v = kernel.load %in["x0"] : !kernel.buffer<f32> -> f32
  %c = arith.constant 2.0 : f32
  %m = arith.mulf %v, %c : f32
  kernel.store %m, %out["x0"] : f32, !kernel.buffer<f32>
}
