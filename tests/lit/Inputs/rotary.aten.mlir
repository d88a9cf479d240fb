builtin.module {
  func.func @graph(%arg0: !strata.tensor<[1, 8, 4, 16], bf16> {strata.strides = [512 : i64, 64 : i64, 16 : i64, 1 : i64]}, %arg1: !strata.tensor<[8, 8, 2], bf16> {strata.strides = [16 : i64, 2 : i64, 1 : i64]}) -> (!strata.tensor<[1, 8, 4, 16], bf16> {strata.strides = [512 : i64, 64 : i64, 16 : i64, 1 : i64]}) attributes {strata.device = "cpu", strata.result_bases = [[0 : i64, 1 : i64]], strata.traced} {
    %0 = aten._to_copy.default %arg0 {dtype = "f32"} : (!strata.tensor<[1, 8, 4, 16], bf16>) -> !strata.tensor<[1, 8, 4, 16], f32>
    %1 = aten.view.default %0 {size = [1 : i64, 8 : i64, 4 : i64, -1 : i64, 2 : i64]} : (!strata.tensor<[1, 8, 4, 16], f32>) -> !strata.tensor<[1, 8, 4, 8, 2], f32>
    %2 = aten.view.default %arg1 {size = [1 : i64, 8 : i64, 1 : i64, 8 : i64, 2 : i64]} : (!strata.tensor<[8, 8, 2], bf16>) -> !strata.tensor<[1, 8, 1, 8, 2], bf16>
    %3 = aten.select.int %1 {dim = 4 : i64, index = 0 : i64} : (!strata.tensor<[1, 8, 4, 8, 2], f32>) -> !strata.tensor<[1, 8, 4, 8], f32>
    %4 = aten.select.int %2 {dim = 4 : i64, index = 0 : i64} : (!strata.tensor<[1, 8, 1, 8, 2], bf16>) -> !strata.tensor<[1, 8, 1, 8], bf16>
    %5 = aten.mul.Tensor %3, %4 : (!strata.tensor<[1, 8, 4, 8], f32>, !strata.tensor<[1, 8, 1, 8], bf16>) -> !strata.tensor<[1, 8, 4, 8], f32>
    %6 = aten.select.int %1 {dim = 4 : i64, index = 1 : i64} : (!strata.tensor<[1, 8, 4, 8, 2], f32>) -> !strata.tensor<[1, 8, 4, 8], f32>
    %7 = aten.select.int %2 {dim = 4 : i64, index = 1 : i64} : (!strata.tensor<[1, 8, 1, 8, 2], bf16>) -> !strata.tensor<[1, 8, 1, 8], bf16>
    %8 = aten.mul.Tensor %6, %7 : (!strata.tensor<[1, 8, 4, 8], f32>, !strata.tensor<[1, 8, 1, 8], bf16>) -> !strata.tensor<[1, 8, 4, 8], f32>
    %9 = aten.sub.Tensor %5, %8 : (!strata.tensor<[1, 8, 4, 8], f32>, !strata.tensor<[1, 8, 4, 8], f32>) -> !strata.tensor<[1, 8, 4, 8], f32>
    %10 = aten.select.int %1 {dim = 4 : i64, index = 1 : i64} : (!strata.tensor<[1, 8, 4, 8, 2], f32>) -> !strata.tensor<[1, 8, 4, 8], f32>
    %11 = aten.select.int %2 {dim = 4 : i64, index = 0 : i64} : (!strata.tensor<[1, 8, 1, 8, 2], bf16>) -> !strata.tensor<[1, 8, 1, 8], bf16>
    %12 = aten.mul.Tensor %10, %11 : (!strata.tensor<[1, 8, 4, 8], f32>, !strata.tensor<[1, 8, 1, 8], bf16>) -> !strata.tensor<[1, 8, 4, 8], f32>
    %13 = aten.select.int %1 {dim = 4 : i64, index = 0 : i64} : (!strata.tensor<[1, 8, 4, 8, 2], f32>) -> !strata.tensor<[1, 8, 4, 8], f32>
    %14 = aten.select.int %2 {dim = 4 : i64, index = 1 : i64} : (!strata.tensor<[1, 8, 1, 8, 2], bf16>) -> !strata.tensor<[1, 8, 1, 8], bf16>
    %15 = aten.mul.Tensor %13, %14 : (!strata.tensor<[1, 8, 4, 8], f32>, !strata.tensor<[1, 8, 1, 8], bf16>) -> !strata.tensor<[1, 8, 4, 8], f32>
    %16 = aten.add.Tensor %12, %15 : (!strata.tensor<[1, 8, 4, 8], f32>, !strata.tensor<[1, 8, 4, 8], f32>) -> !strata.tensor<[1, 8, 4, 8], f32>
    %17 = aten.unsqueeze.default %9 {dim = 4 : i64} : (!strata.tensor<[1, 8, 4, 8], f32>) -> !strata.tensor<[1, 8, 4, 8, 1], f32>
    %18 = aten.unsqueeze.default %16 {dim = 4 : i64} : (!strata.tensor<[1, 8, 4, 8], f32>) -> !strata.tensor<[1, 8, 4, 8, 1], f32>
    %19 = aten.cat.default %17, %18 {dim = -1 : i64, segments = array<i64: 2>} : (!strata.tensor<[1, 8, 4, 8, 1], f32>, !strata.tensor<[1, 8, 4, 8, 1], f32>) -> !strata.tensor<[1, 8, 4, 8, 2], f32>
    %20 = aten.view.default %19 {size = [1 : i64, 8 : i64, 4 : i64, 16 : i64]} : (!strata.tensor<[1, 8, 4, 8, 2], f32>) -> !strata.tensor<[1, 8, 4, 16], f32>
    %21 = aten._to_copy.default %20 {dtype = "bf16", layout = "torch.strided", device = "cpu"} : (!strata.tensor<[1, 8, 4, 16], f32>) -> !strata.tensor<[1, 8, 4, 16], bf16>
    func.return %21 : !strata.tensor<[1, 8, 4, 16], bf16>
  }
}
