"""What checking a user's indices costs on the CPU (codegen/llvm_bounds.py): gather-heavy
programs compiled with `index_bounds_checks` on and off, in one process, interleaved
rounds (benchmarks/timing.py), results checked equal; eager's time beside them.

    python benchmarks/cpu_index_bounds.py --rounds 60

- embedding: a [4096, 512] f32 table, 65536 indices (a [65536, 512] result, 128 MiB);
- index: x[idx] on a 1M-element f32 tensor, 1M indices (negative ones included);
- gather: torch.gather along the last dim of a [1024, 1024] f32 tensor.
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


def cases() -> dict[str, tuple]:
    g = torch.Generator().manual_seed(0)
    n = 1 << 20
    return {
        "embedding 4096x512, 65536 ids": (embedding, torch.randn(4096, 512, generator=g), torch.randint(0, 4096, (65536,), generator=g)),
        "x[idx], 1M of 1M": (index, torch.randn(n, generator=g), torch.randint(-n, n, (n,), generator=g)),
        "gather dim 1, 1024x1024": (gather, torch.randn(1024, 1024, generator=g), torch.randint(0, 1024, (1024, 1024), generator=g)),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=60)
    parser.add_argument("--inner", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (kernels follow it)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; median of {args.rounds} interleaved rounds")
    print(f"{'case':34} {'eager ms':>9} {'checks on':>10} {'checks off':>11} {'on/off':>7}")
    for name, (fn, x, i) in cases().items():
        on = strata.compile(fn, options={"index_bounds_checks": True})
        off = strata.compile(fn, options={"index_bounds_checks": False})
        expected = fn(x, i)
        for c in (on, off):
            torch.testing.assert_close(c(x, i), expected, rtol=0, atol=0)
        # Eager apart: torch's OpenMP workers spin for a while after its parallel
        # region, and slowed whichever contender came right after it by up to 1.5x.
        t = interleaved_medians({"on": lambda: on(x, i), "off": lambda: off(x, i)}, rounds=args.rounds, inner=args.inner)
        t |= interleaved_medians({"eager": lambda: fn(x, i)}, rounds=args.rounds // 4 or 1, inner=args.inner)
        print(f"{name:34} {t['eager'] * 1e3:9.3f} {t['on'] * 1e3:10.3f} {t['off'] * 1e3:11.3f} {t['on'] / t['off']:7.3f}")
        torch._dynamo.reset()


if __name__ == "__main__":
    main()
