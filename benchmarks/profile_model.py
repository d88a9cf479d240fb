"""Where one model's time goes, under eager, Inductor and strata: wall time per call,
the GPU time of its kernels (CUDA events vs torch.profiler), and the kernels that take
the most of it. A wall time well above the kernels' sum means the host is the limit.

    python benchmarks/profile_model.py --model gpt2 --dtype bf16 [--top 15] [--train]

With --train a call is train_suite's training step (forward, loss, backward).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.dirname(__file__))
import models  # noqa: E402
from model_suite import cell_inputs, compile_with, entry_point  # noqa: E402


def profile(name: str, fn, inputs, top: int, train: bool = False) -> None:
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    with torch.enable_grad() if train else torch.no_grad():
        for _ in range(3):
            fn(*inputs)
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(10):
            fn(*inputs)
        end.record()
        torch.cuda.synchronize()
        wall = start.elapsed_time(end) / 10
        with torch_profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(5):
                fn(*inputs)
            torch.cuda.synchronize()
    events = [e for e in prof.key_averages() if e.device_type == torch.autograd.DeviceType.CUDA]
    gpu = sum(e.self_device_time_total for e in events) / 5 / 1e3
    count = sum(e.count for e in events) / 5
    print(f"\n== {name}: {wall:.3f} ms a call (events), kernels {gpu:.3f} ms on the GPU, {count:.0f} kernel launches a call")
    for e in sorted(events, key=lambda e: -e.self_device_time_total)[:top]:
        print(f"  {e.self_device_time_total / 5 / 1e3:8.3f} ms  x{e.count // 5:4d}  {e.key[:110]}")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"])
    p.add_argument("--top", type=int, default=12)
    p.add_argument("--only", default="eager,inductor,strata")
    p.add_argument("--train", action="store_true", help="profile a training step")
    a = p.parse_args()
    warnings.filterwarnings("ignore")
    case = models.build(a.model, "cuda")
    inputs = cell_inputs(case, a.dtype)
    if a.train:
        import copy

        import train_suite

        kernel_model = isinstance(case.module, models.Function)
        for q in case.module.parameters():
            q.requires_grad_(True)
        inputs = train_suite.leaves(inputs, kernel_model)
    for who in a.only.split(","):
        if a.train:
            module = train_suite.WithLoss(copy.deepcopy(case.module).train())
            contender = train_suite.Contender(module, inputs, None)
            fn = entry_point(module, a.dtype, "cuda")
            contender.fn = fn if who == "eager" else compile_with(who, fn)
            step = lambda *_, c=contender: c.step()  # noqa: E731
        else:
            fn = entry_point(case.module, a.dtype, "cuda")
            step = fn if who == "eager" else compile_with(who, fn)
        profile(f"{a.model} {a.dtype} {who}{' training' if a.train else ''}", step, inputs, a.top, a.train)


if __name__ == "__main__":
    main()
