"""The benchmark suite: eager vs TorchInductor vs strata, kernels and models, one command.

    python benchmarks/suite.py --device cuda --out results/        # on the GPU machine
    python benchmarks/suite.py --device cpu --small --out /tmp/s   # here: tiny models
    python benchmarks/suite.py --device cuda --only bert_base,gpt2 --dtypes bf16 --models-only

Two parts, in one process (each contender on the same inputs, timed in interleaved
rounds, median):

- kernels (GPU: benchmarks/gpu_kernels.py): the pointwise chain, softmax and layer norm
  at 4096x8192, 8192x4096 and 32768x1024 fp32, a transposed softmax, in GB/s and as a
  share of a device copy measured in the same run; the per-call overhead of one small
  pointwise op. On a CPU, the kernel cases of benchmarks/cpu_suite.py instead.
- models (benchmarks/model_suite.py, built by benchmarks/models.py): pointwise, softmax,
  layernorm, an MLP, a GPT block, resnet18, BERT-base, GPT-2 small and ViT-small, random
  weights, inference, fp32 and bf16 autocast: time, speedup over eager, strata vs
  Inductor, cold compile time (caches empty: this run's own cache folders), warm
  compile time (a second process with the same caches, fed each model as soon as this
  one has run it: --warm overlap, the default on a GPU host), peak memory, max error vs
  eager and whether it is within tolerance, geometric means per dtype. A model whose
  library is missing is skipped with a line saying so; a compiler that fails on a
  model is recorded as failed, with its reason, and the run goes on.

--train runs the training suite (benchmarks/train_suite.py, one forward and backward
a step, bf16 autocast by default) instead, with train_suite.py's options, and writes
train.md, train.json and train.png.

Writes suite.md, suite.json and suite.png (speedup over eager, a panel per dtype; drawn
with matplotlib: `pip install -e '.[bench]'`, else the run says so and goes on) to
--out, and the first two again after each model, so that a run stopped midway leaves
what it measured. --deadline (540 s on a GPU) keeps the whole run inside a 10-minute
limit: no model starts late, and the warm compiles stop in time. Exits 1 when a strata
result is wrong or strata failed on a model or kernel (after writing everything).
"""

from __future__ import annotations

import os
import sys
import tempfile

if __name__ == "__main__":
    # This run's own, empty caches (set before torch reads them), unless --cache-dir;
    # the warm-compile process inherits them.
    _root = sys.argv[sys.argv.index("--cache-dir") + 1] if "--cache-dir" in sys.argv else tempfile.mkdtemp(prefix="strata-suite-")
    for _var, _sub in (("STRATA_CACHE_DIR", "strata"), ("TORCHINDUCTOR_CACHE_DIR", "inductor"), ("TRITON_CACHE_DIR", "triton")):
        os.environ[_var] = os.path.join(_root, _sub)

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import platform  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from dataclasses import asdict  # noqa: E402

import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_suite  # noqa: E402
import chart  # noqa: E402
from model_suite import COMPILERS, CONTENDERS, DTYPES, TOLERANCES, Cell  # noqa: E402
from models import EXTRA_MODELS, MODELS  # noqa: E402

import strata  # noqa: E402


# ---------------------------------------------------------------- kernels
def run_kernels(device: str, rounds: int) -> dict:
    """The kernel suite: gpu_kernels.py on a GPU, cpu_suite.py's kernel cases on a CPU."""
    if device == "cuda":
        import gpu_kernels

        ns = argparse.Namespace(cases=",".join(gpu_kernels.CASES), shapes=",".join(gpu_kernels.SHAPES), modes="default",
                                inductor_modes="default", rounds=rounds, inner=10)
        copy, rows = gpu_kernels.run(ns)
        return {"copy_bytes_per_s": copy, "rows": [asdict(r) for r in rows], "markdown": gpu_kernels.markdown(copy, rows),
                "strata_ok": all(r.ok for r in rows if r.contender.startswith("strata"))}
    import cpu_suite

    cpu_suite._LOAD[0] = os.getloadavg()[0]  # its report prints the load average at the start
    results = cpu_suite.run({"pointwise_chain", "softmax", "softmax_transposed", "layer_norm"}, rounds)
    return {"rows": [asdict(r) for r in results], "markdown": cpu_suite.markdown(results), "strata_ok": all(r.ok for r in results)}


# ---------------------------------------------------------------- report
def geomean(xs) -> float | None:
    xs = [x for x in xs if x is not None and x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def geomeans(cells: list[Cell]) -> dict:
    out = {}
    for dtype in dict.fromkeys(c.dtype for c in cells):
        rows = [c for c in cells if c.dtype == dtype and c.skipped is None]
        out[dtype] = {
            "inductor_vs_eager": geomean(c.speedup("inductor") for c in rows),
            "strata_vs_eager": geomean(c.speedup("strata") for c in rows),
            "strata_vs_inductor": geomean(c.strata_vs_inductor for c in rows),
            "models": sum(1 for c in rows if c.strata_vs_inductor is not None),
        }
    return out


def _f(x, fmt: str, none: str = "-") -> str:
    return none if x is None or (isinstance(x, float) and not math.isfinite(x)) else format(x, fmt)


def _x(x) -> str:
    return _f(x, ".2f") + ("x" if x is not None else "")


def model_markdown(cells: list[Cell], device: str) -> str:
    lines = []
    means = geomeans(cells)
    for dtype in dict.fromkeys(c.dtype for c in cells):
        rtol, atol = TOLERANCES[dtype]
        tf32 = dtype == "fp32" and model_suite.tf32_on(device)
        what = ("fp32, TF32 allowed" if tf32 else "fp32") if dtype == "fp32" else "bf16 autocast (the pointwise, softmax and layernorm models also take bf16 inputs)"
        lines += [
            f"### {what} — tolerance vs eager: rtol {rtol:g}, atol {atol:g}"
            + (" (or as accurate as eager against the model in full fp32: error at most 1.5× eager's + 1e-3)" if dtype != "fp32" or tf32 else ""),
            "",
            "| model | inputs | eager ms | Inductor ms | strata ms | Inductor vs eager | strata vs eager | strata vs Inductor "
            "| cold compile s (Inductor / strata) | warm compile s (Dynamo alone / Inductor / strata) | peak MiB (eager / Inductor / strata) "
            "| max err (Inductor / strata) |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for c in cells:
            if c.dtype != dtype:
                continue
            if c.skipped:
                why = c.skipped.split(";")[0].replace("|", "/")
                lines.append(f"| {c.model} | skipped: {why} | | | | | | | | | | |")
                continue
            ms = [_f(c.ms.get(k), ".3f", "failed" if k in c.failed else "-") for k in CONTENDERS]
            cold = " / ".join(_f(c.compile_s.get(k), ".1f", "failed" if k in c.failed else "-") for k in COMPILERS)
            warm = " / ".join(_f(c.warm_compile_s.get(k), ".2f") for k in model_suite.WARM_COMPILERS)
            if c.warm_compile_s.get("strata") is not None and c.warm_compile_s["strata"] > 1.0:
                warm += " (> 1 s)"
            peak = " / ".join(_f(c.peak_mib.get(k), ".0f", "n/a" if device != "cuda" else "-") for k in CONTENDERS)
            err = " / ".join(
                (_f(c.max_err[k], ".1e") + ("" if c.ok.get(k) else " WRONG")) if k in c.max_err else ("failed" if k in c.failed else "-")
                for k in COMPILERS)
            lines.append(f"| {c.model} | {c.shape} | {' | '.join(ms)} | {_x(c.speedup('inductor'))} | {_x(c.speedup('strata'))} | "
                         f"{_x(c.strata_vs_inductor)} | {cold} | {warm} | {peak} | {err} |")
        g = means[dtype]
        lines += [f"| **geomean** ({g['models']} model{'' if g['models'] == 1 else 's'}) | | | | | {_x(g['inductor_vs_eager'])} | {_x(g['strata_vs_eager'])} | "
                  f"**{_x(g['strata_vs_inductor'])}** | | | | |", ""]
    lines += [
        "Speedups are eager's median time over the contender's; strata vs Inductor is Inductor's time over strata's "
        "(above 1: strata is faster). Cold compile: the first call in this process, from `torch.compile` to the first "
        "result, with caches empty at the start of the run (a kernel an earlier model compiled may already be cached). "
        "Warm compile: the same first call in a second process that finds this run's caches (strata's target: at most "
        "1 s); Dynamo alone: that process's first call of the model through Dynamo with the `eager` backend (the "
        "captured graph runs as it is, nothing compiled), the part of a warm compile every backend pays. Peak "
        "memory: torch.cuda.max_memory_allocated over one call, weights and inputs included.",
        "",
    ]
    notes = []
    for c in cells:
        for k, why in c.failed.items():
            notes.append(f"- {c.model} {c.dtype}: {k} failed: {why}")
        if c.strata_notes:
            notes.append(f"- {c.model} {c.dtype}: strata: " + "; ".join(c.strata_notes))
        if any(n != 1 for n in c.graphs.values()):
            notes.append(f"- {c.model} {c.dtype}: graphs Dynamo handed each compiler (1 unless graph breaks): "
                         + ", ".join(f"{k} {n}" for k, n in c.graphs.items()))
        if c.strata_warm_cache_writes:
            notes.append(f"- {c.model} {c.dtype}: the warm strata compile generated {c.strata_warm_cache_writes} kernel(s) the cache lacked")
    if notes:
        lines += ["Failures, and what strata ran eagerly (eager op: no lowering covers it; it runs as torch's kernel):", "", *notes, ""]
    return "\n".join(lines)


def chart_panels(cells: list[Cell]) -> list:
    panels = []
    for dtype in dict.fromkeys(c.dtype for c in cells):
        rows = [c for c in cells if c.dtype == dtype and c.skipped is None]
        if rows:
            series = {k: [(1.0 if c.ms.get("eager") else None) if k == "eager" else c.speedup(k) for c in rows] for k in CONTENDERS}
            panels.append((f"{dtype}{' autocast' if dtype != 'fp32' else ''}: speedup over eager (median time per call)",
                           [c.model for c in rows], series))
    return panels


def environment(device: str) -> dict:
    def version(module: str) -> str | None:
        try:
            return __import__(module).__version__
        except Exception:
            return None

    # $STRATA_COMMIT names the commit of a copy that is no checkout (an exported tree
    # inside another repository's work tree would report that repository's HEAD)
    commit = os.environ.get("STRATA_COMMIT")
    try:
        commit = commit or subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                          cwd=os.path.dirname(os.path.abspath(__file__))).stdout.strip() or None
    except OSError:
        commit = None
    return {
        "device": torch.cuda.get_device_name() if device == "cuda" else platform.processor() or platform.machine(),
        "torch": torch.__version__, "triton": version("triton"), "strata": strata.__version__, "commit": commit,
        "torchvision": version("torchvision"), "transformers": version("transformers"), "timm": version("timm"),
        "cpu_threads": torch.get_num_threads(), "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,
        "caches": {k: os.environ.get(k) for k in ("STRATA_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR")},
        "strata_options": model_suite.strata_options(),
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
    }


def write_outputs(out: str, env: dict, kernels: dict | None, cells: list[Cell], args, seconds: dict,
                  quiet: bool = False) -> str:
    """Writes suite.md, suite.json and (with models) suite.png; returns the Markdown."""
    head = (f"{env['device']}; torch {env['torch']}, triton {env['triton']}, strata {env['strata']} ({env['commit']}"
            + (f", options {json.dumps(env['strata_options'])}" if env.get("strata_options") else "")
            + (f", mode {env['mode']} for both compilers" if env.get("mode", "default") != "default" else "") + "); "
            f"{env['date']}; time: " + ", ".join(f"{k} {v:.0f} s" for k, v in seconds.items()) + ".")
    parts = [f"# strata benchmark suite ({args.device}{', small' if args.small else ''})", "", head, ""]
    if kernels is not None:
        parts += ["## Kernels", "", kernels["markdown"], ""]
    if cells:
        parts += ["## Models", "", model_markdown(cells, args.device)]
    text = "\n".join(parts)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "suite.md"), "w") as f:
        f.write(text)
    data = {
        "meta": {**env, "args": vars(args), "seconds": seconds,
                 "tolerances": {k: {"rtol": r, "atol": a} for k, (r, a) in TOLERANCES.items()}},
        "kernels": None if kernels is None else {k: v for k, v in kernels.items() if k != "markdown"},
        "models": [c.as_json() for c in cells],
        "geomean": geomeans(cells),
    }
    with open(os.path.join(out, "suite.json"), "w") as f:
        json.dump(data, f, indent=1, default=str)
    panels = chart_panels(cells)
    if panels and not quiet:  # quiet: a save along the way, without the chart
        print(chart.chart_step(os.path.join(out, "suite.png"), panels, f"strata vs Inductor vs eager, {env['device']}"[:60]), flush=True)
    return text


def main() -> None:
    if "--train" in sys.argv:  # the training suite instead, with its own options
        import train_suite

        sys.exit(train_suite.main([x for x in sys.argv[1:] if x != "--train"]))
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--small", "--quick", action="store_true", help="tiny models and batches (for a CPU)")
    p.add_argument("--only", default=None, help=f"comma-separated models (default: all of {', '.join(MODELS)})")
    p.add_argument("--dtypes", default=",".join(DTYPES), help="comma-separated, of fp32,bf16")
    part = p.add_mutually_exclusive_group()
    part.add_argument("--models-only", action="store_true")
    part.add_argument("--kernels-only", action="store_true")
    p.add_argument("--rounds", type=int, default=30, help="at most this many interleaved rounds a case")
    p.add_argument("--budget", type=float, default=None, help="seconds of timing a model cell (default 2 on cuda, 1 on cpu)")
    p.add_argument("--warm", choices=("overlap", "serial", "off"), default=None,
                   help="the warm-compile process: cell by cell beside the model suite (overlap, the default on cuda), "
                        "after it (serial, the default on cpu), or not at all")
    p.add_argument("--warm-timeout", type=float, default=300, help="seconds the warm compiles may take after the last cell")
    p.add_argument("--deadline", type=float, default=None,
                   help="seconds the whole run should take, imports aside: no model cell starts later than 60 s "
                        "(--warm overlap; serial 150 s, off 30 s) before it, and the warm compiles stop 10 s before it "
                        "(default 540 on cuda, none on cpu; 0: none)")
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    p.add_argument("--strata-options", default=None,
                   help='strata\'s compile options, as JSON (e.g. \'{"dynamo_cache": true}\'); the warm-compile process uses them too')
    p.add_argument("--mode", default=None, help="the torch.compile mode of both compilers' models (e.g. max-autotune)")
    p.add_argument("--tf32", action="store_true",
                   help="fp32 products and convolutions may use TF32 (torch.backends.cuda.matmul.allow_tf32), "
                        "in eager and both compilers; fp32 results are then judged against the model in full fp32")
    p.add_argument("--cache-dir", default=None, help="cache folder (default: a new, empty one)")
    p.add_argument("--out", default="suite-results", help="folder for suite.md, suite.json and suite.png (with matplotlib)")
    p.add_argument("--train", action="store_true", help="run benchmarks/train_suite.py instead (its options; see its --help)")
    a = p.parse_args()
    if a.strata_options is not None:
        from strata.frontend.options import resolve

        resolve(None, json.loads(a.strata_options))  # a typo stops the run now, not in each cell
        os.environ["STRATA_SUITE_OPTIONS"] = a.strata_options
    if a.mode:
        os.environ["STRATA_SUITE_MODE"] = a.mode
    if a.tf32:
        os.environ["STRATA_SUITE_TF32"] = "1"
        model_suite.allow_tf32_if_asked()
    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("--device cuda: no CUDA GPU here (use --device cpu --small)")
    models = a.only.split(",") if a.only else list(MODELS)
    unknown = [m for m in models if m not in MODELS and m not in EXTRA_MODELS]
    if unknown:
        sys.exit(f"unknown model(s) {', '.join(unknown)}; the suite's models are: {', '.join(MODELS)} "
                 f"(and, named with --only: {', '.join(EXTRA_MODELS)})")
    dtypes = a.dtypes.split(",")
    if any(d not in DTYPES for d in dtypes):
        sys.exit(f"--dtypes: each of {', '.join(DTYPES)}")
    budget = a.budget if a.budget is not None else (2.0 if a.device == "cuda" else 1.0)
    if a.threads:
        torch.set_num_threads(a.threads)
    env = environment(a.device)
    env["mode"] = a.mode or "default"
    print(f"{env['device']}: torch {env['torch']}, triton {env['triton']}, strata {env['strata']} ({env['commit']}); "
          f"caches under {os.path.dirname(os.environ.get('STRATA_CACHE_DIR', '?'))}", flush=True)
    start = time.perf_counter()
    deadline = a.deadline if a.deadline is not None else (540.0 if a.device == "cuda" else 0.0)
    end = start + deadline if deadline > 0 else None
    seconds: dict[str, float] = {}
    kernels, cells = None, []

    def save(cells_so_far: list[Cell]) -> str:  # after each part and each model cell: a stopped run leaves its results
        seconds.pop("total", None)
        seconds["total"] = time.perf_counter() - start
        return write_outputs(a.out, env, kernels, cells_so_far, a, seconds, quiet=True)

    if not a.models_only:
        try:
            kernels = run_kernels(a.device, a.rounds)
        except Exception as e:  # the kernel scripts stop at a compiler's failure: the models still run
            why = model_suite.reason(e)
            print(f"kernel suite failed: {why}", flush=True)
            kernels = {"error": why, "markdown": f"The kernel suite failed: {why}", "strata_ok": False}
        seconds["kernels"] = time.perf_counter() - start
        save([])
    if not a.kernels_only:
        t0 = time.perf_counter()
        warm_mode = a.warm or ("overlap" if a.device == "cuda" else "serial")
        warm = model_suite.WarmProcess(a.device, a.small, overlap=warm_mode == "overlap") if warm_mode != "off" else None

        def after_cell(cells_so_far: list[Cell]) -> None:
            if warm is not None:
                warm.submit(cells_so_far[-1])
            save(cells_so_far)

        # Cells stop starting in time to leave the warm compiles what they need after the last.
        stop_at = None if end is None else end - {"overlap": 60.0, "serial": 150.0, "off": 30.0}[warm_mode]
        cells = model_suite.run(models, dtypes, a.device, a.small, a.rounds, budget, stop_at=stop_at, after_cell=after_cell)
        seconds["models"] = time.perf_counter() - t0
        if warm is not None:
            timeout = a.warm_timeout if end is None else min(a.warm_timeout, end - time.perf_counter() - 10)
            seconds[f"warm compiles ({warm_mode})"] = warm.finish(cells, timeout)
    seconds.pop("total", None)
    seconds["total"] = time.perf_counter() - start
    text = write_outputs(a.out, env, kernels, cells, a, seconds)
    print(text)
    print(f"wrote {a.out}/suite.md, suite.json{', suite.png' if chart_panels(cells) and chart.available() else ''} in {seconds['total']:.0f} s", flush=True)
    bad = [f"{c.model} {c.dtype}" for c in cells if c.skipped is None and ("strata" in c.failed or not c.ok.get("strata", False))]
    if bad or (kernels is not None and not kernels["strata_ok"]):
        print(f"strata failed or was wrong on: {', '.join(bad) or 'a kernel case'}", flush=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
