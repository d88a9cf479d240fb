// RUN: strata-opt %s -p 'specialize-symbols{bindings="s0=4"}' | filecheck %s

// The program's own dims properties take the values too: the strides eager gives a
// result (strata.result_strides, here channels-last of [2, s0, 3, 3]) and the
// arguments' strides.
// CHECK:       kernel.program @graph
// CHECK-SAME:    strata.result_strides = {{\[}}[36 : i64, 1 : i64, 12 : i64, 4 : i64]]
// CHECK-SAME:    arg_strides = {{\[}}[36 : i64, 9 : i64, 3 : i64, 1 : i64]]
// CHECK:         kernel.return %{{.*}} : !strata.tensor<[2, 4, 3, 3], f32>
kernel.program @graph attributes {strata.result_strides = [["9*s0", 1 : i64, "3*s0", "s0"]], function_type = (!strata.tensor<[2, "s0", 3, 3], f32>) -> !strata.tensor<[2, "s0", 3, 3], f32>, arg_symbols = [""], arg_strides = [["9*s0", 9 : i64, 3 : i64, 1 : i64]]} {
^bb0(%x: !strata.tensor<[2, "s0", 3, 3], f32>):
  kernel.return %x : !strata.tensor<[2, "s0", 3, 3], f32>
}
