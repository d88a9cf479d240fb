"""The CPU suite's ResNet block, eager vs TorchInductor vs strata, with the page faults
each call takes: why that entry's ratio moves from run to run on this machine.

    python benchmarks/cpu_page_faults.py [--rounds 80] [--keep-heap]

A call allocates tensors of 1.6 MB (the block's activations). glibc serves those from
the heap once a freed block of that size has raised its mmap threshold, and gives the
heap's top back to the OS when more than twice that is free there; the next call then
touches fresh pages, one minor fault (about a microsecond) per 4 KiB. Which of the three
contenders' buffers land on such pages depends on the order of everything the process
allocated and freed before, so the same code takes 0 or several hundred faults a call
in different processes. --keep-heap sets glibc's thresholds high (mallopt), so that no
call faults: the ratios of the three codes without that effect.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import resource
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
from cpu_suite import cases  # noqa: E402

import strata  # noqa: E402

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3


def keep_heap() -> None:
    libc = ctypes.CDLL("libc.so.6")
    libc.mallopt(M_MMAP_THRESHOLD, 256 << 20)
    libc.mallopt(M_TRIM_THRESHOLD, 512 << 20)


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=80)
    p.add_argument("--keep-heap", action="store_true", help="no call takes page faults (glibc's mallopt)")
    a = p.parse_args()
    if a.keep_heap:
        keep_heap()
    block, (x,) = next((fn, args) for name, _, fn, args, _ in cases() if name == "resnet_block")
    contenders = {"eager": block, "inductor": torch.compile(block), "strata": strata.compile(block)}
    times = {k: [] for k in contenders}
    faults = {k: [] for k in contenders}
    with torch.no_grad():
        want = block(x)
        for who, f in contenders.items():
            torch.testing.assert_close(f(x), want, rtol=1e-4, atol=1e-4)
        for _ in range(a.rounds):
            for who, f in contenders.items():
                before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                start = time.perf_counter()
                f(x)
                times[who].append(time.perf_counter() - start)
                faults[who].append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
    eager = statistics.median(times["eager"])
    for who in contenders:
        t = statistics.median(times[who])
        print(f"{who:9s} {t * 1e3:7.3f} ms  vs eager {eager / t:5.2f}x  page faults a call {statistics.median(faults[who]):6.0f}")


if __name__ == "__main__":
    main()
