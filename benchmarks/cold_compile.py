"""Where a cold compile's time goes: one model's first call under Inductor and strata,
with empty disk caches, as the model suite times it (after both compilers' one-time
imports), then strata's first call again under cProfile, its time split into phases.

    python benchmarks/cold_compile.py --model gpt_block --dtype bf16 [--device cuda] [--top 25]

The phases are inclusive times of the functions named in PHASES (the main thread's:
Triton kernels that strata compiles side by side show as the time the main thread
waits for them). cProfile slows Python-heavy phases, so the profiled total is above the
plain one; the shares, not the seconds, are what it tells.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time
import warnings

# Empty caches before anything reads their locations.
_CACHES = tempfile.mkdtemp(prefix="strata-cold-")
for _var, _sub in (("STRATA_CACHE_DIR", "strata"), ("TORCHINDUCTOR_CACHE_DIR", "inductor"), ("TRITON_CACHE_DIR", "triton")):
    os.environ[_var] = os.path.join(_CACHES, _sub)

import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import models  # noqa: E402
from model_suite import _release, cell_inputs, compile_with, configure_dynamo, entry_point, warm_up_compilers  # noqa: E402

# (phase, file suffix, function name): cProfile's inclusive time of each.
PHASES = (
    ("Dynamo frame compile (all)", "torch/_dynamo/convert_frame.py", "_compile"),
    ("  strata backend (all)", "frontend/backend.py", "strata"),
    ("    AOTAutograd (all)", "torch/_functorch/aot_autograd.py", "aot_module_simplified"),
    ("      strata compile_graph", "frontend/compile_graph.py", "_compile"),
    ("        import to aten", "frontend/importer.py", "import_graph"),
    ("        pass pipeline", "frontend/compile_graph.py", "run_pipeline"),
    ("        kernel generation", "codegen/triton_gpu.py", "compile_kernel"),
    ("        Triton precompile (wait)", "codegen/triton_precompile.py", "precompile"),
    ("  guards", "torch/_dynamo/guards.py", "__init__"),
    ("first call of the graph", "runtime/compiled_graph.py", "__call__"),
)


def first_call(fn, inputs, device: str) -> float:
    start = time.perf_counter()
    with torch.no_grad():
        fn(*inputs)
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def phases(stats: pstats.Stats) -> list[tuple[str, float, int]]:
    rows = []
    for label, suffix, name in PHASES:
        total, calls = 0.0, 0
        for (file, _line, func), (_cc, nc, _tt, ct, _callers) in stats.stats.items():
            if func == name and file.replace(os.sep, "/").endswith(suffix):
                total, calls = total + ct, calls + nc
        rows.append((label, total, calls))
    return rows


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--small", action="store_true")
    p.add_argument("--top", type=int, default=25, help="functions listed by inclusive time")
    a = p.parse_args()
    warnings.filterwarnings("ignore")
    configure_dynamo()
    warm_up_compilers(a.device)
    case = models.build(a.model, a.device, a.small)
    inputs = cell_inputs(case, a.dtype)
    print(f"{a.model} {a.dtype} on {a.device} ({case.shape}); caches in {_CACHES}")
    for compiler in ("inductor", "strata"):
        _release(a.device)
        seconds = first_call(compile_with(compiler, entry_point(case.module, a.dtype, a.device)), inputs, a.device)
        print(f"cold first call, {compiler}: {seconds:.2f} s")
    # strata again, profiled: its caches are warm now, so give it new ones.
    os.environ["STRATA_CACHE_DIR"] = os.path.join(_CACHES, "strata-profiled")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(_CACHES, "triton-profiled")
    _release(a.device)
    fn = compile_with("strata", entry_point(case.module, a.dtype, a.device))
    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    first_call(fn, inputs, a.device)
    profiler.disable()
    total = time.perf_counter() - start
    stats = pstats.Stats(profiler)
    print(f"\nstrata, profiled: {total:.2f} s")
    for label, seconds, calls in phases(stats):
        print(f"  {label:34} {seconds:7.3f} s  {100 * seconds / total:5.1f}%  ({calls} calls)")
    print()
    stats.sort_stats("cumulative").print_stats(a.top)


if __name__ == "__main__":
    main()
