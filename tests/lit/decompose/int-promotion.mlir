// RUN: strata-opt %s -p decompose | filecheck %s

// Mixed dtypes promote as torch does: i64 / i64 is true division in f32; the
// scalar of mul.Scalar stays exact.
// CHECK-LABEL: func.func @graph
// CHECK-DAG:     prim.convert_element_type %a {dtype = "f32"} : (!strata.tensor<[5], i64>) -> !strata.tensor<[5], f32>
// CHECK-DAG:     prim.convert_element_type %b {dtype = "f32"}
// CHECK:         prim.div %{{.*}}, %{{.*}} : (!strata.tensor<[5], f32>, !strata.tensor<[5], f32>) -> !strata.tensor<[5], f32>
// CHECK:         prim.full {shape = [5 : i64], value = 3 : i64, dtype = "i64"}
// CHECK-NEXT:    prim.mul %a, %{{.*}} : (!strata.tensor<[5], i64>, !strata.tensor<[5], i64>) -> !strata.tensor<[5], i64>
// CHECK-NOT:     aten.
func.func @graph(%a: !strata.tensor<[5], i64>, %b: !strata.tensor<[5], i64>) -> (!strata.tensor<[5], f32>, !strata.tensor<[5], i64>) {
  %q = aten.div.Tensor %a, %b : (!strata.tensor<[5], i64>, !strata.tensor<[5], i64>) -> !strata.tensor<[5], f32>
  %m = aten.mul.Scalar %a {other = 3 : i64} : (!strata.tensor<[5], i64>) -> !strata.tensor<[5], i64>
  func.return %q, %m : !strata.tensor<[5], f32>, !strata.tensor<[5], i64>
}
