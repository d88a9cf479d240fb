"""What checking a user's indices costs (codegen/llvm_bounds.py, codegen/triton_bounds.py):
gather-heavy programs and the suite's models that embed tokens, compiled with
`index_bounds_checks` on and off, in one process, interleaved rounds
(benchmarks/timing.py), results checked equal; eager's time beside them.

    python benchmarks/index_bounds.py --rounds 60                   # CPU, the three programs
    python benchmarks/index_bounds.py --device cuda --models bert_base,gpt2 --dtype bf16

- embedding: a [4096, 512] table, 65536 indices (a [65536, 512] result, 128 MiB in f32);
- index: x[idx] on a 1M-element tensor, 1M indices (negative ones included);
- gather: torch.gather along the last dim of a [1024, 1024] tensor;
- a model of benchmarks/models.py (its inputs), under autocast for bf16.
"""

from __future__ import annotations

import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from timing import interleaved_medians  # noqa: E402

import strata  # noqa: E402


def embedding(table, i):
    return torch.nn.functional.embedding(i, table)


def index(x, i):
    return x[i]


def gather(x, i):
    return torch.gather(x, 1, i)


def cases(device: str, dtype: torch.dtype) -> dict[str, tuple]:
    g = torch.Generator().manual_seed(0)
    n = 1 << 20

    def on(*xs):
        return tuple(x.to(device, dtype) if x.is_floating_point() else x.to(device) for x in xs)

    return {
        "embedding 4096x512, 65536 ids": (embedding, *on(torch.randn(4096, 512, generator=g), torch.randint(0, 4096, (65536,), generator=g))),
        "x[idx], 1M of 1M": (index, *on(torch.randn(n, generator=g), torch.randint(-n, n, (n,), generator=g))),
        "gather dim 1, 1024x1024": (gather, *on(torch.randn(1024, 1024, generator=g), torch.randint(0, 1024, (1024, 1024), generator=g))),
    }


PROGRAMS = ("embedding 4096x512, 65536 ids", "x[idx], 1M of 1M", "gather dim 1, 1024x1024")


def model_cases(names: list[str], device: str) -> dict[str, tuple]:
    from models import build

    out = {}
    for name in names:
        case = build(name, device)
        out[f"{name} ({case.shape})"] = (case.module, *case.inputs)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--inner", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (kernels follow it)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32")
    parser.add_argument("--models", default="", help="comma-separated models of benchmarks/models.py, timed after the programs")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    sync = torch.cuda.synchronize if args.device.startswith("cuda") else (lambda: None)
    where = torch.cuda.get_device_name() if args.device.startswith("cuda") else f"{torch.get_num_threads()} threads"
    print(f"torch {torch.__version__}, {args.device} ({where}), {args.dtype}; median of {args.rounds} interleaved rounds")
    print(f"{'case':44} {'eager ms':>9} {'checks on':>10} {'checks off':>11} {'on/off':>7}")
    every = cases(args.device, dtype) | model_cases([m for m in args.models.split(",") if m], args.device)
    autocast = torch.autocast(args.device.split(":")[0], dtype=torch.bfloat16, enabled=args.dtype == "bf16")
    with torch.no_grad(), autocast:
        for name, (fn, *inputs) in every.items():
            on = strata.compile(fn, options={"index_bounds_checks": True})
            off = strata.compile(fn, options={"index_bounds_checks": False})
            # the checks change no value: on and off agree bit for bit (and the programs,
            # pure gathers, with eager; a model's rounding is the suite's business)
            torch.testing.assert_close(on(*inputs), off(*inputs), rtol=0, atol=0)
            if name in PROGRAMS:
                torch.testing.assert_close(on(*inputs), fn(*inputs), rtol=0, atol=0)
            # Eager apart: torch's OpenMP workers spin for a while after its parallel
            # region, and slowed whichever contender came right after it by up to 1.5x.
            t = interleaved_medians({"on": lambda: on(*inputs), "off": lambda: off(*inputs)},
                                    rounds=args.rounds, inner=args.inner, sync=sync)
            t |= interleaved_medians({"eager": lambda: fn(*inputs)}, rounds=args.rounds // 4 or 1, inner=args.inner, sync=sync)
            print(f"{name:44} {t['eager'] * 1e3:9.3f} {t['on'] * 1e3:10.3f} {t['off'] * 1e3:11.3f} {t['on'] / t['off']:7.3f}")
            torch._dynamo.reset()


if __name__ == "__main__":
    main()
