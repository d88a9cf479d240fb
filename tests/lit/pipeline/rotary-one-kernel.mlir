// A rotary embedding as Llama-style models write it (benchmarks/llm_models.py's
// apply_rotary, traced with bf16 q [1, 8, 4, 16] and a [8, 8, 2] cos/sin table: its
// 0_aten.mlir) is one kernel. x.float() is read by four products and the table's
// halves by two each, all elementwise: each reader converts where it reads. The stack
// of the two rotated halves is a cat of two operands, which the kernel computes from
// its operands' producers; a stack's operand has size 1 along the cat, so it is read
// with plain loads, none data-dependent.
//
// RUN: strata-opt %S/../Inputs/rotary.aten.mlir --default-pipeline | filecheck %s

// CHECK:       kernel.func @k0 attributes {pointwise = [8 : i64, 4 : i64, 16 : i64], reduction = []
// CHECK:         kernel.load %{{[0-9]+}}["64*x0 + 16*x1 + 2*floor(x2/2)"] : !kernel.buffer<bf16>
// CHECK:         kernel.load %{{[0-9]+}}["16*x0 + 2*floor(x2/2)"] : !kernel.buffer<bf16>
// CHECK:         kernel.load %{{[0-9]+}}["64*x0 + 16*x1 + 2*floor(x2/2) + 1"] : !kernel.buffer<bf16>
// CHECK:         kernel.load %{{[0-9]+}}["16*x0 + 2*floor(x2/2) + 1"] : !kernel.buffer<bf16>
// CHECK-NOT:     kernel.load
// CHECK:         kernel.store %{{.*}}["64*x0 + 16*x1 + x2"] : bf16
// CHECK-NOT:   kernel.func
// CHECK:       kernel.program @graph
// CHECK-COUNT-1: kernel.launch
// CHECK-NOT:     kernel.launch
