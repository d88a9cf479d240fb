// RUN: strata-opt %s -p 'specialize-symbols{bindings="s0=3"}' | filecheck %s

// A symbol the binding leaves out (here s1; in a real graph, one a data-dependent op
// binds) stays a symbol, in an expression with a bound one too: s0*s1 becomes 3*s1.
// The values already recorded on the program are kept beside the new ones.
// CHECK:       kernel.program @graph attributes {strata.symbol_values = {s0 = 3 : i64, s2 = 7 : i64}
// CHECK-SAME:    function_type = (!strata.tensor<[3, "s1"], f32>) -> !strata.tensor<["3*s1"], f32>
// CHECK:         prim.reshape %{{.*}} {shape = ["3*s1"]} : (!strata.tensor<[3, "s1"], f32>) -> !strata.tensor<["3*s1"], f32>
kernel.program @graph attributes {strata.symbol_values = {s2 = 7 : i64}, function_type = (!strata.tensor<["s0", "s1"], f32>) -> !strata.tensor<["s0*s1"], f32>, arg_symbols = [""], arg_strides = [["s1", 1 : i64]]} {
^bb0(%x: !strata.tensor<["s0", "s1"], f32>):
  %r = prim.reshape %x {shape = ["s0*s1"]} : (!strata.tensor<["s0", "s1"], f32>) -> !strata.tensor<["s0*s1"], f32>
  kernel.return %r : !strata.tensor<["s0*s1"], f32>
}
