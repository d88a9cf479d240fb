// The aten IR that tracing dumped from a real model (testing/models.py's
// TransformerBlock, d=32, two heads, traced with dynamic=True and
// options={"trace.enabled": True}: its 0_aten.mlir) goes through the whole default
// pipeline to kernel IR: with strata-opt, and with the stock xdsl-opt through
// strata's plugin, which must print the same.
//
// RUN: strata-opt %S/../Inputs/transformer_block.aten.mlir --default-pipeline > %t.strata
// RUN: filecheck %s --input-file %t.strata
// RUN: xdsl-opt %S/../Inputs/transformer_block.aten.mlir -p infer-shapes,recognize-attention,decompose,simplify,infer-shapes,fuse,coalesce-dims > %t.xdsl
// RUN: diff %t.strata %t.xdsl

// CHECK:       kernel.func @k0 attributes {pointwise = ["s27*s77"], reduction = [32 : i64]
// CHECK-SAME:    symbols = ["s27", "s77"], sources = ["aten.native_layer_norm.default
// CHECK:         kernel.reduce "sum"
// The block's attention, written out with a tril mask, is one prim.sdpa call
// (recognize-attention proves the mask causal at every size): no kernel computes a
// softmax, and no bmm is left.
// CHECK:       kernel.func @k1
// CHECK-NOT:     kernel.reduce "amax"
// CHECK:         kernel.reduce "sum"
// CHECK:       kernel.program @graph
// CHECK-SAME:    arg_symbols = ["s77", "s27",
// CHECK-NOT:     = aten.
// CHECK:         kernel.launch @k0
// CHECK:         prim.addmm
// CHECK-NOT:     prim.bmm
// CHECK:         prim.sdpa {{.*}}is_causal = true, scale = 2.500000e-01
// CHECK-NOT:     prim.bmm
// CHECK:         kernel.return
