// RUN: strata-opt %s -p decompose,simplify,infer-shapes,fuse --check-values seed=5,s0=3 2>&1 >/dev/null | filecheck %s --check-prefix=VALUES
// RUN: strata-opt %s -p decompose,simplify,infer-shapes,fuse | strata-opt --check-codegen llvm --check-values seed=5,s0=0 2>&1 >/dev/null | filecheck %s --check-prefix=LLVM

// strata-opt interprets the input and the result on inputs made from a seed and the
// shape symbols' sizes, and compares them; with --check-codegen it runs every kernel
// compiled and in the kernel interpreter (here with s0 = 0: empty tensors).
// VALUES: strata-opt: values agree on inputs seed=5,s0=3
// LLVM:   strata-opt: llvm kernels agree with the kernel interpreter on inputs seed=5,s0=0
func.func @graph(%x: !strata.tensor<["s0", 6], f32> {strata.strides = [1 : i64, "s0"]}) -> !strata.tensor<["s0", 6], f32> {
  %r = aten._log_softmax.default %x {dim = 1 : i64, half_to_float = false} : (!strata.tensor<["s0", 6], f32>) -> !strata.tensor<["s0", 6], f32>
  func.return %r : !strata.tensor<["s0", 6], f32>
}
