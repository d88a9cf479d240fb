"""Packaged Triton kernels against the JIT's on a GPU: what packaging costs, and whether
a loaded kernel launches as fast and runs as fast (runtime/package_triton.py).

    python -m strata.benchmarks.package_triton    # from the repository root; a JSON line a measurement

For each kernel: the time pack_kernel takes and the binaries it writes; the host time
of a call at a tiny size (launch overhead: the JIT's CallSites against the package's
sites); the kernel time by CUDA events at the packaging run's size (where the package
holds the run's own specialization) and at sizes it never saw (its generic binaries).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

import torch

from strata.codegen.triton_gpu import compile_kernel
from strata.runtime import package_triton


def _kernels():
    from strata.tests.test_package_triton import GPU_CASES, gpu_buffers

    return GPU_CASES, gpu_buffers


def host_us(kernel, buffers, symbols, calls: int = 5000) -> float:
    kernel(buffers, symbols)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        kernel(buffers, symbols)
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed / calls * 1e6


def device_us(kernel, buffers, symbols, calls: int = 200) -> float:
    kernel(buffers, symbols)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = float("inf")
    for _ in range(5):
        start.record()
        for _ in range(calls):
            kernel(buffers, symbols)
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) / calls * 1e3)
    return best


def main() -> None:
    os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="triton-"))  # packaging times: cold compiles
    cases, buffers_of = _kernels()
    timed = {"pointwise": [[1000], [1024], [1 << 22], [(1 << 22) + 3]],
             "softmax": [[1000, 1000], [4096, 1024], [4099, 1000], [3, 4000], [4096, 64]],
             "softmax_nearest": [[4096, 64], [4096, 50], [4096, 1000]],
             "split": [[2, 40007], [4, 65536], [1, 70000]], "static_split": [[]]}
    for name, (func, ranges, example, _) in cases.items():
        compiled = compile_kernel(func(), "cuda")
        compiled(buffers_of(name, example), example)
        start = time.perf_counter()
        meta, files = package_triton.pack_kernel(compiled, torch.device("cuda"), ranges=ranges)
        pack_s = time.perf_counter() - start
        kernel = package_triton.load_kernel(meta, files, torch.device("cuda"))
        print(json.dumps({"kernel": name, "pack_s": round(pack_s, 2), "tiles": len(meta["tiles"]),
                          "configurations": len(meta["sites"]),
                          "binaries": sum(len(s["binaries"]) for s in meta["sites"]), "files": len(files),
                          "bytes": sum(map(len, files.values()))}), flush=True)
        tiny = [1] * len(example)
        small = buffers_of(name, tiny)
        print(json.dumps({"kernel": name, "symbols": tiny, "host_us_jit": round(host_us(compiled, small, tiny), 2),
                          "host_us_package": round(host_us(kernel, small, tiny), 2)}), flush=True)
        for symbols in timed[name]:
            buffers = buffers_of(name, symbols)
            print(json.dumps({"kernel": name, "symbols": symbols,
                              "device_us_jit": round(device_us(compiled, buffers, symbols), 2),
                              "device_us_package": round(device_us(kernel, buffers, symbols), 2)}), flush=True)


if __name__ == "__main__":
    sys.exit(main())
