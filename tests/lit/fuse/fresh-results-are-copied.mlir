// RUN: strata-opt %s -p fuse --check-values seed=1 2>&1 | filecheck %s

// The traced graph returned x.t().clone(), y and y.clone() (y = sin(x)), and x.t():
// results 0 to 2 have bases of their own, result 3 is a view of x
// (strata.result_bases, passes/fusion/fresh_results.py).
// Result 0 would be a view of the argument and result 2 the value result 1 returns,
// so each gets a kernel that copies it; result 3 stays a view of x, as eager's is.
// CHECK:       strata-opt: values agree on inputs seed=1
// CHECK:       kernel.func @k0 {{.*}}sources = ["prim.sin", "prim.convert_element_type"]
// CHECK-COUNT-2:  kernel.store
// CHECK:       kernel.func @k1 {{.*}}sources = ["prim.permute", "prim.convert_element_type"]
// CHECK:         kernel.store %{{.*}}, %{{.*}}["3*x0 + x1"]
// CHECK:       kernel.program @graph
// CHECK:         %[[Y:[0-9]+]], %[[C2:[0-9]+]] = kernel.launch @k0
// CHECK:         %[[C0:[0-9]+]] = kernel.launch @k1
// CHECK:         %[[T:[a-z0-9]+]] = prim.permute
// CHECK:         kernel.return %[[C0]], %[[Y]], %[[C2]], %[[T]]
func.func @graph(%x: !strata.tensor<[3, 4], f32>) -> (!strata.tensor<[4, 3], f32>, !strata.tensor<[3, 4], f32>, !strata.tensor<[3, 4], f32>, !strata.tensor<[4, 3], f32>) attributes {strata.device = "cpu", strata.result_bases = [[0 : i64, 1 : i64], [1 : i64, 1 : i64], [2 : i64, 1 : i64], [-1 : i64, 0 : i64]]} {
  %t = prim.permute %x {dims = array<i64: 1, 0>} : (!strata.tensor<[3, 4], f32>) -> !strata.tensor<[4, 3], f32>
  %y = prim.sin %x : (!strata.tensor<[3, 4], f32>) -> !strata.tensor<[3, 4], f32>
  func.return %t, %y, %y, %t : !strata.tensor<[4, 3], f32>, !strata.tensor<[3, 4], f32>, !strata.tensor<[3, 4], f32>, !strata.tensor<[4, 3], f32>
}
