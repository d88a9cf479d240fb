// RUN: strata-opt %s -p fuse --check-values seed=3 2>&1 | filecheck %s
// RUN: strata-opt %s -p 'fuse{emulate_precision_casts=true}' --check-values seed=3 2>&1 | filecheck %s --check-prefix=EMULATE

// (x + a / b) squared in f16, as decompose writes it: each op computed in f32 and
// rounded to f16. The roundings marked strata.opmath_rounding (they only end an op's
// f32 computation) are left out inside the kernel: a value stays in f32 until it is
// stored. The unmarked one is a cast the program asked for (`.half()`), and stays.
// With emulate_precision_casts every rounding stays, as eager makes them op by op.
// CHECK:       strata-opt: values agree on inputs seed=3
// CHECK:       kernel.func @k0
// CHECK:         prim.div %
// CHECK-NOT:     -> f16
// CHECK:         prim.add %
// CHECK-NEXT:    prim.convert_element_type {{.*}} -> f16
// CHECK-NEXT:    prim.convert_element_type {{.*}} -> f32
// CHECK-NEXT:    prim.mul
// CHECK-NEXT:    prim.convert_element_type {{.*}} -> f16
// CHECK-NEXT:    kernel.store
// CHECK-NOT:   kernel.func @k1

// EMULATE:     strata-opt: values agree on inputs seed=3
// EMULATE:       prim.div %
// EMULATE-NEXT:  prim.convert_element_type {{.*}} -> f16
// EMULATE-NEXT:  prim.convert_element_type {{.*}} -> f32
func.func @graph(%a: !strata.tensor<[8], f16>, %b: !strata.tensor<[8], f16>, %x: !strata.tensor<[8], f16>) -> !strata.tensor<[8], f16> {
  %a32 = prim.convert_element_type %a {dtype = "f32"} : (!strata.tensor<[8], f16>) -> !strata.tensor<[8], f32>
  %b32 = prim.convert_element_type %b {dtype = "f32"} : (!strata.tensor<[8], f16>) -> !strata.tensor<[8], f32>
  %q = prim.div %a32, %b32 : (!strata.tensor<[8], f32>, !strata.tensor<[8], f32>) -> !strata.tensor<[8], f32>
  %q16 = prim.convert_element_type %q {dtype = "f16", strata.opmath_rounding} : (!strata.tensor<[8], f32>) -> !strata.tensor<[8], f16>
  %q32 = prim.convert_element_type %q16 {dtype = "f32"} : (!strata.tensor<[8], f16>) -> !strata.tensor<[8], f32>
  %x32 = prim.convert_element_type %x {dtype = "f32"} : (!strata.tensor<[8], f16>) -> !strata.tensor<[8], f32>
  %s = prim.add %x32, %q32 : (!strata.tensor<[8], f32>, !strata.tensor<[8], f32>) -> !strata.tensor<[8], f32>
  %s16 = prim.convert_element_type %s {dtype = "f16"} : (!strata.tensor<[8], f32>) -> !strata.tensor<[8], f16>
  %s32 = prim.convert_element_type %s16 {dtype = "f32"} : (!strata.tensor<[8], f16>) -> !strata.tensor<[8], f32>
  %t = prim.mul %s32, %s32 : (!strata.tensor<[8], f32>, !strata.tensor<[8], f32>) -> !strata.tensor<[8], f32>
  %t16 = prim.convert_element_type %t {dtype = "f16", strata.opmath_rounding} : (!strata.tensor<[8], f32>) -> !strata.tensor<[8], f16>
  func.return %t16 : !strata.tensor<[8], f16>
}
