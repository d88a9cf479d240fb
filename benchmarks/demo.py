"""make demo: compile a small transformer block on CPU with strata and compare it
with eager PyTorch and TorchInductor — correctness, speed and compile time."""

from __future__ import annotations

import os
import sys
import time
import warnings

import torch

sys.path.insert(0, os.path.dirname(__file__))
from timing import interleaved_medians  # noqa: E402

import strata  # noqa: E402
from strata.testing.models import TransformerBlock  # noqa: E402


def main() -> None:
    torch.manual_seed(0)
    model = TransformerBlock(d=256, heads=8).eval()
    x = torch.randn(4, 128, 256)

    timings = {}
    compiled = {}
    for name, make in (
        ("strata", lambda: strata.compile(model)),
        ("inductor", lambda: torch.compile(model, backend="inductor")),
    ):
        torch._dynamo.reset()
        start = time.perf_counter()
        fn = make()
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(x)
        timings[name] = time.perf_counter() - start
        compiled[name] = fn

    with torch.no_grad():
        want = model(x)
        got = compiled["strata"](x)
        err = (got - want).abs().max().item()
        medians = interleaved_medians(
            {"eager": lambda: model(x), "inductor": lambda: compiled["inductor"](x), "strata": lambda: compiled["strata"](x)},
            rounds=20,
        )

    print(f"TransformerBlock(d=256, heads=8) on x{tuple(x.shape)}, CPU, {torch.get_num_threads()} threads")
    print(f"max |strata - eager| = {err:.2e}   ({'OK' if err < 1e-3 else 'MISMATCH'})")
    print(f"{'':10}{'median ms':>12}{'vs eager':>10}{'compile s':>11}")
    for name in ("eager", "inductor", "strata"):
        ms = medians[name] * 1e3
        ratio = medians["eager"] / medians[name]
        compile_s = f"{timings[name]:.2f}" if name in timings else "-"
        print(f"{name:10}{ms:12.3f}{ratio:9.2f}x{compile_s:>11}")
    if err >= 1e-3:
        sys.exit(1)


if __name__ == "__main__":
    main()
