"""Where a cold compile's time goes: one model's first call under Inductor and strata,
with empty disk caches, as the model suite times it (after both compilers' one-time
imports), and strata's, then strata's again with fresh caches (what a process that has
compiled before pays), and again with Triton's own launchers in place of torch's static
one, each split into phases.

    python benchmarks/cold_compile.py --model gpt_block --dtype bf16 [--device cuda]

A phase is the wall time spent inside one function (PHASES), its outermost calls only;
functions that run on strata's precompile threads (Triton's compiler, the launcher's C
build) are summed over the threads, so they can add up to more than the wall time.
The functions are wrapped, not profiled: the timed compile runs at full speed.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import os
import sys
import tempfile
import threading
import time
import warnings
from collections import defaultdict

# Empty caches before anything reads their locations.
_CACHES = tempfile.mkdtemp(prefix="strata-cold-")
for _var, _sub in (("STRATA_CACHE_DIR", "strata"), ("TORCHINDUCTOR_CACHE_DIR", "inductor"), ("TRITON_CACHE_DIR", "triton")):
    os.environ[_var] = os.path.join(_CACHES, _sub)

import torch  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
import models  # noqa: E402
from model_suite import _release, cell_inputs, compile_with, configure_dynamo, entry_point, warm_up_compilers  # noqa: E402

# (phase, module, attribute path): the function whose calls the phase times, patched
# where its callers look it up. A target this torch or Triton lacks is left out.
PHASES = (
    ("Dynamo frame compile (all)", "torch._dynamo.convert_frame", "_compile"),
    ("  AOTAutograd (all)", "torch._dynamo.backends.common", "aot_module_simplified"),
    ("    strata compile_graph", "strata.frontend.compile_graph", "_compile"),
    ("      import to aten", "strata.frontend.compile_graph", "import_graph"),
    ("      pass pipeline", "strata.frontend.compile_graph", "run_pipeline"),
    ("      kernel generation", "strata.codegen.triton_gpu", "compile_kernel"),
    ("      graph runtime set-up", "strata.runtime.compiled_graph", "CompiledGraph.__post_init__"),
    ("        Triton precompile (wait)", "strata.codegen.triton_precompile", "precompile"),
    ("  guards", "torch._dynamo.guards", "CheckFunctionManager.__init__"),
    ("graph calls", "strata.runtime.compiled_graph", "CompiledGraph.__call__"),
    ("Triton compile (all threads)", "triton.compiler", "compile"),
    ("launcher C build (all threads)", "triton.backends.nvidia.driver", "compile_module_from_src"),
)


class PhaseTimers:
    """Wraps each PHASES function while active; seconds[phase] and calls[phase]."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self._depth = threading.local()
        self._patched: list[tuple[object, str, object]] = []

    def _timed(self, phase: str, fn):
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            depth = getattr(self._depth, phase, 0)
            setattr(self._depth, phase, depth + 1)
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                setattr(self._depth, phase, depth)
                if depth == 0:  # recursion counted once
                    self.seconds[phase] += time.perf_counter() - start
                    self.calls[phase] += 1
        return timed

    def __enter__(self) -> PhaseTimers:
        for phase, module_name, path in PHASES:
            try:
                owner = importlib.import_module(module_name)
                *outer, name = path.split(".")
                for part in outer:
                    owner = getattr(owner, part)
                fn = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
            except (ImportError, AttributeError, KeyError):
                continue
            self._patched.append((owner, name, fn))
            setattr(owner, name, self._timed(phase, fn))
        return self

    def __exit__(self, *exc) -> None:
        for owner, name, fn in reversed(self._patched):
            setattr(owner, name, fn)


def first_call(fn, inputs, device: str) -> float:
    start = time.perf_counter()
    with torch.no_grad():
        fn(*inputs)
    if device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--model", required=True)
    p.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"])
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--small", action="store_true")
    a = p.parse_args()
    warnings.filterwarnings("ignore")
    configure_dynamo()
    warm_up_compilers(a.device)
    case = models.build(a.model, a.device, a.small)
    inputs = cell_inputs(case, a.dtype)
    print(f"{a.model} {a.dtype} on {a.device} ({case.shape}); caches in {_CACHES}")
    # Eager first, as in the suite: the libraries' first-use costs (cuBLAS's handles,
    # attention kernels' modules) are paid here, not by the first compiler.
    first_call(entry_point(case.module, a.dtype, a.device), inputs, a.device)
    _release(a.device)
    seconds = first_call(compile_with("inductor", entry_point(case.module, a.dtype, a.device)), inputs, a.device)
    print(f"cold first call, inductor: {seconds:.2f} s")
    runs = (("cold first call, strata", {}), ("strata again (new caches)", {}),
            ("strata again, Triton's launchers (STRATA_TRITON_STATIC=0)", {"STRATA_TRITON_STATIC": "0"}))
    for number, (run, env) in enumerate(runs):
        if number:  # strata's caches are warm now: new ones
            os.environ["STRATA_CACHE_DIR"] = os.path.join(_CACHES, f"strata-{number}")
            os.environ["TRITON_CACHE_DIR"] = os.path.join(_CACHES, f"triton-{number}")
        os.environ.update(env)
        _release(a.device)
        fn = compile_with("strata", entry_point(case.module, a.dtype, a.device))
        with PhaseTimers() as timers:
            total = first_call(fn, inputs, a.device)
        for k in env:
            del os.environ[k]
        print(f"{run}: {total:.2f} s")
        for phase, _, _ in PHASES:
            if phase in timers.calls:
                s = timers.seconds[phase]
                print(f"  {phase:34} {s:7.3f} s  {100 * s / total:5.1f}%  ({timers.calls[phase]} calls)")


if __name__ == "__main__":
    main()
