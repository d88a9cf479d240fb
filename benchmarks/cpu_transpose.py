"""Layout-changing pointwise kernels on the CPU: eager vs TorchInductor vs strata, in
one process, interleaved rounds (benchmarks/timing.py), results checked bit-exact.

    python benchmarks/cpu_transpose.py --rounds 30

- NCHW to NHWC, [8,64,28,28] f32: the copy strata's CPU layouts put before a
  convolution (passes/fusion/layouts.py), run as that kernel.func; eager and Inductor
  run `x.contiguous(memory_format=torch.channels_last)`.
- the same bytes copied without a layout change (the floor);
- `x.t().contiguous() * 2` on [2048,1024] f32, through strata.compile.
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


def nhwc_kernel():
    kernel = compile_kernel(parse_module(NHWC_COPY).body.block.first_op)

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
    x2 = torch.randn(2048, 1024)
    cases = {
        "NCHW->NHWC [8,64,28,28] f32": (channels_last, nhwc_kernel(), x4),
        "copy [8,64,28,28] f32": (torch.clone, None, x4),
        "x.t().contiguous()*2 [2048,1024] f32": (transpose_2d, strata.compile(transpose_2d), x2),
    }
    for name, (fn, ours, x) in cases.items():
        inductor = torch.compile(fn, backend="inductor")
        ours = ours or strata.compile(fn)
        expected = fn(x)
        for who, f in (("inductor", inductor), ("strata", ours)):
            got = f(x)
            assert got.stride() == expected.stride(), (who, got.stride(), expected.stride())
            assert torch.equal(got, expected), f"{who} differs on {name}"
        t = interleaved_medians({"eager": lambda: fn(x), "inductor": lambda: inductor(x), "strata": lambda: ours(x)}, rounds=args.rounds, inner=args.inner)
        print(
            f"{name:38s} eager {t['eager'] * 1e3:7.3f} ms  inductor {t['inductor'] * 1e3:7.3f} ms  strata {t['strata'] * 1e3:7.3f} ms"
            f"  strata vs eager {t['eager'] / t['strata']:5.2f}x  vs inductor {t['inductor'] / t['strata']:5.2f}x",
            flush=True,
        )


if __name__ == "__main__":
    main()
