"""The GPU kernels of the performance issue, timed as whole compiled calls: eager,
TorchInductor and strata side by side, in GB/s and as a share of a device copy
measured in the same run.

    python benchmarks/gpu_kernels.py --out results/          # on the GPU machine
    python benchmarks/gpu_kernels.py --cases softmax --shapes 8192x4096 --modes default,max-autotune-no-cudagraphs

Cases (fp32): the pointwise chain, softmax and layer norm at 4096x8192, 8192x4096 and
32768x1024, a softmax of a transposed input, and a tiny pointwise op (1024 elements)
whose time is the per-call overhead of a compiled graph. Each contender is compiled
(cold compile time recorded), checked against eager, then all are timed in interleaved
rounds: each sample is `--inner` back-to-back calls between CUDA events (host clock
around a synchronize for the tiny case, where the host is the bottleneck), median over
rounds. Bytes are the fewest a kernel must move (each input read once, each output
written once); GB/s is bytes over the median time, and "% copy" compares that with a
device-to-device copy of 128 MiB timed the same way in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import types
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import torch

import strata
from strata.testing.models import layer_norm, pointwise_chain, softmax_rows

SHAPES = ("4096x8192", "8192x4096", "32768x1024")
CASES = ("pointwise_chain", "softmax", "layer_norm", "softmax_transposed", "tiny")


def tiny_op(x):
    return x * 2.0 + 1.0


def column_sum(x):
    return x.sum(0)


def softmax_dim0(x):
    return torch.softmax(x, dim=0)


def fresh(fn):
    """A copy of `fn` with a code object of its own: Dynamo keeps compiled code per code
    object, so each contender compiles and keeps its own."""
    fresh.count = getattr(fresh, "count", 0) + 1
    return types.FunctionType(fn.__code__.replace(co_name=f"{fn.__name__}_{fresh.count}"), fn.__globals__)


@dataclass
class Case:
    name: str
    shape: str
    fn: Callable
    args: tuple
    bytes: int
    host_timed: bool = False


@dataclass
class Row:
    case: str
    shape: str
    contender: str
    ms: float
    gbps: float
    copy_pct: float
    vs_inductor: float
    compile_s: float
    max_err: float
    ok: bool
    extra: dict = field(default_factory=dict)


def make_cases(names: list[str], shapes: list[str], device: str) -> list[Case]:
    out = []
    for shape in shapes:
        rows, cols = map(int, shape.split("x"))
        n = rows * cols * 4
        x, y = torch.randn(rows, cols, device=device), torch.randn(rows, cols, device=device)
        w, b = torch.randn(cols, device=device), torch.randn(cols, device=device)
        if "pointwise_chain" in names:
            out.append(Case("pointwise_chain", shape, pointwise_chain, (x, y), 3 * n))
        if "softmax" in names:
            out.append(Case("softmax", shape, softmax_rows, (x,), 2 * n))
        if "layer_norm" in names:
            out.append(Case("layer_norm", shape, layer_norm, (x, w, b), 2 * n + 2 * cols * 4))
    if "column_sum" in names:  # not in the list: for benchmarks/gpu_tiles.py
        out.append(Case("column_sum", "8192x4096", column_sum, (torch.randn(8192, 4096, device=device),), 8192 * 4096 * 4 + 4096 * 4))
    if "softmax_dim0" in names:
        out.append(Case("softmax_dim0", "8192x4096", softmax_dim0, (torch.randn(8192, 4096, device=device),), 2 * 8192 * 4096 * 4))
    if "softmax_transposed" in names:
        out.append(Case("softmax_transposed", "8192x4096 (t)", softmax_rows, (torch.randn(4096, 8192, device=device).t(),), 2 * 8192 * 4096 * 4))
    if "tiny" in names:
        out.append(Case("tiny", "1024", tiny_op, (torch.randn(1024, device=device),), 2 * 1024 * 4, host_timed=True))
    return out


def contenders(modes: list[str], inductor_modes: list[str]) -> dict[str, Callable[[Callable], Callable]]:
    out: dict[str, Callable[[Callable], Callable]] = {"eager": lambda f: f}
    for m in inductor_modes:
        out["inductor" if m == "default" else f"inductor[{m}]"] = lambda f, m=m: torch.compile(f, backend="inductor", mode=None if m == "default" else m)
    for m in modes:
        out["strata" if m == "default" else f"strata[{m}]"] = lambda f, m=m: strata.compile(f, mode=None if m == "default" else m)
    return out


def copy_bandwidth(device: str, rounds: int, inner: int) -> float:
    """Bytes per second of a 128 MiB device-to-device copy (read + write)."""
    src = torch.randn(32 * 2**20, device=device)
    dst = torch.empty_like(src)
    t = median_times({"copy": lambda: dst.copy_(src)}, rounds, inner, host=False)["copy"]
    return 2 * src.numel() * 4 / t


def median_times(fns: dict[str, Callable[[], object]], rounds: int, inner: int, host: bool) -> dict[str, float]:
    """Median seconds per call of each function, in interleaved rounds."""
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for fn in fns.values():  # warm up
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(rounds):
        for name, fn in fns.items():
            torch.cuda.synchronize()
            if host:
                t0 = time.perf_counter()
                for _ in range(inner):
                    fn()
                torch.cuda.synchronize()
                samples[name].append((time.perf_counter() - t0) / inner)
            else:
                start.record()
                for _ in range(inner):
                    fn()
                end.record()
                end.synchronize()
                samples[name].append(start.elapsed_time(end) / 1e3 / inner)
    return {k: statistics.median(v) for k, v in samples.items()}


def run(args) -> tuple[float, list[Row]]:
    device = "cuda"
    copy = copy_bandwidth(device, args.rounds, args.inner)
    print(f"device {torch.cuda.get_device_name()}  torch {torch.__version__}  triton {__import__('triton').__version__}", flush=True)
    print(f"copy: {copy / 1e9:.0f} GB/s (128 MiB, read + write)", flush=True)
    makers = contenders(args.modes.split(","), args.inductor_modes.split(",") if args.inductor_modes else [])
    rows: list[Row] = []
    torch.manual_seed(0)
    with torch.no_grad():
        for case in make_cases(args.cases.split(","), args.shapes.split(","), device):
            compiled: dict[str, Callable] = {}
            compile_s: dict[str, float] = {}
            errors: dict[str, float] = {}
            want = case.fn(*case.args)
            torch._dynamo.reset()
            for name, make in makers.items():
                start = time.perf_counter()
                f = make(fresh(case.fn) if name != "eager" else case.fn)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    got = f(*case.args)
                    got = f(*case.args)  # a second call: reduce-overhead records here
                torch.cuda.synchronize()
                compile_s[name] = time.perf_counter() - start
                errors[name] = (got.double() - want.double()).abs().max().item()
                compiled[name] = f
            fns = {name: (lambda f=f: f(*case.args)) for name, f in compiled.items()}
            inner = args.inner * (20 if case.host_timed else 1)
            times = median_times(fns, args.rounds, inner, case.host_timed)
            for name, t in times.items():
                gbps = case.bytes / t / 1e9
                row = Row(case.name, case.shape, name, t * 1e3, gbps, 100 * case.bytes / t / copy,
                          times.get("inductor", float("nan")) / t, compile_s[name], errors[name],
                          errors[name] <= 1e-4 * max(1.0, want.abs().max().item()))
                rows.append(row)
                print(f"{case.name:18} {case.shape:14} {name:34} {row.ms * 1e3:9.1f} us  {gbps:7.0f} GB/s  "
                      f"{row.copy_pct:5.1f}% copy  x{row.vs_inductor:5.2f} vs inductor  compile {row.compile_s:5.1f} s  "
                      f"err {row.max_err:.1e}{'' if row.ok else ' WRONG'}", flush=True)
    return copy, rows


def markdown(copy: float, rows: list[Row]) -> str:
    lines = [
        f"Copy (128 MiB, read + write): {copy / 1e9:.0f} GB/s.",
        "",
        "| case | shape | contender | µs per call | GB/s | % of copy | vs Inductor | compile s | max err |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in rows:
        lines.append(f"| {r.case} | {r.shape} | {r.contender} | {r.ms * 1e3:.1f} | {r.gbps:.0f} | {r.copy_pct:.1f} | "
                     f"{r.vs_inductor:.2f}x | {r.compile_s:.1f} | {r.max_err:.1e}{'' if r.ok else ' WRONG'} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--modes", default="default", help="strata modes, comma-separated (default, reduce-overhead, max-autotune-no-cudagraphs, ...)")
    p.add_argument("--inductor-modes", default="default", help="Inductor modes, comma-separated ('' for none)")
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--inner", type=int, default=10)
    p.add_argument("--ablate", default="", help="strata code-generation features to turn off (triton_source.FEATURES)")
    p.add_argument("--out", default=None)
    a = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("gpu_kernels.py needs a CUDA GPU")
    from strata.codegen.triton_source import FEATURES

    for name in filter(None, a.ablate.split(",")):
        FEATURES[name] = False
    copy, rows = run(a)
    text = markdown(copy, rows)
    print(text)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "gpu_kernels.json"), "w") as f:
            json.dump({"copy_bytes_per_s": copy, "device": torch.cuda.get_device_name(), "rows": [asdict(r) for r in rows]}, f, indent=1)
        with open(os.path.join(a.out, "gpu_kernels.md"), "w") as f:
            f.write(text)
    if not all(r.ok for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
