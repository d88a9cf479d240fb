"""Compile time with dynamic=True against the static compile, for a GPT block.

    python benchmarks/dynamic_compile.py [--rounds 5] [--device cpu] [--backends strata,aot_eager,inductor]

Each measurement is a new process (empty strata, Inductor and Triton caches) timing the
first call of `torch.compile(block, backend=..., dynamic=...)` with CPU time of the
process (robust on a shared machine) and wall time; rounds interleave the configurations.
Every process imports the same modules (torch._dynamo, AOTAutograd, strata) before the
clock starts, so that no backend's time holds imports another's does not. For strata it
also reports the seconds spent inside strata's compiler (lowering and code generation,
the rest being Dynamo and AOTAutograd). Prints a Markdown table of medians, with the
seconds dynamic shapes add to each backend's compile: aot_eager's are what Dynamo and
AOTAutograd add, whatever the backend.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = r"""
import json, sys, time
import torch
from strata.testing.models import TransformerBlock
backend, dynamic, device = sys.argv[1], sys.argv[2] == "1", sys.argv[3]
inside = [0.0]
import torch._dynamo, torch._functorch.aot_autograd  # noqa: E401  (imported by every backend)
import strata
if backend == "strata":
    from strata.frontend import backend as front
    lower = front.compile_graph
    def timed(*a, **k):
        start = time.process_time()
        try:
            return lower(*a, **k)
        finally:
            inside[0] += time.process_time() - start
    front.compile_graph = timed
torch.manual_seed(0)
model = TransformerBlock(d=64, heads=4).to(device)
x = torch.randn(2, 16, 64, device=device, requires_grad=True)
cpu, wall = time.process_time(), time.perf_counter()
# strata.compile: the same as backend="strata", also where strata is not installed as a package
compiled = strata.compile(model, dynamic=dynamic) if backend == "strata" else torch.compile(model, backend=backend, dynamic=dynamic)
compiled(x).sum().backward()
if device == "cuda":
    torch.cuda.synchronize()
print(json.dumps({"cpu": time.process_time() - cpu, "wall": time.perf_counter() - wall, "inside": inside[0]}))
"""


def measure(backend: str, dynamic: bool, device: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, STRATA_CACHE_DIR=f"{tmp}/strata", TORCHINDUCTOR_CACHE_DIR=f"{tmp}/inductor",
                   TRITON_CACHE_DIR=f"{tmp}/triton")
        out = subprocess.run([sys.executable, "-c", CHILD, backend, "1" if dynamic else "0", device], env=env,
                             capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--device", default="cpu")
    p.add_argument("--backends", default="strata,aot_eager")
    a = p.parse_args()
    configs = [(b, d) for b in a.backends.split(",") for d in (False, True)]
    results: dict = {c: [] for c in configs}
    for r in range(a.rounds):
        for c in configs:
            results[c].append(measure(*c, a.device))
            print(f"round {r}: {c[0]} dynamic={c[1]}: {results[c][-1]}", file=sys.stderr, flush=True)
    print(f"GPT block (d=64, 4 heads), forward + backward, first call, {a.device}; medians of {a.rounds} new processes\n")
    print("| backend | static CPU s | dynamic CPU s | dynamic ÷ static | dynamic − static CPU s | static wall s | dynamic wall s | strata's part static / dynamic s |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for b in a.backends.split(","):
        s, d = results[(b, False)], results[(b, True)]
        med = lambda rows, k: statistics.median(x[k] for x in rows)  # noqa: E731
        part = f"{med(s, 'inside'):.2f} / {med(d, 'inside'):.2f}" if b == "strata" else ""
        print(f"| {b} | {med(s, 'cpu'):.2f} | {med(d, 'cpu'):.2f} | {med(d, 'cpu') / med(s, 'cpu'):.2f}× | "
              f"{med(d, 'cpu') - med(s, 'cpu'):+.2f} | "
              f"{med(s, 'wall'):.2f} | {med(d, 'wall'):.2f} | {part} |")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"\n({time.perf_counter() - t0:.0f} s)")
