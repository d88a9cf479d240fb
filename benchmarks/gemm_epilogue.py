"""Matrix products with epilogues under max-autotune: eager, TorchInductor and strata
side by side (issue: max-autotune for real), on a GPU.

    python benchmarks/gemm_epilogue.py --out results/                    # bf16, every shape
    python benchmarks/gemm_epilogue.py --dtypes tf32 --rows 1,512,16384

Cases: linear + bias + GELU and linear + residual add (x [M, K] times a weight [N, K],
K = N = 4096, M from one row to 16384), and bmm + scale (attention's scores,
[B, M, 128] × [B, 128, M]). dtypes: bf16, and fp32 with TF32 allowed in matmuls
(torch.backends.cuda.matmul.allow_tf32, as Inductor's warning tells users to set).
Both compilers run `--mode` (max-autotune: tuned products and CUDA graphs; with
max-autotune-no-cudagraphs each call's host work is timed too); each tunes at its
first call, and that compile time is recorded. Each result is checked against eager; then the
three are timed in interleaved rounds (CUDA events around `--inner` calls, median of
the rounds) and the ratios printed, with the geometric mean of strata over Inductor.
Every finished shape is appended to gemm.jsonl under --out, so a stopped run keeps
what it measured.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
import types

import torch
import torch.nn.functional as F

import strata

SIZE = 4096


def linear_gelu(x, w, b):
    return F.gelu(F.linear(x, w, b))


def linear_residual(x, w, r):
    return F.linear(x, w) + r


def bmm_scale(q, k):
    return torch.bmm(q, k.transpose(1, 2)) * 0.08838834764831845


def fresh(fn):
    """A copy of `fn` with its own code object, so that each contender compiles its own."""
    fresh.count = getattr(fresh, "count", 0) + 1
    code = fn.__code__.replace(co_name=f"{fn.__name__}_{fresh.count}")
    return types.FunctionType(code, fn.__globals__, None, fn.__defaults__, fn.__closure__)


def inputs(case: str, rows: int, dtype: torch.dtype) -> tuple:
    g = torch.Generator(device="cuda").manual_seed(rows)

    def rand(*shape, scale=1.0):
        return (torch.randn(*shape, device="cuda", generator=g) * scale).to(dtype)

    if case == "linear_gelu":
        return rand(rows, SIZE), rand(SIZE, SIZE, scale=SIZE ** -0.5), rand(SIZE)
    if case == "linear_residual":
        return rand(rows, SIZE), rand(SIZE, SIZE, scale=SIZE ** -0.5), rand(rows, SIZE)
    batch = max(1, 16384 // rows)
    return rand(batch, rows, 128), rand(batch, rows, 128, scale=128 ** -0.5)


CASES = {"linear_gelu": linear_gelu, "linear_residual": linear_residual, "bmm_scale": bmm_scale}


def time_all(fns: dict, rounds: int, inner: int) -> dict[str, float]:
    samples = {k: [] for k in fns}
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(rounds):
        for name, fn in fns.items():
            start.record()
            for _ in range(inner):
                fn()
            end.record()
            end.synchronize()
            samples[name].append(start.elapsed_time(end) / inner)
    return {k: statistics.median(v) for k, v in samples.items()}


def run_shape(case: str, rows: int, dtype_name: str, rounds: int, inner: int, mode: str) -> dict:
    dtype = torch.bfloat16 if dtype_name == "bf16" else torch.float32
    torch.backends.cuda.matmul.allow_tf32 = dtype_name == "tf32"
    torch._dynamo.reset()
    fn = CASES[case]
    args = inputs(case, rows, dtype)
    want = fn(*args)
    row = {"case": case, "rows": rows, "dtype": dtype_name, "mode": mode, "shape": [list(a.shape) for a in args]}
    return compare(fn, args, want, row, rounds, inner, mode)


def compare(fn, args: tuple, want: torch.Tensor, row: dict, rounds: int, inner: int, mode: str) -> dict:
    """Compiles `fn` with Inductor and strata in `mode`, checks each against `want`, and
    times eager and both in interleaved rounds; the results go into `row`."""
    runs = {"eager": lambda: fn(*args)}
    for name, compiled in (("inductor", torch.compile(fresh(fn), mode=mode, dynamic=False)),
                           ("strata", strata.compile(fresh(fn), mode=mode, dynamic=False))):
        t0 = time.perf_counter()
        try:
            got = compiled(*args)
            got = compiled(*args).clone()  # a CUDA graph records at a later call; its output is overwritten by the next
            torch.cuda.synchronize()
        except Exception as e:  # recorded, the run goes on
            row[f"{name}_error"] = f"{type(e).__name__}: {str(e)[:300]}"
            continue
        row[f"{name}_compile_s"] = round(time.perf_counter() - t0, 2)
        err = (got.float() - want.float()).abs().max().item()
        scale = want.float().abs().max().item() or 1.0
        row[f"{name}_max_rel_err"] = err / scale
        runs[name] = lambda compiled=compiled: compiled(*args)
    ms = time_all(runs, rounds, inner)
    row.update({f"{k}_ms": v for k, v in ms.items()})
    if "strata" in ms and "inductor" in ms:
        row["strata_vs_inductor"] = ms["inductor"] / ms["strata"]
    return row


def record(path: str, row: dict, label: str, ratios: list[float]) -> None:
    """Appends `row` to the jsonl at `path`, prints it, and keeps its ratio."""
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")
    ratio = row.get("strata_vs_inductor")
    if ratio:
        ratios.append(ratio)
    errs = " ".join(f"{c} err {row[f'{c}_max_rel_err']:.1e}" for c in ("inductor", "strata") if f"{c}_max_rel_err" in row)
    times = " ".join(f"{c} {row[f'{c}_ms']:.4f}" for c in ("eager", "inductor", "strata") if f"{c}_ms" in row)
    failed = " ".join(f"{c} FAILED {row[f'{c}_error']}" for c in ("inductor", "strata") if f"{c}_error" in row)
    print(f"{label}: {times} ms; strata/Inductor {ratio or float('nan'):.2f}x; {errs}; "
          f"compile {row.get('inductor_compile_s', '-')} / {row.get('strata_compile_s', '-')} s {failed}", flush=True)


def print_geomean(ratios: list[float], what: str) -> None:
    if ratios:
        geomean = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"geomean strata vs Inductor over {len(ratios)} {what}: {geomean:.3f}x "
              f"(min {min(ratios):.2f}x, max {max(ratios):.2f}x)", flush=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--rows", default="1,32,512,4096,16384", help="M of the linear cases (bmm: its M and N, with 16384/M batches)")
    p.add_argument("--dtypes", default="bf16", help="comma-separated, of bf16,tf32")
    p.add_argument("--mode", default="max-autotune", help="both compilers' mode (max-autotune, max-autotune-no-cudagraphs)")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--inner", type=int, default=10)
    p.add_argument("--out", default="gemm-results")
    a = p.parse_args()
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "gemm.jsonl")
    print(f"{torch.cuda.get_device_name()}: torch {torch.__version__}, mode {a.mode}", flush=True)
    ratios = []
    for dtype in a.dtypes.split(","):
        for case in a.cases.split(","):
            for rows in map(int, a.rows.split(",")):
                if case == "bmm_scale" and rows < 128:
                    continue  # attention scores of fewer than 128 queries: decode's, not this case's
                row = run_shape(case, rows, dtype, a.rounds, a.inner, a.mode)
                record(path, row, f"{a.mode} {dtype} {case} M={rows}", ratios)
    print_geomean(ratios, "shapes")


if __name__ == "__main__":
    sys.exit(main())
