// RUN: strata-opt %s -p 'matvec-to-reduction{device="cuda"}' --check-values seed=2 2>&1 | filecheck %s

// q, k and v of one row (widths 48, 16, 16): one product over the three weights side
// by side (each point of n reads the weight it falls in, clamped where it does not),
// rounded once, and each result a slice of it; the views of k's and v's weights no one
// reads now are gone. The gate and up products, read by an elementwise op (their
// epilogue, in the kernel they share), keep their own sums; the product of another
// row, and the one whose weight is computed, are left alone.
// CHECK:       strata-opt: values agree on inputs seed=2
// CHECK-LABEL: func.func @graph
// CHECK:         prim.iota {{.*}}length = 80
// CHECK:         prim.gather %wqt, {{.*}}aten.mm.default @ q
// CHECK:         prim.gather %wkt, {{.*}}aten.mm.default @ k
// CHECK:         prim.gather %wvt, {{.*}}aten.mm.default @ v
// CHECK:         %[[KV:.*]] = prim.where %{{.*}}, %{{.*}}, %{{.*}} {
// CHECK:         prim.where %{{.*}}, %{{.*}}, %[[KV]]
// CHECK:         %[[S:.*]] = prim.sum {{.*}} -> !strata.tensor<[1, 80], f32>
// CHECK-NEXT:    %[[R:.*]] = prim.convert_element_type %[[S]] {{.*}}dtype = "bf16"
// CHECK-NEXT:    %q = prim.slice %[[R]] {{.*}}start = [0 : i64, 0 : i64], limit = [1 : i64, 48 : i64]
// CHECK-NEXT:    %k = prim.slice %[[R]] {{.*}}start = [0 : i64, 48 : i64], limit = [1 : i64, 64 : i64]
// CHECK-NEXT:    %v = prim.slice %[[R]] {{.*}}start = [0 : i64, 64 : i64], limit = [1 : i64, 80 : i64]
// CHECK-NEXT:    %wgt = prim.permute %wg
// CHECK:         prim.sum {{.*}} -> !strata.tensor<[1, 32], f32>
// CHECK:         prim.sum {{.*}} -> !strata.tensor<[1, 32], f32>
// CHECK:         %other = prim.mm %x2, %wgt
// CHECK:         %made = prim.convert_element_type
// CHECK:         func.return %q, %k, %v, %swi, %up, %other, %made
func.func @graph(%x: !strata.tensor<[1, 64], bf16>, %x2: !strata.tensor<[2, 64], bf16>, %wq: !strata.tensor<[48, 64], bf16>, %wk: !strata.tensor<[16, 64], bf16>, %wv: !strata.tensor<[16, 64], bf16>, %wg: !strata.tensor<[32, 64], bf16>, %wu: !strata.tensor<[32, 64], bf16>, %m: !strata.tensor<[64, 8], bf16>) -> (!strata.tensor<[1, 48], bf16>, !strata.tensor<[1, 16], bf16>, !strata.tensor<[1, 16], bf16>, !strata.tensor<[1, 32], bf16>, !strata.tensor<[1, 32], bf16>, !strata.tensor<[2, 32], bf16>, !strata.tensor<[1, 8], bf16>) attributes {strata.device = "cuda"} {
  %wqt = prim.permute %wq {dims = array<i64: 1, 0>} : (!strata.tensor<[48, 64], bf16>) -> !strata.tensor<[64, 48], bf16>
  %q = prim.mm %x, %wqt {strata.source = "aten.mm.default @ q.py:1 in f"} : (!strata.tensor<[1, 64], bf16>, !strata.tensor<[64, 48], bf16>) -> !strata.tensor<[1, 48], bf16>
  %wkt = prim.permute %wk {dims = array<i64: 1, 0>} : (!strata.tensor<[16, 64], bf16>) -> !strata.tensor<[64, 16], bf16>
  %k = prim.mm %x, %wkt {strata.source = "aten.mm.default @ k.py:1 in f"} : (!strata.tensor<[1, 64], bf16>, !strata.tensor<[64, 16], bf16>) -> !strata.tensor<[1, 16], bf16>
  %wvt = prim.permute %wv {dims = array<i64: 1, 0>} : (!strata.tensor<[16, 64], bf16>) -> !strata.tensor<[64, 16], bf16>
  %v = prim.mm %x, %wvt {strata.source = "aten.mm.default @ v.py:1 in f"} : (!strata.tensor<[1, 64], bf16>, !strata.tensor<[64, 16], bf16>) -> !strata.tensor<[1, 16], bf16>
  %wgt = prim.permute %wg {dims = array<i64: 1, 0>} : (!strata.tensor<[32, 64], bf16>) -> !strata.tensor<[64, 32], bf16>
  %gate = prim.mm %x, %wgt : (!strata.tensor<[1, 64], bf16>, !strata.tensor<[64, 32], bf16>) -> !strata.tensor<[1, 32], bf16>
  %wut = prim.permute %wu {dims = array<i64: 1, 0>} : (!strata.tensor<[32, 64], bf16>) -> !strata.tensor<[64, 32], bf16>
  %up = prim.mm %x, %wut : (!strata.tensor<[1, 64], bf16>, !strata.tensor<[64, 32], bf16>) -> !strata.tensor<[1, 32], bf16>
  %gs = prim.neg %gate : (!strata.tensor<[1, 32], bf16>) -> !strata.tensor<[1, 32], bf16>
  %swi = prim.mul %gs, %up : (!strata.tensor<[1, 32], bf16>, !strata.tensor<[1, 32], bf16>) -> !strata.tensor<[1, 32], bf16>
  %other = prim.mm %x2, %wgt : (!strata.tensor<[2, 64], bf16>, !strata.tensor<[64, 32], bf16>) -> !strata.tensor<[2, 32], bf16>
  %mm = prim.neg %m : (!strata.tensor<[64, 8], bf16>) -> !strata.tensor<[64, 8], bf16>
  %made = prim.mm %x, %mm : (!strata.tensor<[1, 64], bf16>, !strata.tensor<[64, 8], bf16>) -> !strata.tensor<[1, 8], bf16>
  func.return %q, %k, %v, %swi, %up, %other, %made : !strata.tensor<[1, 48], bf16>, !strata.tensor<[1, 16], bf16>, !strata.tensor<[1, 16], bf16>, !strata.tensor<[1, 32], bf16>, !strata.tensor<[1, 32], bf16>, !strata.tensor<[2, 32], bf16>, !strata.tensor<[1, 8], bf16>
}
