// RUN: strata-opt %s -p recognize-attention | filecheck %s

// The causal attention of causal.mlir as CUDA autocast traces it: bf16 products, and
// the softmax computed in f32 between a cast that names the graph's GPU with its index
// ("cuda:0", where the graph says "cuda") and the cast back that the product after it
// makes. It becomes one strata::sdpa call in bf16; the casts are gone with the softmax.
// (Compared as strings, "cuda:0" is not "cuda": every autocast attention on a GPU was
// left written out, and a GPT block in bf16 ran at 0.42 ms against 0.33 recognized.)
// CHECK-LABEL: func.func @graph
// CHECK-NEXT:    %[[KT:.*]] = aten.permute.default %k {dims = [0 : i64, 1 : i64, 3 : i64, 2 : i64]}
// CHECK-NEXT:    %[[K:.*]] = aten.permute.default %[[KT]] {strata.source = "aten.view.default @ model.py:5", dims = [0 : i64, 1 : i64, 3 : i64, 2 : i64]}
// CHECK-NEXT:    %o = aten.call %q, %[[K]], %v {strata.source = "aten.view.default @ model.py:5", overload = "strata::sdpa", arguments = {is_causal = true, scale = 0.353553390593273{{[0-9]*}} : f64}
// CHECK-SAME:      -> !strata.tensor<[2, 3, 16, 8], bf16>
// CHECK-NEXT:    func.return %o
// CHECK-NOT:     aten
func.func @graph(%q: !strata.tensor<[2, 3, 16, 8], bf16>, %k: !strata.tensor<[2, 3, 16, 8], bf16>, %v: !strata.tensor<[2, 3, 16, 8], bf16>) -> !strata.tensor<[2, 3, 16, 8], bf16> attributes {strata.device = "cuda"} {
  %kt = aten.permute.default %k {dims = [0 : i64, 1 : i64, 3 : i64, 2 : i64]} : (!strata.tensor<[2, 3, 16, 8], bf16>) -> !strata.tensor<[2, 3, 8, 16], bf16>
  %qe = aten.expand.default %q {size = [2 : i64, 3 : i64, 16 : i64, 8 : i64]} : (!strata.tensor<[2, 3, 16, 8], bf16>) -> !strata.tensor<[2, 3, 16, 8], bf16>
  %q3 = aten.view.default %qe {size = [6 : i64, 16 : i64, 8 : i64]} : (!strata.tensor<[2, 3, 16, 8], bf16>) -> !strata.tensor<[6, 16, 8], bf16>
  %kte = aten.expand.default %kt {size = [2 : i64, 3 : i64, 8 : i64, 16 : i64]} : (!strata.tensor<[2, 3, 8, 16], bf16>) -> !strata.tensor<[2, 3, 8, 16], bf16>
  %kt3 = aten.view.default %kte {size = [6 : i64, 8 : i64, 16 : i64]} : (!strata.tensor<[2, 3, 8, 16], bf16>) -> !strata.tensor<[6, 8, 16], bf16>
  %c3 = aten.bmm.default %q3, %kt3 : (!strata.tensor<[6, 16, 8], bf16>, !strata.tensor<[6, 8, 16], bf16>) -> !strata.tensor<[6, 16, 16], bf16>
  %c = aten.view.default %c3 {size = [2 : i64, 3 : i64, 16 : i64, 16 : i64]} : (!strata.tensor<[6, 16, 16], bf16>) -> !strata.tensor<[2, 3, 16, 16], bf16>
  %scaled = aten.div.Scalar %c {other = 2.8284271247461903 : f64} : (!strata.tensor<[2, 3, 16, 16], bf16>) -> !strata.tensor<[2, 3, 16, 16], bf16>
  %ones = aten.full.default {size = [16 : i64, 16 : i64], fill_value = true, dtype = "i1", layout = "torch.strided", device = "cuda:0", pin_memory = false} : () -> !strata.tensor<[16, 16], i1>
  %cols = aten.arange.start_step {start = 0 : i64, end = 16 : i64, layout = "torch.strided", device = "cuda:0", pin_memory = false} : () -> !strata.tensor<[16], i64>
  %col = aten.unsqueeze.default %cols {dim = -2 : i64} : (!strata.tensor<[16], i64>) -> !strata.tensor<[1, 16], i64>
  %rows = aten.arange.start_step {start = 0 : i64, end = 16 : i64, layout = "torch.strided", device = "cuda:0", pin_memory = false} : () -> !strata.tensor<[16], i64>
  %row = aten.unsqueeze.default %rows {dim = -1 : i64} : (!strata.tensor<[16], i64>) -> !strata.tensor<[16, 1], i64>
  %diff = aten.sub.Tensor %col, %row : (!strata.tensor<[1, 16], i64>, !strata.tensor<[16, 1], i64>) -> !strata.tensor<[16, 16], i64>
  %lower = aten.le.Scalar %diff {other = 0 : i64} : (!strata.tensor<[16, 16], i64>) -> !strata.tensor<[16, 16], i1>
  %tril = aten.logical_and.default %lower, %ones : (!strata.tensor<[16, 16], i1>, !strata.tensor<[16, 16], i1>) -> !strata.tensor<[16, 16], i1>
  %mask = aten.bitwise_not.default %tril : (!strata.tensor<[16, 16], i1>) -> !strata.tensor<[16, 16], i1>
  %inf = aten.scalar_tensor.default {s = 0xfff0000000000000 : f64, dtype = "bf16", layout = "torch.strided", device = "cuda:0"} : () -> !strata.tensor<[], bf16>
  %masked = aten.where.self %mask, %inf, %scaled : (!strata.tensor<[16, 16], i1>, !strata.tensor<[], bf16>, !strata.tensor<[2, 3, 16, 16], bf16>) -> !strata.tensor<[2, 3, 16, 16], bf16>
  %wide = aten._to_copy.default %masked {dtype = "f32", layout = "torch.strided", device = "cuda:0"} : (!strata.tensor<[2, 3, 16, 16], bf16>) -> !strata.tensor<[2, 3, 16, 16], f32>
  %w32 = aten._softmax.default %wide {dim = -1 : i64, half_to_float = false} : (!strata.tensor<[2, 3, 16, 16], f32>) -> !strata.tensor<[2, 3, 16, 16], f32>
  %w = aten._to_copy.default %w32 {dtype = "bf16"} : (!strata.tensor<[2, 3, 16, 16], f32>) -> !strata.tensor<[2, 3, 16, 16], bf16>
  %we = aten.expand.default %w {size = [2 : i64, 3 : i64, 16 : i64, 16 : i64]} : (!strata.tensor<[2, 3, 16, 16], bf16>) -> !strata.tensor<[2, 3, 16, 16], bf16>
  %w3 = aten.view.default %we {size = [6 : i64, 16 : i64, 16 : i64]} : (!strata.tensor<[2, 3, 16, 16], bf16>) -> !strata.tensor<[6, 16, 16], bf16>
  %ve = aten.expand.default %v {size = [2 : i64, 3 : i64, 16 : i64, 8 : i64]} : (!strata.tensor<[2, 3, 16, 8], bf16>) -> !strata.tensor<[2, 3, 16, 8], bf16>
  %v3 = aten.view.default %ve {size = [6 : i64, 16 : i64, 8 : i64]} : (!strata.tensor<[2, 3, 16, 8], bf16>) -> !strata.tensor<[6, 16, 8], bf16>
  %o3 = aten.bmm.default %w3, %v3 : (!strata.tensor<[6, 16, 16], bf16>, !strata.tensor<[6, 16, 8], bf16>) -> !strata.tensor<[6, 16, 8], bf16>
  %o = aten.view.default %o3 {strata.source = "aten.view.default @ model.py:5", size = [2 : i64, 3 : i64, 16 : i64, 8 : i64]} : (!strata.tensor<[6, 16, 8], bf16>) -> !strata.tensor<[2, 3, 16, 8], bf16>
  func.return %o : !strata.tensor<[2, 3, 16, 8], bf16>
}
