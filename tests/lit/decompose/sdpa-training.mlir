// RUN: strata-opt %s -p decompose | filecheck %s

// A training graph's attention (frontend/attention/attention_training.py): strata::sdpa_forward
// gives the output and the log-sum-exp the backward kernel reads; both become library
// calls of the same fused kernel (backend 1: flash), the mask moved last.
// CHECK-LABEL: func.func @forward
// CHECK-NOT:     aten.
// CHECK-NEXT:    %o, %lse = prim.sdpa_forward %q, %k, %v, %m {is_causal = false, backend = 1 : i64, scale = 5.000000e-01 : f64} : (!strata.tensor<[2, 3, "s0", 8], f32>, !strata.tensor<[2, 3, 7, 8], f32>, !strata.tensor<[2, 3, 7, 8], f32>, !strata.tensor<["s0", 7], f32>) -> (!strata.tensor<[2, 3, "s0", 8], f32>, !strata.tensor<[2, 3, "s0"], f32>)
// CHECK-NEXT:    func.return %o, %lse
func.func @forward(%q: !strata.tensor<[2, 3, "s0", 8], f32>, %k: !strata.tensor<[2, 3, 7, 8], f32>, %v: !strata.tensor<[2, 3, 7, 8], f32>, %m: !strata.tensor<["s0", 7], f32>) -> (!strata.tensor<[2, 3, "s0", 8], f32>, !strata.tensor<[2, 3, "s0"], f32>) {
  %o, %lse = aten.call %q, %k, %v, %m {overload = "strata::sdpa_forward", arguments = {is_causal = false, scale = 5.000000e-01 : f64, backend = 1 : i64}, segments = array<i64: 1, 1, 1, 1>} : (!strata.tensor<[2, 3, "s0", 8], f32>, !strata.tensor<[2, 3, 7, 8], f32>, !strata.tensor<[2, 3, 7, 8], f32>, !strata.tensor<["s0", 7], f32>) -> (!strata.tensor<[2, 3, "s0", 8], f32>, !strata.tensor<[2, 3, "s0"], f32>)
  func.return %o, %lse : !strata.tensor<[2, 3, "s0", 8], f32>, !strata.tensor<[2, 3, "s0"], f32>
}

// The backward, causal, no mask: the gradients of q, k and v from one library call.
// CHECK-LABEL: func.func @backward
// CHECK-NEXT:    %dq, %dk, %dv = prim.sdpa_backward %g, %q, %k, %v, %o, %lse {is_causal = true, backend = 3 : i64} : (!strata.tensor<[2, 3, 5, 8], bf16>, !strata.tensor<[2, 3, 5, 8], bf16>, !strata.tensor<[2, 3, 5, 8], bf16>, !strata.tensor<[2, 3, 5, 8], bf16>, !strata.tensor<[2, 3, 5, 8], bf16>, !strata.tensor<[2, 3, 5, 1], f32>) -> (!strata.tensor<[2, 3, 5, 8], bf16>, !strata.tensor<[2, 3, 5, 8], bf16>, !strata.tensor<[2, 3, 5, 8], bf16>)
// CHECK-NEXT:    func.return %dq, %dk, %dv
func.func @backward(%g: !strata.tensor<[2, 3, 5, 8], bf16>, %q: !strata.tensor<[2, 3, 5, 8], bf16>, %k: !strata.tensor<[2, 3, 5, 8], bf16>, %v: !strata.tensor<[2, 3, 5, 8], bf16>, %o: !strata.tensor<[2, 3, 5, 8], bf16>, %lse: !strata.tensor<[2, 3, 5, 1], f32>) -> (!strata.tensor<[2, 3, 5, 8], bf16>, !strata.tensor<[2, 3, 5, 8], bf16>, !strata.tensor<[2, 3, 5, 8], bf16>) {
  %dq, %dk, %dv = aten.call %g, %q, %k, %v, %o, %lse {overload = "strata::sdpa_backward", arguments = {is_causal = true, backend = 3 : i64}, segments = array<i64: 1, 1, 1, 1, 0, 1, 1>} : (!strata.tensor<[2, 3, 5, 8], bf16>, !strata.tensor<[2, 3, 5, 8], bf16>, !strata.tensor<[2, 3, 5, 8], bf16>, !strata.tensor<[2, 3, 5, 8], bf16>, !strata.tensor<[2, 3, 5, 8], bf16>, !strata.tensor<[2, 3, 5, 1], f32>) -> (!strata.tensor<[2, 3, 5, 8], bf16>, !strata.tensor<[2, 3, 5, 8], bf16>, !strata.tensor<[2, 3, 5, 8], bf16>)
  func.return %dq, %dk, %dv : !strata.tensor<[2, 3, 5, 8], bf16>, !strata.tensor<[2, 3, 5, 8], bf16>, !strata.tensor<[2, 3, 5, 8], bf16>
}
