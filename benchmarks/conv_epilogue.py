"""Convolutions with their batch norm and ReLU under max-autotune: eager, TorchInductor
and strata side by side, on a GPU (issue: max-autotune for real, its convolution
template).

    python benchmarks/conv_epilogue.py --out results/            # bf16, ResNet's layers
    python benchmarks/conv_epilogue.py --dtypes tf32 --layers 3x3-56,1x1-56

Each case is `relu(batch_norm(conv2d(x, w)))` in inference, x [32, c_in, h, w] in
NCHW as a model hands it over (`--channels-last`: NHWC, as a layer inside a model
receives it from the kernel before), at the convolution shapes of ResNet-18 and
ResNet-50's bottlenecks, and the depthwise ones (`dw` layers, one filter per channel)
of MobileNetV2 (3×3), EfficientNet (5×5) and ConvNeXt (7×7). Both compilers run
`--mode` and tune at their first call: Inductor times cuDNN against its Triton
convolution templates, strata times cuDNN followed by the epilogue against its
implicit-GEMM template with the epilogue fused (passes/convolution_to_dot.py); a
depthwise convolution is cuDNN's, then the epilogue's kernel, for both. Results are
checked against eager, then timed in interleaved rounds (CUDA events, median of the
rounds, as gemm_epilogue.py), and each shape is appended to conv.jsonl under --out.
"""

from __future__ import annotations

import argparse
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from gemm_epilogue import compare, print_geomean, record  # noqa: E402

# name: (c_in, c_out, kernel, stride, padding, input size); "dw": groups = c_in = c_out
LAYERS = {
    "stem-224": (3, 64, 7, 2, 3, 224),
    "3x3-56": (64, 64, 3, 1, 1, 56),
    "3x3s2-56": (64, 128, 3, 2, 1, 56),
    "3x3-28": (128, 128, 3, 1, 1, 28),
    "3x3-14": (256, 256, 3, 1, 1, 14),
    "3x3-7": (512, 512, 3, 1, 1, 7),
    "1x1s2-56": (64, 128, 1, 2, 0, 56),
    "1x1-56": (64, 256, 1, 1, 0, 56),
    "1x1-56-down": (256, 64, 1, 1, 0, 56),
    "dw3x3-112": (32, 32, 3, 1, 1, 112),
    "dw3x3s2-112": (96, 96, 3, 2, 1, 112),
    "dw3x3-56": (144, 144, 3, 1, 1, 56),
    "dw3x3-14": (384, 384, 3, 1, 1, 14),
    "dw3x3-7": (960, 960, 3, 1, 1, 7),
    "dw5x5-28": (240, 240, 5, 1, 2, 28),
    "dw7x7-56": (96, 96, 7, 1, 3, 56),
    "dw7x7-14": (384, 384, 7, 1, 3, 14),
}
BATCH = 32


def conv_bn_relu(x, w, mean, var, scale, shift, stride: int, padding: int, groups: int = 1):
    return F.relu(F.batch_norm(F.conv2d(x, w, None, stride, padding, 1, groups), mean, var, scale, shift, False))


def run_layer(name: str, dtype_name: str, rounds: int, inner: int, mode: str, channels_last: bool = False) -> dict:
    c_in, c_out, k, stride, padding, size = LAYERS[name]
    groups = c_in if name.startswith("dw") else 1
    dtype = torch.bfloat16 if dtype_name == "bf16" else torch.float32
    torch.backends.cudnn.allow_tf32 = dtype_name == "tf32"
    torch._dynamo.reset()
    g = torch.Generator(device="cuda").manual_seed(c_in * size)

    def rand(*shape, scale=1.0, low=None):
        t = torch.randn(*shape, device="cuda", generator=g) * scale
        return (t.abs() + low if low is not None else t).to(dtype)

    x = rand(BATCH, c_in, size, size)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    args = (x, rand(c_out, c_in // groups, k, k, scale=(c_in // groups * k * k) ** -0.5),
            rand(c_out, scale=0.1), rand(c_out, low=0.5), rand(c_out, low=0.5), rand(c_out, scale=0.1))

    def fn(x, w, mean, var, scale, shift):
        return conv_bn_relu(x, w, mean, var, scale, shift, stride, padding, groups)

    row = {"layer": name, "dtype": dtype_name, "mode": mode, "x": list(args[0].shape), "w": list(args[1].shape),
           "stride": stride, "padding": padding, "groups": groups, "channels_last": channels_last}
    return compare(fn, args, fn(*args), row, rounds, inner, mode)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--layers", default=",".join(LAYERS))
    p.add_argument("--dtypes", default="bf16", help="comma-separated, of bf16,tf32")
    p.add_argument("--mode", default="max-autotune-no-cudagraphs")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--inner", type=int, default=10)
    p.add_argument("--channels-last", action="store_true", help="x in NHWC, as inside a model")
    p.add_argument("--out", default="conv-results")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "conv.jsonl")
    print(f"{torch.cuda.get_device_name()}: torch {torch.__version__}, mode {a.mode}", flush=True)
    ratios = []
    for dtype in a.dtypes.split(","):
        for layer in a.layers.split(","):
            record(path, run_layer(layer, dtype, a.rounds, a.inner, a.mode, a.channels_last), f"{a.mode} {dtype} {layer}", ratios)
    print_geomean(ratios, "layers")


if __name__ == "__main__":
    sys.exit(main())
