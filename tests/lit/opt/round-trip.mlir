// RUN: %python -m strata.opt %s | strata-opt | filecheck %s
// RUN: strata-opt %s --print-op-generic | strata-opt | filecheck %s

// Every strata dialect, with func and arith, prints and parses back, from the custom
// and from the generic form, through the console script and `python -m strata.opt`.
// CHECK:       func.func @graph(%x: !strata.tensor<["s0", 4], f32> {strata.strides = [4 : i64, 1 : i64]}, %n: index {strata.symbol = "s0"})
// CHECK-NEXT:    %a = aten.add.Tensor %x, %x {alpha = 2 : i64} : (!strata.tensor<["s0", 4], f32>, !strata.tensor<["s0", 4], f32>) -> !strata.tensor<["s0", 4], f32>
// CHECK-NEXT:    %c = aten.call %x {overload = "aten::softplus", arguments = {beta = 2 : i64}}
// CHECK-NEXT:    %p = prim.reshape %a {shape = ["4*s0"]} : (!strata.tensor<["s0", 4], f32>) -> !strata.tensor<["4*s0"], f32>
// CHECK-NEXT:    %f = prim.full {shape = [2 : i64], value = -1.500000e+00 : f64, dtype = "bf16"} : !strata.tensor<[2], bf16>
// CHECK-NEXT:    func.return %p
// CHECK:       kernel.func @k0 attributes {pointwise = ["s0"], reduction = [4 : i64], num_inputs = 1 : i64, symbols = ["s0"], sources = ["aten.sum.dim_IntList"]} {
// CHECK-NEXT:  ^bb0(%in: !kernel.buffer<f32>, %out: !kernel.buffer<f32>):
// CHECK-NEXT:    %v = kernel.load %in["r0 + 4*x0"] : !kernel.buffer<f32> -> f32
// CHECK-NEXT:    %s = kernel.reduce "sum" %v : f32 -> f32
// CHECK-NEXT:    %one = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:    %t = prim.add %s, %one : (f32, f32) -> f32
// CHECK-NEXT:    kernel.store %t, %out["x0"] : f32, !kernel.buffer<f32>
// CHECK-NEXT:  }
// CHECK-NEXT:  kernel.program @run attributes {function_type = (!strata.tensor<["s0", 4], f32>) -> !strata.tensor<["s0"], f32>, arg_symbols = [""], arg_strides = {{\[}}[4 : i64, 1 : i64]]} {
// CHECK-NEXT:  ^bb{{[0-9]+}}(%x2: !strata.tensor<["s0", 4], f32>):
// CHECK-NEXT:    %r = kernel.launch @k0(%x2) : (!strata.tensor<["s0", 4], f32>) -> !strata.tensor<["s0"], f32>
// CHECK-NEXT:    kernel.return %r : !strata.tensor<["s0"], f32>
builtin.module {
  func.func @graph(%x: !strata.tensor<["s0", 4], f32> {strata.strides = [4 : i64, 1 : i64]}, %n: index {strata.symbol = "s0"}) -> !strata.tensor<["4*s0"], f32> {
    %a = aten.add.Tensor %x, %x {alpha = 2 : i64} : (!strata.tensor<["s0", 4], f32>, !strata.tensor<["s0", 4], f32>) -> !strata.tensor<["s0", 4], f32>
    %c = aten.call %x {overload = "aten::softplus", arguments = {beta = 2 : i64}} : (!strata.tensor<["s0", 4], f32>) -> !strata.tensor<["s0", 4], f32>
    %p = prim.reshape %a {shape = ["4*s0"]} : (!strata.tensor<["s0", 4], f32>) -> !strata.tensor<["4*s0"], f32>
    %f = prim.full {shape = [2 : i64], value = -1.5 : f64, dtype = "bf16"} : !strata.tensor<[2], bf16>
    func.return %p : !strata.tensor<["4*s0"], f32>
  }
  kernel.func @k0 attributes {pointwise = ["s0"], reduction = [4 : i64], num_inputs = 1 : i64, symbols = ["s0"], sources = ["aten.sum.dim_IntList"]} {
  ^bb0(%in: !kernel.buffer<f32>, %out: !kernel.buffer<f32>):
    %v = kernel.load %in["r0 + 4*x0"] : !kernel.buffer<f32> -> f32
    %s = kernel.reduce "sum" %v : f32 -> f32
    %one = arith.constant 1.0 : f32
    %t = prim.add %s, %one : (f32, f32) -> f32
    kernel.store %t, %out["x0"] : f32, !kernel.buffer<f32>
  }
  kernel.program @run attributes {function_type = (!strata.tensor<["s0", 4], f32>) -> !strata.tensor<["s0"], f32>, arg_symbols = [""], arg_strides = [[4 : i64, 1 : i64]]} {
  ^bb1(%x2: !strata.tensor<["s0", 4], f32>):
    %r = kernel.launch @k0(%x2) : (!strata.tensor<["s0", 4], f32>) -> !strata.tensor<["s0"], f32>
    kernel.return %r : !strata.tensor<["s0"], f32>
  }
}
