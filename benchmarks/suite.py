"""Eager vs TorchInductor vs strata on the kernel and small-model suite, in one process.

    python benchmarks/suite.py --device cuda --out results/   # on the GPU machine
    python benchmarks/suite.py --device cpu --quick            # here

For each case: compile with both compilers (cold compile time), check strata against
eager (max abs error, and that the result is within tolerance), then time the three in
interleaved rounds (median). Writes suite.json and suite.md to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from dataclasses import asdict, dataclass

import torch

sys.path.insert(0, os.path.dirname(__file__))
from timing import interleaved_medians  # noqa: E402

import strata  # noqa: E402
from strata.testing.models import GeluMLP, TransformerBlock, layer_norm, pointwise_chain, softmax_rows  # noqa: E402


@dataclass
class Result:
    name: str
    shape: str
    eager_ms: float
    inductor_ms: float
    strata_ms: float
    strata_compile_s: float
    inductor_compile_s: float
    max_abs_err: float
    ok: bool

    @property
    def vs_eager(self) -> float:
        return self.eager_ms / self.strata_ms

    @property
    def vs_inductor(self) -> float:
        return self.inductor_ms / self.strata_ms


def cases(device: str, quick: bool):
    s = 4 if quick else 1
    big = (8192 // s, 4096 // s)
    x, y = torch.randn(*big, device=device), torch.randn(*big, device=device)
    yield "pointwise_chain", pointwise_chain, (x, y), f"{big}"
    yield "softmax", softmax_rows, (x,), f"{big}"
    yield "softmax_transposed", softmax_rows, (torch.randn(big[1], big[0], device=device).t(),), f"{big} (t)"
    w, b = torch.randn(big[1], device=device), torch.randn(big[1], device=device)
    yield "layer_norm", layer_norm, (x, w, b), f"{big}"
    torch.manual_seed(0)
    mlp = GeluMLP(1024 // s, 4096 // s).to(device).eval()
    yield "gelu_mlp", mlp, (torch.randn(4096 // s, 1024 // s, device=device),), f"d={1024 // s}"
    block = TransformerBlock(768 // s, 12).to(device).eval()
    yield "gpt_block", block, (torch.randn(8 // s, 256, 768 // s, device=device),), f"d={768 // s}, t=256"


def compile_timed(make, fn, args):
    torch._dynamo.reset()
    start = time.perf_counter()
    compiled = make(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = compiled(*args)
    sync(args)
    return compiled, out, time.perf_counter() - start


def sync(args):
    if any(isinstance(a, torch.Tensor) and a.is_cuda for a in args):
        torch.cuda.synchronize()


def run(device: str, quick: bool, rounds: int) -> list[Result]:
    results = []
    with torch.no_grad():
        for name, fn, args, shape in cases(device, quick):
            strata_fn, got, strata_s = compile_timed(strata.compile, fn, args)
            inductor_fn, _, inductor_s = compile_timed(lambda f: torch.compile(f, backend="inductor"), fn, args)
            want = fn(*args)
            err = (got - want).abs().max().item()
            ok = bool(torch.allclose(got, want, atol=1e-4, rtol=1e-4))
            med = interleaved_medians(
                {"eager": lambda: fn(*args), "inductor": lambda: inductor_fn(*args), "strata": lambda: strata_fn(*args)},
                rounds=rounds,
                sync=lambda: sync(args),
            )
            r = Result(name, shape, med["eager"] * 1e3, med["inductor"] * 1e3, med["strata"] * 1e3, strata_s, inductor_s, err, ok)
            print(f"{name:20} {shape:18} eager {r.eager_ms:8.3f} ms  inductor {r.inductor_ms:8.3f}  strata {r.strata_ms:8.3f}  "
                  f"x{r.vs_eager:5.2f} vs eager  x{r.vs_inductor:5.2f} vs inductor  err {err:.1e} {'ok' if ok else 'WRONG'}", flush=True)
            results.append(r)
    return results


def markdown(results: list[Result], device: str) -> str:
    lines = [
        f"| case ({device}) | shape | eager ms | inductor ms | strata ms | strata vs eager | strata vs inductor | compile s (strata / inductor) | max err |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        lines.append(
            f"| {r.name} | {r.shape} | {r.eager_ms:.3f} | {r.inductor_ms:.3f} | {r.strata_ms:.3f} | {r.vs_eager:.2f}x | "
            f"{r.vs_inductor:.2f}x | {r.strata_compile_s:.1f} / {r.inductor_compile_s:.1f} | {r.max_abs_err:.1e}{'' if r.ok else ' WRONG'} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--quick", action="store_true", help="quarter-size cases")
    p.add_argument("--rounds", type=int, default=30)
    p.add_argument("--out", default=None)
    a = p.parse_args()
    results = run(a.device, a.quick, a.rounds)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "suite.json"), "w") as f:
            json.dump([asdict(r) for r in results], f, indent=1)
        with open(os.path.join(a.out, "suite.md"), "w") as f:
            f.write(markdown(results, a.device))
    print(markdown(results, a.device))
    if not all(r.ok for r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
