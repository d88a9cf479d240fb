"""The CPU suite: eager vs TorchInductor (C++/OpenMP) vs strata (LLVM), in one process.

    python benchmarks/cpu_suite.py                  # speed, all cases
    python benchmarks/cpu_suite.py --only softmax   # one case
    python benchmarks/cpu_suite.py --compile-times  # also: cold and warm compiles, new processes

Sized for a 2-core machine. Kernels (memory- and math-bound single kernels) and small
models, each run on the same inputs by the three contenders. For each case:

1. compile, timed from `compile(fn)` to the first result, in this process (caches
   empty at the start of the run: fresh STRATA_CACHE_DIR and TORCHINDUCTOR_CACHE_DIR;
   both compilers' one-time imports paid beforehand on a toy function);
2. the results checked against eager (within rtol = atol = 1e-4, as benchmarks/suite.py
   does), and both against the same computation in float64: a sum of 2048 floats
   is off the exact sum by ~2e-5 in eager itself, more than assert_close's f32
   tolerances allow, so the f64 errors show which of the two is closer;
3. time per call in interleaved rounds (eager, inductor, strata, eager, …; the median
   of each): the machine is shared and noisy, so only side-by-side ratios count.

With --compile-times, each case is compiled in fresh processes (imports not counted,
everything else is: Dynamo, AOTAutograd, the compiler, loading the code, the first
run): *cold*, with empty caches of its own, by strata, by Inductor, and by a backend
that stops after AOTAutograd (`torch front`: Dynamo and AOTAutograd with Core ATen
decompositions, the part of every compile that is torch's); then *warm*, by strata and
Inductor again, with the caches the cold compiles left (strata's disk cache; Inductor's
FX graph and code caches).
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import asdict, dataclass

if __name__ == "__main__" and "--child" not in sys.argv:
    # Empty caches for this whole run (set before torch reads them).
    _tmp = tempfile.mkdtemp(prefix="strata-cpu-suite-")
    os.environ.setdefault("STRATA_CACHE_DIR", os.path.join(_tmp, "strata"))
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(_tmp, "inductor"))

import torch  # noqa: E402
from torch import nn  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from timing import interleaved_medians  # noqa: E402

import strata  # noqa: E402
from strata.testing.models import GeluMLP, TransformerBlock, layer_norm, pointwise_chain, softmax_rows  # noqa: E402


def sum_dim0(x):
    return x.sum(dim=0)


class ConvBlock(nn.Module):
    """A ResNet basic block (inference): conv-bn-relu-conv-bn, residual add, relu."""

    def __init__(self, c: int):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(x + self.bn2(self.conv2(y)))


def cases():
    """(name, kind, fn, args, shape text), built on first use (same seed every run)."""
    torch.manual_seed(0)
    n, d = 2048, 1024
    x, y = torch.randn(n, d), torch.randn(n, d)
    yield "pointwise_chain", "kernel", pointwise_chain, (x, y), f"({n}, {d})"
    yield "softmax", "kernel", softmax_rows, (x,), f"({n}, {d})"
    yield "softmax_transposed", "kernel", softmax_rows, (torch.randn(d, n).t(),), f"({n}, {d}) (t)"
    yield "layer_norm", "kernel", layer_norm, (x, torch.randn(d), torch.randn(d)), f"({n}, {d})"
    yield "sum_dim0", "kernel", sum_dim0, (x,), f"({n}, {d})"
    mlp = GeluMLP(256, 1024).eval()
    yield "gelu_mlp", "model", mlp, (torch.randn(1024, 256),), "d=256, 1024 tokens"
    block = TransformerBlock(192, 12).eval()
    yield "gpt_block", "model", block, (torch.randn(2, 256, 192),), "d=192, t=256, b=2"
    conv = ConvBlock(64).eval()
    for bn in (conv.bn1, conv.bn2):  # non-trivial running statistics
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 2.0)
    yield "resnet_block", "model", conv, (torch.randn(8, 64, 28, 28),), "c=64, 28x28, b=8"


@dataclass
class Result:
    name: str
    kind: str
    shape: str
    eager_ms: float
    inductor_ms: float
    strata_ms: float
    strata_compile_s: float
    inductor_compile_s: float
    max_abs_err: float
    ok: bool
    strata_err_f64: float = float("nan")
    eager_err_f64: float = float("nan")
    cold_strata_s: float | None = None
    cold_inductor_s: float | None = None
    front_s: float | None = None
    warm_strata_s: float | None = None
    warm_inductor_s: float | None = None

    @property
    def strata_vs_eager(self) -> float:
        return self.eager_ms / self.strata_ms

    @property
    def inductor_vs_eager(self) -> float:
        return self.eager_ms / self.inductor_ms

    @property
    def inductor_over_strata(self) -> float:
        return self.inductor_ms / self.strata_ms


def _first_call(make, fn, args):
    torch._dynamo.reset()
    start = time.perf_counter()
    compiled = make(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = compiled(*args)
    return compiled, out, time.perf_counter() - start


def _inductor(fn):
    return torch.compile(fn, backend="inductor")


def _front_only(fn):
    """Dynamo + AOTAutograd with Core ATen decompositions, then the FX graph as is."""
    from torch._decomp import core_aten_decompositions
    from torch._dynamo.backends.common import aot_autograd

    return torch.compile(fn, backend=aot_autograd(fw_compiler=lambda gm, _: gm.forward, decompositions=core_aten_decompositions()))


def _warm_up_compilers() -> None:
    """Pays each compiler's one-time imports on a toy function (not on the first case)."""
    toy = torch.randn(8, 8)
    for make in (strata.compile, _inductor):
        _first_call(make, lambda t: (t * 2).sum(-1), (toy,))


def run(only: set[str] | None, rounds: int) -> list[Result]:
    results = []
    _warm_up_compilers()
    with torch.no_grad():
        for name, kind, fn, args, shape in cases():
            if only and name not in only:
                continue
            strata_fn, got, strata_s = _first_call(strata.compile, fn, args)
            inductor_fn, _, inductor_s = _first_call(_inductor, fn, args)
            want = fn(*args)
            err = (got - want).abs().max().item()
            ok = bool(torch.allclose(got, want, rtol=1e-4, atol=1e-4))
            exact = _in_float64(fn, args)
            med = interleaved_medians(
                {"eager": lambda: fn(*args), "inductor": lambda: inductor_fn(*args), "strata": lambda: strata_fn(*args)},
                rounds=rounds,
            )
            r = Result(name, kind, shape, med["eager"] * 1e3, med["inductor"] * 1e3, med["strata"] * 1e3, strata_s, inductor_s, err, ok)
            r.strata_err_f64 = (got.double() - exact).abs().max().item()
            r.eager_err_f64 = (want.double() - exact).abs().max().item()
            print(
                f"{name:20} {shape:22} eager {r.eager_ms:8.3f} ms  inductor {r.inductor_ms:8.3f}  strata {r.strata_ms:8.3f}  "
                f"inductor/strata x{r.inductor_over_strata:5.2f}  strata vs eager x{r.strata_vs_eager:5.2f}  "
                f"compile {strata_s:.2f} / {inductor_s:.2f} s  err {err:.1e} {'ok' if ok else 'WRONG'} "
                f"(vs f64: strata {r.strata_err_f64:.1e}, eager {r.eager_err_f64:.1e})",
                flush=True,
            )
            results.append(r)
    return results


def _in_float64(fn, args) -> torch.Tensor:
    """fn computed in float64 (a module on a float64 copy of itself)."""
    if isinstance(fn, nn.Module):
        fn = copy.deepcopy(fn).double()
    return fn(*[a.double() if isinstance(a, torch.Tensor) else a for a in args])


# ---------------------------------------------------------------- warm compile, new process
# What each compiler imports on its first compile (timed apart: module imports are paid
# once per process, whatever is compiled).
_COMPILER_MODULES = {
    "strata": ("strata.frontend.backend", "strata.frontend.compile_graph", "strata.codegen.llvm_cpu", "strata.passes.registry"),
    "inductor": ("torch._inductor.compile_fx",),
    "front": ("torch._functorch.aot_autograd",),
}


def _child(name: str, compiler: str) -> None:
    """In a fresh process: the first-call time of one case with one compiler, after the
    compiler's modules are imported (that import timed apart)."""
    import importlib

    start = time.perf_counter()
    for module in _COMPILER_MODULES[compiler]:
        importlib.import_module(module)
    imports = time.perf_counter() - start
    make = {"strata": strata.compile, "inductor": _inductor, "front": _front_only}[compiler]
    for case_name, _, fn, args, _ in cases():
        if case_name == name:
            with torch.no_grad():
                _, _, seconds = _first_call(make, fn, args)
            print(json.dumps({"seconds": seconds, "imports": imports}))
            return
    raise SystemExit(f"no case {name}")


def _in_new_process(name: str, compiler: str, caches: str) -> float:
    env = dict(os.environ, STRATA_CACHE_DIR=os.path.join(caches, "strata"), TORCHINDUCTOR_CACHE_DIR=os.path.join(caches, "inductor"))
    out = subprocess.run([sys.executable, __file__, "--child", name, compiler], capture_output=True, text=True, env=env)
    if out.returncode:
        print(f"{name}: the compile with {compiler} in a new process failed:\n{out.stderr[-2000:]}", flush=True)
        return float("nan")
    answer = json.loads(out.stdout.strip().splitlines()[-1])
    _imports.setdefault(compiler, []).append(answer["imports"])
    return answer["seconds"]


_imports: dict[str, list[float]] = {}


def add_compile_times(results: list[Result]) -> None:
    for r in results:
        root = tempfile.mkdtemp(prefix=f"strata-cpu-suite-{r.name}-")
        strata_caches, inductor_caches, front_caches = (os.path.join(root, k) for k in ("strata", "inductor", "front"))
        r.cold_strata_s = _in_new_process(r.name, "strata", strata_caches)
        r.cold_inductor_s = _in_new_process(r.name, "inductor", inductor_caches)
        r.front_s = _in_new_process(r.name, "front", front_caches)
        r.warm_strata_s = _in_new_process(r.name, "strata", strata_caches)
        r.warm_inductor_s = _in_new_process(r.name, "inductor", inductor_caches)
        print(
            f"{r.name:20} new process: cold strata {r.cold_strata_s:.2f} s, inductor {r.cold_inductor_s:.2f} s "
            f"(ratio {r.cold_strata_s / r.cold_inductor_s:.2f}); torch front {r.front_s:.2f} s; "
            f"warm strata {r.warm_strata_s:.2f} s, inductor {r.warm_inductor_s:.2f} s",
            flush=True,
        )


# ---------------------------------------------------------------- report
_LOAD = [float("nan")]


def geomean(xs) -> float:
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def markdown(results: list[Result]) -> str:
    lines = [
        f"{torch.get_num_threads()} threads; load average {_LOAD[0]:.2f} at the start, {os.getloadavg()[0]:.2f} at the end.",
        "",
        "| case | shape | eager ms | inductor ms | strata ms | inductor ÷ strata | strata vs eager | inductor vs eager "
        "| cold compile s (strata / inductor) | max err vs eager | err vs f64 (strata / eager) |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        lines.append(
            f"| {r.name} | {r.shape} | {r.eager_ms:.3f} | {r.inductor_ms:.3f} | {r.strata_ms:.3f} | "
            f"{r.inductor_over_strata:.2f}x | {r.strata_vs_eager:.2f}x | {r.inductor_vs_eager:.2f}x | "
            f"{r.strata_compile_s:.2f} / {r.inductor_compile_s:.2f} | {r.max_abs_err:.1e}{'' if r.ok else ' WRONG'} | "
            f"{r.strata_err_f64:.1e} / {r.eager_err_f64:.1e} |"
        )
    for kind in ("kernel", "model"):
        rs = [r for r in results if r.kind == kind]
        if rs:
            lines.append(
                f"| **{kind} geomean** | | | | | **{geomean(r.inductor_over_strata for r in rs):.2f}x** | "
                f"{geomean(r.strata_vs_eager for r in rs):.2f}x | {geomean(r.inductor_vs_eager for r in rs):.2f}x | "
                f"{geomean(r.strata_compile_s / r.inductor_compile_s for r in rs):.2f} (ratio) | | |"
            )
    if any(r.cold_strata_s is not None for r in results):
        lines += [
            "",
            "Each compiler's modules are imported before the clock starts (median import time, s: "
            + ", ".join(f"{k} {sorted(v)[len(v) // 2]:.2f}" for k, v in _imports.items())
            + ").",
            "",
            "| case (new process each) | cold: strata s | cold: inductor s | strata ÷ inductor | torch front s (Dynamo + AOT) "
            "| cold strata − front s | warm: strata s | warm strata − front s | warm: inductor s |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in results:
            if r.cold_strata_s is not None:
                lines.append(
                    f"| {r.name} | {r.cold_strata_s:.2f} | {r.cold_inductor_s:.2f} | {r.cold_strata_s / r.cold_inductor_s:.2f} | "
                    f"{r.front_s:.2f} | {r.cold_strata_s - r.front_s:.2f} | {r.warm_strata_s:.2f} | "
                    f"{r.warm_strata_s - r.front_s:.2f} | {r.warm_inductor_s:.2f} |"
                )
    return "\n".join(lines) + "\n"


def main() -> None:
    if "--child" in sys.argv:
        i = sys.argv.index("--child")
        _child(sys.argv[i + 1], sys.argv[i + 2])
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--only", default=None, help="comma-separated case names")
    p.add_argument("--compile-times", action="store_true", help="also time cold and warm compiles in new processes")
    p.add_argument("--out", default=None, help="folder for cpu_suite.json and cpu_suite.md")
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    a = p.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    _LOAD[0] = os.getloadavg()[0]
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, load average {os.getloadavg()[0]:.2f}; "
          f"caches: {os.environ.get('STRATA_CACHE_DIR')}, {os.environ.get('TORCHINDUCTOR_CACHE_DIR')}", flush=True)
    results = run(set(a.only.split(",")) if a.only else None, a.rounds)
    if a.compile_times:
        add_compile_times(results)
    text = markdown(results)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "cpu_suite.json"), "w") as f:
            json.dump([asdict(r) for r in results], f, indent=1)
        with open(os.path.join(a.out, "cpu_suite.md"), "w") as f:
            f.write(text)
    print(text)
    if not all(r.ok for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
