"""Ahead-of-time packages: what packaging costs, what loading costs, and whether the
packaged program runs as fast as the JIT compile of the same model.

For each model: the packaging time with an empty kernel cache (every kernel compiled),
the package's size against its weights' bytes, a fresh process's import + load time and
its first call (nothing compiles there), and the steady per-call time of eager, strata's
JIT (torch.compile backend="strata") and the package, timed in interleaved rounds in
one process (medians). `--aoti` adds AOTInductor (torch._inductor.aoti_compile_and_package)
on the same exported programs, in a process of its own per model (with eager timed
again there: compare aoti_ms with aoti_eager_ms).

    python benchmarks/aot_package.py [--device cuda] [--aoti] [--models mlp,gpt,cnn,gpt2_small,resnet18]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch.export import Dim, export

sys.path.insert(0, str(Path(__file__).resolve().parent))
from timing import interleaved_medians  # noqa: E402

import strata  # noqa: E402
import strata.aot  # noqa: E402
from strata.testing.aot_models import GPT, cases  # noqa: E402

_FRESH = """
import sys, time, json
t0 = time.perf_counter()
import torch, strata.aot
t1 = time.perf_counter()
run = strata.aot.load_package(sys.argv[1], device=sys.argv[3])
t2 = time.perf_counter()
args = torch.load(sys.argv[2])
args = [a.to(sys.argv[3]) for a in args]
run(*args)
if sys.argv[3] == "cuda": torch.cuda.synchronize()
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "first_call_s": t3 - t2,
                  "compiler_modules": sorted(m for m in sys.modules if m.startswith(("xdsl", "torch._dynamo", "strata.passes")))}))
"""


def models(names: list[str], device: str):
    chosen = {c.name: c for c in cases()}
    if "gpt2_small" in names:  # GPT-2's shapes at 6 layers (d 768, 12 heads, vocab 50257)
        batch, seq = Dim("batch", min=1, max=8), Dim("seq", min=2, max=512)
        chosen["gpt2_small"] = type(chosen["gpt"])(
            "gpt2_small", GPT(vocab=50257, d=768, heads=12, layers=6, block=512).eval(),
            (torch.randint(0, 50257, (2, 64)),), {"idx": {0: batch, 1: seq}}, [(torch.randint(0, 50257, (4, 128)),)])
    if "resnet18" in names:
        import torchvision

        chosen["resnet18"] = type(chosen["cnn"])(
            "resnet18", torchvision.models.resnet18().eval(), (torch.randn(2, 3, 224, 224),),
            {"x": {0: Dim("batch", min=1, max=32)}}, [(torch.randn(8, 3, 224, 224),)])
    for name in names:
        case = chosen[name]
        case.model.to(device)
        case.example = tuple(a.to(device) for a in case.example)
        case.checks = [tuple(a.to(device) for a in args) for args in case.checks]
        yield case


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--models", default="mlp,gpt,cnn,gpt2_small")
    parser.add_argument("--aoti", action="store_true", help="also AOTInductor on the same exported programs")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--out", default=None, help="write the rows as JSON here")
    parser.add_argument("--aoti-child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.aoti_child:
        return aoti_child(args.aoti_child, args.device, args.rounds)
    folder = Path(tempfile.mkdtemp(prefix="strata-aot-"))
    os.environ["STRATA_CACHE_DIR"] = str(folder / "cache")  # packaging compiles every kernel
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    rows = []
    for case in models(args.models.split(","), args.device):
        with torch.no_grad():
            ep = export(case.model, case.example, dynamic_shapes=case.dynamic_shapes)
        path = folder / f"{case.name}.strata"
        _stage(case.name, "packaging")
        start = time.perf_counter()
        strata.aot.compile_and_package(ep, path)
        package_s = time.perf_counter() - start
        weight_bytes = sum(t.numel() * t.element_size() for t in case.model.state_dict().values())
        inputs = case.checks[-1]
        torch.save([a.cpu() for a in inputs], folder / f"{case.name}.pt")
        _stage(case.name, "loading in a fresh process")
        fresh = json.loads(subprocess.run(
            [sys.executable, "-c", _FRESH, str(path), str(folder / f"{case.name}.pt"), args.device],
            capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1])
        _stage(case.name, "timing")
        run = strata.aot.load_package(path)
        jit = strata.compile(case.model, dynamic=True)
        with torch.no_grad():
            want = case.model(*inputs)
            error = (run(*inputs) - want).abs().max().item()
            fns = {"eager": lambda: case.model(*inputs), "strata jit": lambda: jit(*inputs), "package": lambda: run(*inputs)}
            row = {"model": case.name, "package_s": package_s, "package_mib": path.stat().st_size / 2**20,
                   "weights_mib": weight_bytes / 2**20, **fresh, "max_error": error}
            try:
                jit(*inputs)
            except Exception as e:  # a JIT failure is a row of its own, not the end of the run
                row["jit_error"] = f"{type(e).__name__}: {str(e)[:200]}"
                del fns["strata jit"]
            times = interleaved_medians(fns, rounds=args.rounds, sync=sync)
        row.update({f"{k}_ms": v * 1e3 for k, v in times.items()})
        if args.aoti:  # in a process of its own: AOTInductor and strata's Triton kernels apart
            _stage(case.name, "AOTInductor")
            child = subprocess.run([sys.executable, __file__, "--aoti-child", case.name, "--device", args.device,
                                    "--rounds", str(args.rounds)], capture_output=True, text=True)
            lines = child.stdout.strip().splitlines()
            row.update(json.loads(lines[-1]) if child.returncode == 0 and lines else
                       {"aoti_error": (child.stderr or "no output")[-300:]})
        rows.append(row)
        print(json.dumps(row), flush=True)
    _table(rows)
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1))


def aoti_child(name: str, device: str, rounds: int) -> None:
    """AOTInductor's packaging time, size and per-call time (and eager's, in the same
    process) for one model, as one JSON line."""
    case = next(models([name], device))
    folder = Path(tempfile.mkdtemp(prefix="strata-aoti-"))
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(folder / "inductor"))  # a cold compile
    inputs = case.checks[-1]
    with torch.no_grad():
        ep = export(case.model, case.example, dynamic_shapes=case.dynamic_shapes)
        start = time.perf_counter()
        path = torch._inductor.aoti_compile_and_package(ep, package_path=str(folder / f"{name}.pt2"))
        row = {"aoti_package_s": time.perf_counter() - start, "aoti_mib": Path(path).stat().st_size / 2**20}
        aoti = torch._inductor.aoti_load_package(path)
        row["aoti_max_error"] = (aoti(*inputs) - case.model(*inputs)).abs().max().item()
        sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
        times = interleaved_medians({"eager": lambda: case.model(*inputs), "aoti": lambda: aoti(*inputs)},
                                    rounds=rounds, sync=sync)
    row.update({"aoti_ms": times["aoti"] * 1e3, "aoti_eager_ms": times["eager"] * 1e3})
    print(json.dumps(row), flush=True)


def _stage(model: str, what: str) -> None:
    print(f"{model}: {what}", file=sys.stderr, flush=True)


def _table(rows: list[dict]) -> None:
    cols = ["model", "package_s", "package_mib", "weights_mib", "load_s", "first_call_s", "eager_ms", "strata jit_ms",
            "package_ms", "aoti_package_s", "aoti_mib", "aoti_eager_ms", "aoti_ms"]
    cols = [c for c in cols if any(c in r for r in rows)]
    print("| " + " | ".join(cols) + " |")
    print("|" + " --- |" * len(cols))
    for r in rows:
        print("| " + " | ".join(_fmt(r.get(c)) for c in cols) + " |")


def _fmt(v) -> str:
    return "" if v is None else v if isinstance(v, str) else f"{v:.3g}"


if __name__ == "__main__":
    main()
