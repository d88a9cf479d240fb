// RUN: strata-opt %s -p 'specialize-symbols{bindings="s0=3,s1=5"}' | filecheck %s
// RUN: strata-opt %s -p 'specialize-symbols{bindings="s0=3"}' | filecheck %s --check-prefix=PARTIAL

// The program's types and dims properties take the binding's values: the arguments,
// a launch's result and its strides, a reshape's shape, the program's signature and
// argument strides. The kernel.func keeps its symbols (it was compiled for any value
// and reads s0 at each launch: the program keeps the values for it), and so does
// arg_symbols, which names the symbol an integer argument binds.
// CHECK:       kernel.func @k0 attributes {pointwise = ["s0", 8 : i64]
// CHECK-SAME:    symbols = ["s0"]
// CHECK:         kernel.store %{{.*}}, %{{.*}}["s0*x1 + x0"]
// CHECK:       kernel.program @graph
// CHECK-SAME:    strata.symbol_values = {s0 = 3 : i64, s1 = 5 : i64}
// CHECK-SAME:    function_type = (!strata.tensor<[3, 8], f32>, index, !strata.tensor<[5, 3], f32>) -> (!strata.tensor<[6, 4], f32>, !strata.tensor<[3, 8], f32>, !strata.tensor<[5, 3], f32>)
// CHECK-SAME:    arg_symbols = ["", "s1", ""]
// CHECK-SAME:    arg_strides = {{\[}}[8 : i64, 1 : i64], [], [3 : i64, 1 : i64]]
// CHECK-NEXT:  ^bb0(%{{.*}}: !strata.tensor<[3, 8], f32>, %{{.*}}: index, %{{.*}}: !strata.tensor<[5, 3], f32>):
// CHECK-NEXT:    %[[E:.*]] = kernel.launch @k0(%{{.*}}) {strata.strides = {{\[}}[1 : i64, 3 : i64]]} : (!strata.tensor<[3, 8], f32>) -> !strata.tensor<[3, 8], f32>
// CHECK-NEXT:    %[[R:.*]] = prim.reshape %[[E]] {shape = [6 : i64, 4 : i64]} : (!strata.tensor<[3, 8], f32>) -> !strata.tensor<[6, 4], f32>
// CHECK-NEXT:    kernel.return %[[R]], %[[E]], %{{.*}} : !strata.tensor<[6, 4], f32>, !strata.tensor<[3, 8], f32>, !strata.tensor<[5, 3], f32>

// A symbol the binding leaves out stays a symbol, in expressions with bound ones too.
// PARTIAL:     kernel.program @graph attributes {strata.symbol_values = {s0 = 3 : i64}
// PARTIAL-SAME:  arg_strides = {{\[}}[8 : i64, 1 : i64], [], [3 : i64, 1 : i64]]
// PARTIAL:       kernel.return {{.*}} : !strata.tensor<[6, 4], f32>, !strata.tensor<[3, 8], f32>, !strata.tensor<["s1", 3], f32>
kernel.func @k0 attributes {pointwise = ["s0", 8 : i64], reduction = [], num_inputs = 1 : i64, symbols = ["s0"], sources = ["aten.exp.default"]} {
^bb0(%x: !kernel.buffer<f32>, %out: !kernel.buffer<f32>):
  %v = kernel.load %x["8*x0 + x1"] : !kernel.buffer<f32> -> f32
  %e = prim.exp %v : (f32) -> f32
  kernel.store %e, %out["s0*x1 + x0"] : f32, !kernel.buffer<f32>
}
kernel.program @graph attributes {function_type = (!strata.tensor<["s0", 8], f32>, index, !strata.tensor<["s1", "s0"], f32>) -> (!strata.tensor<["2*s0", 4], f32>, !strata.tensor<["s0", 8], f32>, !strata.tensor<["s1", "s0"], f32>), arg_symbols = ["", "s1", ""], arg_strides = [[8 : i64, 1 : i64], [], ["s0", 1 : i64]]} {
^bb0(%x: !strata.tensor<["s0", 8], f32>, %n: index, %y: !strata.tensor<["s1", "s0"], f32>):
  %e = kernel.launch @k0(%x) {strata.strides = [[1 : i64, "s0"]]} : (!strata.tensor<["s0", 8], f32>) -> !strata.tensor<["s0", 8], f32>
  %r = prim.reshape %e {shape = ["2*s0", 4 : i64]} : (!strata.tensor<["s0", 8], f32>) -> !strata.tensor<["2*s0", 4], f32>
  kernel.return %r, %e, %y : !strata.tensor<["2*s0", 4], f32>, !strata.tensor<["s0", 8], f32>, !strata.tensor<["s1", "s0"], f32>
}
