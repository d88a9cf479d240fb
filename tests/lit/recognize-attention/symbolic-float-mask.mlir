// RUN: strata-opt %s -p recognize-attention | filecheck %s

// Sizes symbolic (dynamic=True), the mask a float tril(ones(1, 1, L, S)) compared
// with 0, the scale a product, an inference dropout (a clone) after the softmax: the
// mask is causal at every L and S, so this is sdpa's is_causal with scale 0.25.
// CHECK-LABEL: func.func @graph
// CHECK:         %[[K:.*]] = aten.permute.default %kt {{.*}}dims = [0 : i64, 1 : i64, 3 : i64, 2 : i64]} : (!strata.tensor<["B", "H", "E", "L"], f32>) -> !strata.tensor<["B", "H", "L", "E"], f32>
// CHECK-NEXT:    %o = aten.call %q, %[[K]], %v {overload = "strata::sdpa", arguments = {is_causal = true, scale = 2.500000e-01 : f64}
// CHECK-NEXT:    func.return %o
func.func @graph(%B: index {strata.symbol = "B"}, %H: index {strata.symbol = "H"}, %L: index {strata.symbol = "L"}, %E: index {strata.symbol = "E"}, %q: !strata.tensor<["B", "H", "L", "E"], f32>, %k: !strata.tensor<["B", "H", "L", "E"], f32>, %v: !strata.tensor<["B", "H", "L", "E"], f32>) -> !strata.tensor<["B", "H", "L", "E"], f32> attributes {strata.device = "cpu"} {
  %kt = aten.permute.default %k {dims = [0 : i64, 1 : i64, 3 : i64, 2 : i64]} : (!strata.tensor<["B", "H", "L", "E"], f32>) -> !strata.tensor<["B", "H", "E", "L"], f32>
  %qe = aten.expand.default %q {size = ["B", "H", "L", "E"]} : (!strata.tensor<["B", "H", "L", "E"], f32>) -> !strata.tensor<["B", "H", "L", "E"], f32>
  %q3 = aten.view.default %qe {size = ["B*H", "L", "E"]} : (!strata.tensor<["B", "H", "L", "E"], f32>) -> !strata.tensor<["B*H", "L", "E"], f32>
  %kte = aten.expand.default %kt {size = ["B", "H", "E", "L"]} : (!strata.tensor<["B", "H", "E", "L"], f32>) -> !strata.tensor<["B", "H", "E", "L"], f32>
  %kt3 = aten.view.default %kte {size = ["B*H", "E", "L"]} : (!strata.tensor<["B", "H", "E", "L"], f32>) -> !strata.tensor<["B*H", "E", "L"], f32>
  %c3 = aten.bmm.default %q3, %kt3 : (!strata.tensor<["B*H", "L", "E"], f32>, !strata.tensor<["B*H", "E", "L"], f32>) -> !strata.tensor<["B*H", "L", "L"], f32>
  %c = aten.view.default %c3 {size = ["B", "H", "L", "L"]} : (!strata.tensor<["B*H", "L", "L"], f32>) -> !strata.tensor<["B", "H", "L", "L"], f32>
  %scaled = aten.mul.Scalar %c {other = 2.500000e-01 : f64} : (!strata.tensor<["B", "H", "L", "L"], f32>) -> !strata.tensor<["B", "H", "L", "L"], f32>
  %ones = aten.full.default {size = [1 : i64, 1 : i64, "L", "L"], fill_value = 1 : i64, dtype = "f32", layout = "torch.strided", device = "cpu", pin_memory = false} : () -> !strata.tensor<[1, 1, "L", "L"], f32>
  %cols = aten.arange.start_step {start = 0 : i64, end = "L", layout = "torch.strided", device = "cpu", pin_memory = false} : () -> !strata.tensor<["L"], i64>
  %col = aten.unsqueeze.default %cols {dim = -2 : i64} : (!strata.tensor<["L"], i64>) -> !strata.tensor<[1, "L"], i64>
  %rows = aten.arange.start_step {start = 0 : i64, end = "L", layout = "torch.strided", device = "cpu", pin_memory = false} : () -> !strata.tensor<["L"], i64>
  %row = aten.unsqueeze.default %rows {dim = -1 : i64} : (!strata.tensor<["L"], i64>) -> !strata.tensor<["L", 1], i64>
  %diff = aten.sub.Tensor %col, %row : (!strata.tensor<[1, "L"], i64>, !strata.tensor<["L", 1], i64>) -> !strata.tensor<["L", "L"], i64>
  %lower = aten.le.Scalar %diff {other = 0 : i64} : (!strata.tensor<["L", "L"], i64>) -> !strata.tensor<["L", "L"], i1>
  %zero = aten.scalar_tensor.default {s = 0 : i64, dtype = "f32", layout = "torch.strided", device = "cpu"} : () -> !strata.tensor<[], f32>
  %tril = aten.where.self %lower, %ones, %zero : (!strata.tensor<["L", "L"], i1>, !strata.tensor<[1, 1, "L", "L"], f32>, !strata.tensor<[], f32>) -> !strata.tensor<[1, 1, "L", "L"], f32>
  %mask = aten.eq.Scalar %tril {other = 0 : i64} : (!strata.tensor<[1, 1, "L", "L"], f32>) -> !strata.tensor<[1, 1, "L", "L"], i1>
  %inf = aten.scalar_tensor.default {s = 0xfff0000000000000 : f64, dtype = "f32", layout = "torch.strided", device = "cpu"} : () -> !strata.tensor<[], f32>
  %masked = aten.where.self %mask, %inf, %scaled : (!strata.tensor<[1, 1, "L", "L"], i1>, !strata.tensor<[], f32>, !strata.tensor<["B", "H", "L", "L"], f32>) -> !strata.tensor<["B", "H", "L", "L"], f32>
  %w = aten._softmax.default %masked {dim = -1 : i64, half_to_float = false} : (!strata.tensor<["B", "H", "L", "L"], f32>) -> !strata.tensor<["B", "H", "L", "L"], f32>
  %dropped = aten.clone.default %w : (!strata.tensor<["B", "H", "L", "L"], f32>) -> !strata.tensor<["B", "H", "L", "L"], f32>
  %we = aten.expand.default %dropped {size = ["B", "H", "L", "L"]} : (!strata.tensor<["B", "H", "L", "L"], f32>) -> !strata.tensor<["B", "H", "L", "L"], f32>
  %w3 = aten.view.default %we {size = ["B*H", "L", "L"]} : (!strata.tensor<["B", "H", "L", "L"], f32>) -> !strata.tensor<["B*H", "L", "L"], f32>
  %ve = aten.expand.default %v {size = ["B", "H", "L", "E"]} : (!strata.tensor<["B", "H", "L", "E"], f32>) -> !strata.tensor<["B", "H", "L", "E"], f32>
  %v3 = aten.view.default %ve {size = ["B*H", "L", "E"]} : (!strata.tensor<["B", "H", "L", "E"], f32>) -> !strata.tensor<["B*H", "L", "E"], f32>
  %o3 = aten.bmm.default %w3, %v3 : (!strata.tensor<["B*H", "L", "L"], f32>, !strata.tensor<["B*H", "L", "E"], f32>) -> !strata.tensor<["B*H", "L", "E"], f32>
  %o = aten.view.default %o3 {size = ["B", "H", "L", "E"]} : (!strata.tensor<["B*H", "L", "E"], f32>) -> !strata.tensor<["B", "H", "L", "E"], f32>
  func.return %o : !strata.tensor<["B", "H", "L", "E"], f32>
}
