"""Layout-changing pointwise kernels on the CPU: eager vs TorchInductor vs strata, in
one process, interleaved rounds (benchmarks/timing.py), results checked bit-exact.

    python benchmarks/cpu_transpose.py --rounds 30

- NCHW to NHWC, [8,64,28,28] f32: the copy strata's CPU layouts put before a
  convolution (passes/fusion/layouts.py), run as that kernel.func; eager and Inductor
  run `x.contiguous(memory_format=torch.channels_last)`.
- the same bytes copied without a layout change (the floor);
- NHWC back to NCHW with a residual add and a ReLU (how a ResNet block ends), through
  strata.compile;
- `x.t().contiguous() * 2` on [2048,1024] f32, through strata.compile.

strata's code also runs without the coalesce-dims pass ("strata 4-D": the kernel over
the traced [8,64,28,28] instead of [8,64,784]; for the 2-D transpose nothing merges).
"""

from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from timing import interleaved_medians  # noqa: E402

import strata  # noqa: E402
from strata.codegen.llvm_cpu import compile_kernel  # noqa: E402
from strata.dialects.context import parse_module  # noqa: E402
from strata.passes.coalesce_dims import coalesce_dims  # noqa: E402
from strata.passes.registry import DEFAULT_PIPELINE  # noqa: E402

WITHOUT_COALESCING = {"pipeline": ",".join(p for p in DEFAULT_PIPELINE if p != "coalesce-dims")}

NHWC_COPY = """builtin.module {
kernel.func @nhwc attributes {pointwise = [8 : i64, 64 : i64, 28 : i64, 28 : i64], reduction = [], num_inputs = 1 : i64, symbols = [], sources = ["aten.convolution.default"]} {
^bb0(%0: !kernel.buffer<f32>, %1: !kernel.buffer<f32>):
  %2 = kernel.load %0["50176*x0 + 784*x1 + 28*x2 + x3"] : !kernel.buffer<f32> -> f32
  kernel.store %2, %1["50176*x0 + x1 + 1792*x2 + 64*x3"] : f32, !kernel.buffer<f32>
}
}"""


def channels_last(x):
    return x.contiguous(memory_format=torch.channels_last)


def transpose_2d(x):
    return x.t().contiguous() * 2


def residual_relu(x_nhwc, y):
    return torch.relu(x_nhwc.contiguous() + y)


def nhwc_kernel(coalesced: bool):
    func = parse_module(NHWC_COPY).body.block.first_op
    if coalesced:
        coalesce_dims(func)
    kernel = compile_kernel(func)

    def run(x):
        out = torch.empty_strided(x.shape, (50176, 1, 1792, 64))
        kernel([x, out], [])
        return out

    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--inner", type=int, default=10)
    args = parser.parse_args()
    x4 = torch.randn(8, 64, 28, 28)
    x4_nhwc = channels_last(torch.randn(8, 64, 28, 28))
    x2 = torch.randn(2048, 1024)
    cases = {  # name: (fn, strata's, strata's without coalesce-dims, inputs)
        "NCHW->NHWC [8,64,28,28] f32": (channels_last, nhwc_kernel(True), nhwc_kernel(False), (x4,)),
        "copy [8,64,28,28] f32": (torch.clone, None, strata.compile(torch.clone, options=WITHOUT_COALESCING), (x4,)),
        "relu(NHWC->NCHW + y) [8,64,28,28] f32": (residual_relu, None, strata.compile(residual_relu, options=WITHOUT_COALESCING), (x4_nhwc, x4)),
        "x.t().contiguous()*2 [2048,1024] f32": (transpose_2d, None, None, (x2,)),
    }
    for name, (fn, ours, ours_4d, x) in cases.items():
        contenders = {"eager": fn, "inductor": torch.compile(fn, backend="inductor"), "strata": ours or strata.compile(fn)}
        if ours_4d is not None:
            contenders["strata 4-D"] = ours_4d
        expected = fn(*x)
        for who, f in contenders.items():
            got = f(*x)
            assert got.stride() == expected.stride(), (who, got.stride(), expected.stride())
            assert torch.equal(got, expected), f"{who} differs on {name}"
        t = interleaved_medians({who: (lambda f=f: f(*x)) for who, f in contenders.items()}, rounds=args.rounds, inner=args.inner)
        times = "  ".join(f"{who} {t[who] * 1e3:7.3f} ms" for who in contenders)
        ratios = f"strata vs eager {t['eager'] / t['strata']:5.2f}x  vs inductor {t['inductor'] / t['strata']:5.2f}x"
        if "strata 4-D" in t:
            ratios += f"  vs strata 4-D {t['strata 4-D'] / t['strata']:5.2f}x"
        print(f"{name:40s} {times}  {ratios}", flush=True)


if __name__ == "__main__":
    main()
