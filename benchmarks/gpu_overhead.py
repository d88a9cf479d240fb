"""Where the time of a small compiled call goes, on the GPU: one 1024-element pointwise
op (x * 2 + 1) through eager, TorchInductor and strata, and strata's layers one at a
time.

    python benchmarks/gpu_overhead.py --out results/

Contenders, timed per call on the host (N calls, then a synchronize; interleaved
rounds, median): eager; Inductor default and reduce-overhead; strata default,
reduce-overhead, with Triton's own launch path (STRATA_TRITON_DIRECT=0), and with
Triton's launcher in place of torch's static one (STRATA_TRITON_STATIC=0); strata's
graph callable without Dynamo and AOTAutograd; strata's kernel launch alone (direct,
through Triton's launcher, and through the JITFunction). Then a profile of strata's default call.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import statistics
import time
import types
import warnings

import torch

import strata
from strata.codegen import triton_gpu
from strata.frontend import backend


def tiny_op(x):
    return x * 2.0 + 1.0


def fresh(fn):
    """A copy of `fn` with a code object of its own: Dynamo keeps compiled code per code
    object, so each contender compiles and keeps its own (no torch._dynamo.reset()
    between contenders, which would make them all recompile under the last settings)."""
    fresh.count = getattr(fresh, "count", 0) + 1
    return types.FunctionType(fn.__code__.replace(co_name=f"{fn.__name__}_{fresh.count}"), fn.__globals__)


def host_time(fns: dict, rounds: int, calls: int) -> dict[str, float]:
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for fn in fns.values():
        for _ in range(20):
            fn()
    torch.cuda.synchronize()
    for _ in range(rounds):
        for name, fn in fns.items():
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
            torch.cuda.synchronize()
            samples[name].append((time.perf_counter() - t0) / calls)
    return {k: statistics.median(v) for k, v in samples.items()}


def compiled_strata(mode: str | None = None, env: dict[str, str] | None = None):
    """strata.compile(tiny_op) plus what it built: the graph callable (no Dynamo) and
    the compiled kernels; `env` is set while it compiles and makes its first calls."""
    graphs, kernels = [], []
    original_graph, original_kernel = backend.compile_graph, triton_gpu.compile_kernel

    def record_graph(*a, **k):
        graphs.append(original_graph(*a, **k))
        return graphs[-1]

    def record_kernel(*a, **k):
        kernels.append(original_kernel(*a, **k))
        return kernels[-1]

    env = env or {}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    backend.compile_graph, triton_gpu.compile_kernel = record_graph, record_kernel
    try:
        f = strata.compile(fresh(tiny_op), mode=mode)
        x = torch.randn(1024, device="cuda")
        f(x)
        f(x)
    finally:
        backend.compile_graph, triton_gpu.compile_kernel = original_graph, original_kernel
        for k, v in old.items():
            if v is None:
                del os.environ[k]
            else:
                os.environ[k] = v
    return f, graphs, kernels


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--calls", type=int, default=500)
    p.add_argument("--out", default=None)
    a = p.parse_args()
    warnings.simplefilter("ignore")
    x = torch.randn(1024, device="cuda")
    out = torch.empty_like(x)
    fns = {"eager": lambda: tiny_op(x)}
    torch._dynamo.reset()
    for mode in ("default", "reduce-overhead"):
        g = torch.compile(fresh(tiny_op), backend="inductor", mode=None if mode == "default" else mode)
        g(x), g(x), g(x)
        fns[f"inductor {mode}"] = lambda g=g: g(x)
    s_direct, graphs, kernels = compiled_strata()
    s_plain, _, kernels_plain = compiled_strata(env={"STRATA_TRITON_DIRECT": "0"})
    s_triton, _, kernels_triton = compiled_strata(env={"STRATA_TRITON_STATIC": "0"})
    s_ro, _, _ = compiled_strata("reduce-overhead")
    fns["strata default"] = lambda: s_direct(x)
    fns["strata no direct launch"] = lambda: s_plain(x)
    fns["strata Triton's launcher (no static)"] = lambda: s_triton(x)
    fns["strata reduce-overhead"] = lambda: s_ro(x)
    graph = graphs[0]
    fns["strata graph callable (no Dynamo/AOT)"] = lambda: graph([x])
    kernel, kernel_plain = kernels[0], kernels_plain[0]
    fns["strata kernel launch (direct)"] = lambda: kernel([x, out], [])
    fns["strata kernel launch (JITFunction)"] = lambda: kernel_plain([x, out], [])
    fns["strata kernel launch (Triton's launcher)"] = lambda: kernels_triton[0]([x, out], [])
    fns["torch.empty_like"] = lambda: torch.empty_like(x)
    site = kernel.module._site0 if hasattr(kernel.module, "_site0") else None
    print(f"direct call site: {site is not None and site.direct}, entries {len(site.entries) if site else 0}", flush=True)
    times = host_time(fns, a.rounds, a.calls)
    for name, t in times.items():
        print(f"{name:40} {t * 1e6:7.1f} us per call", flush=True)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(2000):
        s_direct(x)
    torch.cuda.synchronize()
    prof.disable()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(30)
    print(text.getvalue()[-6000:])
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "gpu_overhead.json"), "w") as f:
            json.dump({k: v * 1e6 for k, v in times.items()}, f, indent=1)


if __name__ == "__main__":
    main()
