// RUN: strata-opt %s -p pow-to-mul | filecheck %s
// RUN: strata-opt %s -p pow-to-mul --check-values seed=2,special=1,s0=3 2>&1 | filecheck %s --check-prefix=VALUES

// The product names the aten op the power came from, so that traces and errors
// still point at the user's line; and it computes the same values.
// CHECK:       %y = prim.mul %x, %x {strata.source = "aten.pow.Tensor_Scalar @ model.py:3"}
// VALUES:      strata-opt: values agree on inputs seed=2,special=1,s0=3
func.func @graph(%x: !strata.tensor<["s0"], f16>) -> !strata.tensor<["s0"], f16> {
  %two = prim.full {shape = ["s0"], value = 2.0 : f64, dtype = "f16"} : !strata.tensor<["s0"], f16>
  %y = prim.pow %x, %two {strata.source = "aten.pow.Tensor_Scalar @ model.py:3"} : (!strata.tensor<["s0"], f16>, !strata.tensor<["s0"], f16>) -> !strata.tensor<["s0"], f16>
  func.return %y : !strata.tensor<["s0"], f16>
}
