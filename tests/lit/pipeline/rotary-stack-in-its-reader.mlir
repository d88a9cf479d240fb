// A rotary embedding as Llama-style models write it (benchmarks/llm_models.py's
// apply_rotary, traced with bf16 q [1, 8, 4, 16] and a [8, 8, 2] cos/sin table: its
// 0_aten.mlir). The stack of the two rotated halves is a cat of two operands, which
// the kernel that computes the result computes from its operands' producers: the two
// halves are never stored. A stack's operand has size 1 along the cat, so it is read
// with plain loads, none data-dependent. (x.float() and the table's conversion, each
// read by several products, are still stored once.)
//
// RUN: strata-opt %S/../Inputs/rotary.aten.mlir --default-pipeline | filecheck %s

// CHECK:       kernel.func @k0
// CHECK:       kernel.func @k1
// CHECK:       kernel.func @k2 attributes {pointwise = [8 : i64, 4 : i64, 16 : i64], reduction = []
// CHECK:         kernel.load %{{[0-9]+}}["64*x0 + 16*x1 + 2*floor(x2/2)"] : !kernel.buffer<f32>
// CHECK:         kernel.load %{{[0-9]+}}["8*x0 + floor(x2/2)"] : !kernel.buffer<f32>
// CHECK:         kernel.load %{{[0-9]+}}["64*x0 + 16*x1 + 2*floor(x2/2) + 1"] : !kernel.buffer<f32>
// CHECK:         kernel.load %{{[0-9]+}}["8*x0 + floor(x2/2)"] : !kernel.buffer<f32>
// CHECK-NOT:     kernel.load
// CHECK:         kernel.store %{{.*}}["64*x0 + 16*x1 + x2"] : bf16
// CHECK-NOT:   kernel.func
// CHECK:       kernel.program @graph
// CHECK-COUNT-3: kernel.launch
// CHECK-NOT:     kernel.launch
