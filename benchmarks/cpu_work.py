"""CPU time of one call, single-threaded: eager, Inductor and strata on the CPU suite's
cases, in interleaved rounds (median).

    python benchmarks/cpu_work.py softmax,gpt_block,resnet_block

The clock is the thread's own CPU time (time.thread_time) with one thread each
(torch.set_num_threads(1), STRATA_CPU_THREADS=none): it counts the work a call does,
not the time slices other processes take, so it stays readable on a loaded machine
where benchmarks/cpu_suite.py's wall-clock ratios do not. It says nothing of how well
each one uses several cores.
"""

from __future__ import annotations

import os
import sys
import time
import warnings

os.environ["STRATA_CPU_THREADS"] = "none"

import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import cpu_suite  # noqa: E402

import strata  # noqa: E402


def main() -> None:
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    wanted = set(sys.argv[1].split(",")) if len(sys.argv) > 1 else None
    for name, _, fn, args, _ in cpu_suite.cases():
        if wanted and name not in wanted:
            continue
        with torch.no_grad():
            contenders = {"eager": fn, "inductor": torch.compile(fn), "strata": strata.compile(fn)}
            for f in contenders.values():
                f(*args)
                f(*args)
            times: dict[str, list[float]] = {k: [] for k in contenders}
            for _ in range(25):
                for k, f in contenders.items():
                    start = time.thread_time()
                    f(*args)
                    times[k].append(time.thread_time() - start)
        med = {k: sorted(v)[len(v) // 2] * 1e3 for k, v in times.items()}
        print(
            f"{name:18} " + "  ".join(f"{k} {v:7.3f} ms" for k, v in med.items())
            + f"   inductor ÷ strata {med['inductor'] / med['strata']:.2f}  eager ÷ strata {med['eager'] / med['strata']:.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
