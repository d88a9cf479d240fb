"""The training suite: eager vs TorchInductor vs strata, one training step of each of the
nine models of benchmarks/models.py (forward and backward), bf16 autocast (and fp32), in
one process.

    python benchmarks/train_suite.py --device cuda --dtypes bf16 --out results/      # on the GPU machine
    python benchmarks/train_suite.py --device cpu --small --only mlp,gpt_block --out /tmp/t
    python benchmarks/suite.py --train ...                                          # the same

A training step is: zero the gradients (set to None, as optimizer.zero_grad() does),
the forward in train mode under autocast for bf16, a loss, the backward (outside
autocast). The loss is `out.float().square().mean()` of the model's output (the
transformers models' last_hidden_state; a ModelOutput's logits or last_hidden_state).
The optimizer step is not part of it: it stays out of the compiled region and out of
the timing, so the numbers are the forward and backward that each compiler compiles
(Dynamo hands both compilers the forward and loss; AOTAutograd derives the backward).
The kernel-like models (pointwise, softmax, layernorm) have few or no parameters, so
their inputs require gradients too, and count as parameters below.

Each contender trains its own copy of the model (copy.deepcopy of the same initial
weights), so that the gradients of its first step can be compared with eager's.
Dropout: models.py builds BERT and GPT-2 with every dropout probability of their
configs 0 (timm's ViT has 0 by default; the torchvision and hand-written models have no
dropout); a cell checks that no dropout or drop-path module with a probability above 0
is left, since random masks would make the gradients differ. Batch norm (resnet18) runs
in train mode: batch statistics, deterministic.

For each (model, dtype), a cell (model_suite.py's steps, for a training step):

1. eager's first step, then each compiler's first step (`torch.compile` to the end of
   the first backward, synchronized): the cold compile time, the disk caches empty at
   the start of the run (this run's own cache folders, as suite.py); a compiler that
   raises is recorded as failed, with its reason, and the cell goes on without it;
2. the first step's gradients against eager's: the relative error of each gradient,
   max |g - g_eager| / max |g_eager| (the denominator at least GRAD_FLOOR times the
   largest |g_eager| of the model, so that a gradient that is zero but for rounding,
   such as BERT's key biases, is not divided by its noise), the largest over all
   parameters. It passes within GRAD_TOLERANCE (model_suite.TOLERANCES' rtol: 1e-3
   fp32, 1.6e-2 bf16), or when it is as accurate as eager's against a reference step of
   the model in higher precision (fp32 for a bf16 cell, fp64 for fp32): its error
   against the reference at most 1.5x eager's + 1e-3 (model_suite.AS_ACCURATE_AS_EAGER).
   A compiler whose gradients fail both has its three worst parameters listed;
3. peak memory of one more step of each contender (torch.cuda.max_memory_allocated,
   every gradient freed and the peak reset before it; less the other two contenders'
   copies of the weights, so that it is what one model's training step holds: its
   weights, the inputs, activations, gradients, and what each compiler keeps; n/a on
   CPU);
4. ms per step: interleaved rounds (eager, inductor, strata, eager, ...), the median of
   each (CUDA events on a GPU, the host clock on a CPU), rounds sized so that a cell's
   timing takes about --budget seconds (model_suite.timed).

Writes train.md, train.json and train.png (speedup over eager; drawn with matplotlib:
`pip install -e '.[bench]'`, else the run says so and goes on) to --out, the first two
again after each cell. --deadline (420 s on a GPU) stops starting new cells after that
many seconds, so that the run fits a 10-minute limit; cells not run are listed as such
(the nine models in bf16 took 372 s on an H200, the largest cells about 90 s each).
Exits 1 when strata failed on a cell or its gradients did not match (after writing).
"""

from __future__ import annotations

import os
import sys
import tempfile

if __name__ == "__main__":
    # This run's own, empty caches (set before torch reads them), unless --cache-dir.
    _root = sys.argv[sys.argv.index("--cache-dir") + 1] if "--cache-dir" in sys.argv else tempfile.mkdtemp(prefix="strata-train-")
    for _var, _sub in (("STRATA_CACHE_DIR", "strata"), ("TORCHINDUCTOR_CACHE_DIR", "inductor"), ("TRITON_CACHE_DIR", "triton")):
        os.environ[_var] = os.path.join(_root, _sub)

import argparse  # noqa: E402
import copy  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402

import torch  # noqa: E402
from torch import nn  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import model_suite  # noqa: E402
import suite  # noqa: E402
import chart  # noqa: E402
from model_suite import (AS_ACCURATE_AS_EAGER, COMPILERS, CONTENDERS, DTYPES, TOLERANCES, Cell, cell_inputs,  # noqa: E402
                         entry_point, first_call, peak_mib, reason, summary_line, sync, timed)
from models import MODELS, Function, MissingLibrary, build  # noqa: E402

# Largest relative error of the first step's gradients against eager's: model_suite's
# rtol for outputs (1e-3 fp32, 1.6e-2 bf16), applied to max|g - g_eager| / max|g_eager|.
GRAD_TOLERANCE = {dtype: rtol for dtype, (rtol, _) in TOLERANCES.items()}
# The relative error's denominator is at least this times the largest |gradient| of the
# model: a gradient that is zero up to rounding (a key bias: softmax ignores a shift
# along the keys) is measured against the model's scale, not its own noise.
GRAD_FLOOR = 1e-3
# The reference for the as-accurate-as-eager rule: the same step, eager, in this dtype.
REFERENCE_DTYPE = {"fp32": torch.float64, "bf16": torch.float32}
LOSS = "out.float().square().mean()"


@dataclass
class TrainCell(Cell):
    """model_suite.Cell for a training step: ms per step, compile_s of the first step,
    max_err the gradients' relative error against eager's, ok whether it passes."""

    loss: dict = field(default_factory=dict)  # contender -> the first step's loss
    grads: int = 0  # gradient tensors compared (parameters, and inputs of the kernel models)
    reference: str | None = None  # "fp32 model" / "fp64 model" when the as-accurate rule was needed
    reference_err: dict = field(default_factory=dict)  # contender -> gradients' relative error vs the reference
    worst_grads: dict = field(default_factory=dict)  # compiler -> its three worst gradients vs eager's, in words

    def as_json(self) -> dict:
        out = super().as_json()
        for key in ("warm_compile_s", "strata_warm_cache_writes"):  # no warm-compile process here
            out.pop(key, None)
        return out


# ---------------------------------------------------------------- the training step
class WithLoss(nn.Module):
    """The model and its loss: what each compiler compiles (under autocast, through
    model_suite.entry_point)."""

    def __init__(self, model: nn.Module):
        super().__init__()
        self.model = model

    def forward(self, *args):
        return loss_of(self.model(*args))


def loss_of(out) -> torch.Tensor:
    if not isinstance(out, torch.Tensor):  # a ModelOutput, or a tuple
        out = getattr(out, "logits", None) if getattr(out, "logits", None) is not None else (
            getattr(out, "last_hidden_state", None) if getattr(out, "last_hidden_state", None) is not None else out[0])
    return out.float().square().mean()


def active_dropout(module: nn.Module) -> list[str]:
    """Modules that would draw random masks in train mode."""
    found = []
    for name, m in module.named_modules():
        p = m.p if isinstance(m, nn.modules.dropout._DropoutNd) else getattr(m, "drop_prob", 0.0) if "DropPath" in type(m).__name__ else 0.0
        if p and p > 0:
            found.append(f"{name or type(m).__name__} (p={p})")
    return found


def leaves(inputs: tuple, kernel_model: bool) -> tuple:
    """The inputs; a kernel model's floating-point ones as leaves requiring gradients."""
    if not kernel_model:
        return inputs
    return tuple(x.detach().clone().requires_grad_(True) if x.is_floating_point() else x for x in inputs)


class Contender:
    """One contender's copy of the model, its function (eager or compiled) and its step."""

    def __init__(self, module: nn.Module, inputs: tuple, fn=None):
        self.module, self.inputs, self.fn = module, inputs, fn
        self.params = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        self.input_leaves = [(f"input{i}", x) for i, x in enumerate(inputs) if isinstance(x, torch.Tensor) and x.requires_grad]

    def zero_grad(self) -> None:
        for _, t in self.params + self.input_leaves:
            t.grad = None

    def step(self) -> torch.Tensor:
        """Zero the gradients, forward and loss, backward. The optimizer is not part of it."""
        self.zero_grad()
        loss = self.fn(*self.inputs)
        loss.backward()
        return loss

    def grads(self) -> dict[str, torch.Tensor | None]:
        """The gradients of the last step (set_to_none: the next step leaves them be)."""
        return {n: t.grad for n, t in self.params + self.input_leaves}


def grad_error(got: dict, want: dict) -> float:
    """max over tensors of max|got - want| / max(max|want|, GRAD_FLOOR * the largest
    max|want|); a missing gradient is zeros; inf for a shape that differs or a NaN."""
    return max(grad_errors(got, want).values(), default=0.0)


def grad_errors(got: dict, want: dict) -> dict[str, float]:
    """grad_error's relative error of each tensor, by name."""
    scale = {n: (w.abs().max().item() if w is not None and w.numel() else 0.0) for n, w in want.items()}
    floor = GRAD_FLOOR * max(scale.values(), default=0.0)
    errors = {}
    for n in sorted(set(want) | set(got)):
        w, g = want.get(n), got.get(n)
        if w is None and g is None:
            continue
        if w is not None and g is not None and w.shape != g.shape:
            errors[n] = math.inf
            continue
        dt = torch.float64 if torch.float64 in (getattr(w, "dtype", None), getattr(g, "dtype", None)) else torch.float32
        w = torch.zeros_like(g, dtype=dt) if w is None else w.detach().to(dt)
        g = torch.zeros_like(w) if g is None else g.detach().to(dt)
        diff = (g - w).abs().max().item() if w.numel() else 0.0
        denominator = max(scale.get(n, 0.0), floor)
        err = 0.0 if diff == 0 else diff / denominator if denominator > 0 else math.inf
        errors[n] = math.inf if math.isnan(err) else err
    return errors


def worst_grads(got: dict, want: dict, n: int = 3) -> str:
    """The n tensors of largest relative error, as `name 1.2e-01, ...`."""
    errors = sorted(grad_errors(got, want).items(), key=lambda kv: -kv[1])[:n]
    return ", ".join(f"{name.removeprefix('model.')} {err:.1e}" for name, err in errors)


def reference_grads(base: nn.Module, inputs: tuple, kernel_model: bool, dtype: torch.dtype, device: str) -> dict:
    """The first step's gradients of the model in `dtype` (fp32 or fp64), eager, no autocast."""
    module = WithLoss(copy.deepcopy(base).to(dtype))
    ref_inputs = leaves(tuple(x.detach().to(dtype) if x.is_floating_point() else x for x in inputs), kernel_model)
    ref = Contender(module, ref_inputs, module)
    ref.step()
    sync(device)
    grads = {n.removeprefix("model."): g for n, g in ref.grads().items()}
    del ref, module, ref_inputs
    return grads


def run_train_cell(name: str, dtype: str, device: str, small: bool, max_rounds: int, budget_s: float, log=print) -> TrainCell:
    cell = TrainCell(name, dtype)
    try:
        case = build(name, device, small)
    except MissingLibrary as e:
        cell.skipped = str(e)
        log(f"{name:10} {dtype}: skipped: {e}")
        return cell
    cell.shape = case.shape
    base = case.module.train()
    kernel_model = isinstance(base, Function)
    for p in base.parameters():  # the kernel models' parameters are built frozen
        p.requires_grad_(True)
    dropout = active_dropout(base)
    if dropout:  # random masks: the gradients could not be compared
        cell.skipped = "dropout in train mode: " + ", ".join(dropout[:3])
        log(f"{name:10} {dtype}: skipped: {cell.skipped}")
        return cell
    inputs = leaves(cell_inputs(case, dtype), kernel_model)
    del case
    model_suite._release(device)
    weight_bytes = sum(t.numel() * t.element_size() for t in [*base.parameters(), *base.buffers()])

    def contender(fn_of_module) -> Contender:
        module = WithLoss(copy.deepcopy(base))
        return Contender(module, inputs, fn_of_module(module))

    runners: dict[str, Contender] = {}
    grads: dict[str, dict] = {}
    eager = contender(lambda m: entry_point(m, dtype, device))
    loss = eager.step()
    sync(device)
    runners["eager"], grads["eager"], cell.loss["eager"] = eager, eager.grads(), loss.item()
    cell.grads = sum(g is not None for g in grads["eager"].values())
    del loss
    for compiler in COMPILERS:
        c = contender(lambda m: None)
        try:
            c.zero_grad()
            c.fn, loss, seconds, graphs, notes = first_call(compiler, entry_point(c.module, dtype, device), inputs, device,
                                                            after=lambda out: out.backward())
        except Exception as e:
            cell.failed[compiler] = reason(e)
            log(f"{name:10} {dtype}: {compiler} failed: {cell.failed[compiler]}")
            del c
            gc.collect()  # what the failed compile left (no Dynamo reset: the other compiler's code stays)
            if device == "cuda":
                torch.cuda.empty_cache()
            continue
        runners[compiler], grads[compiler] = c, c.grads()
        cell.compile_s[compiler], cell.graphs[compiler], cell.loss[compiler] = seconds, graphs, loss.item()
        if compiler == "strata":
            cell.strata_notes = notes
        cell.max_err[compiler] = grad_error(grads[compiler], grads["eager"])
        cell.ok[compiler] = cell.max_err[compiler] <= GRAD_TOLERANCE[dtype]
        cell.worst_grads[compiler] = worst_grads(grads[compiler], grads["eager"])
        del loss
    if not all(cell.ok.values()):  # the as-accurate-as-eager rule, against the model in higher precision
        ref_dtype = REFERENCE_DTYPE[dtype]
        cell.reference = f"{str(ref_dtype).removeprefix('torch.').replace('float', 'fp')} model"
        try:
            ref = reference_grads(base, inputs, kernel_model, ref_dtype, device)
            factor, slack = AS_ACCURATE_AS_EAGER
            cell.reference_err = {k: grad_error({n.removeprefix("model."): g for n, g in grads[k].items()}, ref) for k in grads}
            for compiler in cell.ok:
                if not cell.ok[compiler]:
                    cell.ok[compiler] = cell.reference_err[compiler] <= factor * cell.reference_err["eager"] + slack
            del ref
        except Exception as e:  # the model in fp64 may lack a kernel on the device
            cell.failed["reference"] = reason(e)
    del grads, base
    gc.collect()
    for k, r in list(runners.items()):
        try:
            for other in runners.values():
                other.zero_grad()
            peak = peak_mib(r.step, device)
            others = sum(1 for o in runners if o != k)
            cell.peak_mib[k] = None if peak is None else peak - others * weight_bytes / 2**20
        except Exception as e:  # out of memory, or a compiled step that fails after its first
            cell.failed[k] = reason(e)
            del runners[k]
            gc.collect()
            if device == "cuda":
                torch.cuda.empty_cache()
    fns = {k: r.step for k, r in runners.items()}
    try:
        times, cell.rounds, cell.inner = timed(fns, device, max_rounds, budget_s)
        cell.ms = {k: t * 1e3 for k, t in times.items()}
    except Exception as e:
        cell.failed.setdefault("timing", reason(e))
    del fns, runners, inputs
    model_suite._release(device)
    log(summary_line(cell).replace(" err ", " grad err "))
    return cell


def as_train_cells(cells: list[Cell]) -> list[TrainCell]:
    """model_suite.run's cells, those it did not run (--deadline) as TrainCells too."""
    return [c if isinstance(c, TrainCell) else TrainCell(c.model, c.dtype, skipped=c.skipped) for c in cells]


def warm_up_training(device: str) -> None:
    """Each compiler's one-time costs of a training graph (AOTAutograd's joint graph,
    the backward's compile) on a toy, so that the first model's cold compile lacks them."""
    toy = torch.randn(8, 8, device=device, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for compiler in COMPILERS:
            torch._dynamo.reset()
            try:
                model_suite.compile_with(compiler, lambda t: (t * 2).tanh().sum())(toy).backward()
            except Exception as e:  # the cells record the compiler's failures
                print(f"warm-up: {compiler} failed: {reason(e)}", flush=True)
    model_suite._release(device)


# ---------------------------------------------------------------- report
def train_markdown(cells: list[TrainCell], device: str) -> str:
    f, x = suite._f, suite._x
    lines = []
    means = suite.geomeans(cells)
    for dtype in dict.fromkeys(c.dtype for c in cells):
        factor, slack = AS_ACCURATE_AS_EAGER
        what = "fp32" if dtype == "fp32" else "bf16 autocast (the pointwise, softmax and layernorm models also take bf16 inputs)"
        ref = "fp64" if dtype == "fp32" else "fp32"
        lines += [
            f"### {what} — gradients vs eager's: relative error at most {GRAD_TOLERANCE[dtype]:g} "
            f"(or as accurate as eager against the model in {ref}: at most {factor:g}× eager's + {slack:g})",
            "",
            "| model | inputs | eager ms/step | Inductor ms/step | strata ms/step | Inductor vs eager | strata vs eager "
            "| strata vs Inductor | cold compile s, first step (Inductor / strata) | peak MiB (eager / Inductor / strata) "
            "| grad rel err (Inductor / strata) |",
            "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for c in cells:
            if c.dtype != dtype:
                continue
            if c.skipped:
                why = c.skipped.split(";")[0].replace("|", "/")
                lines.append(f"| {c.model} | skipped: {why} | | | | | | | | | |")
                continue
            ms = [f(c.ms.get(k), ".3f", "failed" if k in c.failed else "-") for k in CONTENDERS]
            cold = " / ".join(f(c.compile_s.get(k), ".1f", "failed" if k in c.failed else "-") for k in COMPILERS)
            peak = " / ".join(f(c.peak_mib.get(k), ".0f", "n/a" if device != "cuda" else "-") for k in CONTENDERS)
            err = " / ".join(
                (f(c.max_err[k], ".1e", "inf") + ("" if c.ok.get(k) else " WRONG")
                 + (" (ref)" if c.ok.get(k) and c.max_err[k] > GRAD_TOLERANCE[dtype] else ""))
                if k in c.max_err else ("failed" if k in c.failed else "-")
                for k in COMPILERS)
            lines.append(f"| {c.model} | {c.shape} | {' | '.join(ms)} | {x(c.speedup('inductor'))} | {x(c.speedup('strata'))} | "
                         f"{x(c.strata_vs_inductor)} | {cold} | {peak} | {err} |")
        g = means[dtype]
        lines += [f"| **geomean** ({g['models']} model{'' if g['models'] == 1 else 's'}) | | | | | {x(g['inductor_vs_eager'])} | "
                  f"{x(g['strata_vs_eager'])} | **{x(g['strata_vs_inductor'])}** | | | |", ""]
    lines += [
        f"A step: gradients set to None, forward in train mode (autocast for bf16), loss `{LOSS}`, backward; no "
        "optimizer. Each contender trains its own copy of the same initial weights; dropout probabilities are 0. "
        "Speedups are eager's median time per step over the contender's; strata vs Inductor is Inductor's time over "
        "strata's (above 1: strata is faster). Cold compile: `torch.compile` to the end of the first backward, caches "
        "empty at the start of the run. Peak memory: torch.cuda.max_memory_allocated over one step, less the other two "
        "contenders' copies of the weights. Grad rel err: the largest over the parameters of max|g - g_eager| / "
        f"max|g_eager| (denominator at least {GRAD_FLOOR:g} × the model's largest |g_eager|); (ref): outside the "
        "tolerance but as accurate as eager against the reference.",
        "",
    ]
    notes = []
    for c in cells:
        for k, why in c.failed.items():
            notes.append(f"- {c.model} {c.dtype}: {k} failed: {why}")
        if c.strata_notes:
            notes.append(f"- {c.model} {c.dtype}: strata: " + "; ".join(c.strata_notes))
        if getattr(c, "reference_err", None):
            notes.append(f"- {c.model} {c.dtype}: gradients vs the {c.reference}: "
                         + ", ".join(f"{k} {f(v, '.1e', 'inf')}" for k, v in c.reference_err.items()))
        for k, ok in c.ok.items():
            if not ok and getattr(c, "worst_grads", {}).get(k):
                notes.append(f"- {c.model} {c.dtype}: {k}'s worst gradients vs eager's: {c.worst_grads[k]}")
        if any(n != 1 for n in c.graphs.values()):
            notes.append(f"- {c.model} {c.dtype}: graphs Dynamo handed each compiler (1 unless graph breaks): "
                         + ", ".join(f"{k} {n}" for k, n in c.graphs.items()))
    if notes:
        lines += ["Notes (failures, what strata ran eagerly, gradients against the reference):", "", *notes, ""]
    return "\n".join(lines)


def write_outputs(out: str, env: dict, cells: list[TrainCell], args, seconds: dict, quiet: bool = False) -> str:
    """Writes train.md, train.json and (unless quiet) train.png; returns the Markdown."""
    head = (f"{env['device']}; torch {env['torch']}, triton {env['triton']}, strata {env['strata']} ({env['commit']}); "
            f"{env['date']}; time: " + ", ".join(f"{k} {v:.0f} s" for k, v in seconds.items()) + ".")
    text = "\n".join([f"# strata training suite ({args.device}{', small' if args.small else ''})", "", head, "",
                      train_markdown(cells, args.device)])
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "train.md"), "w") as fh:
        fh.write(text)
    data = {
        "meta": {**env, "args": vars(args), "seconds": seconds, "loss": LOSS, "grad_floor": GRAD_FLOOR,
                 "grad_tolerance": GRAD_TOLERANCE, "as_accurate_as_eager": AS_ACCURATE_AS_EAGER,
                 "reference_dtype": {k: str(v) for k, v in REFERENCE_DTYPE.items()}},
        "models": [c.as_json() for c in cells],
        "geomean": suite.geomeans(cells),
    }
    with open(os.path.join(out, "train.json"), "w") as fh:
        json.dump(data, fh, indent=1, default=str)
    panels = [(title.replace("per call", "per training step"), models, series) for title, models, series in suite.chart_panels(cells)]
    if panels and not quiet:
        print(chart.chart_step(os.path.join(out, "train.png"), panels, f"training step, {env['device']}"[:60]), flush=True)
    return text


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--small", "--quick", action="store_true", help="tiny models and batches (for a CPU)")
    p.add_argument("--only", default=None, help=f"comma-separated models (default: all of {', '.join(MODELS)})")
    p.add_argument("--dtypes", default="bf16", help="comma-separated, of fp32,bf16 (default bf16)")
    p.add_argument("--rounds", type=int, default=30, help="at most this many interleaved rounds a cell")
    p.add_argument("--budget", type=float, default=None, help="seconds of timing a cell (default 1.5 on cuda, 0.5 on cpu)")
    p.add_argument("--deadline", type=float, default=None,
                   help="no cell starts after this many seconds (default 420 on cuda, for a 10-minute limit; none on cpu; 0: none)")
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    p.add_argument("--cache-dir", default=None, help="cache folder (default: a new, empty one)")
    p.add_argument("--out", default="train-results", help="folder for train.md, train.json and train.png (with matplotlib)")
    a = p.parse_args(argv)
    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("--device cuda: no CUDA GPU here (use --device cpu --small)")
    models = a.only.split(",") if a.only else list(MODELS)
    unknown = [m for m in models if m not in MODELS]
    if unknown:
        sys.exit(f"unknown model(s) {', '.join(unknown)}; the suite's models are: {', '.join(MODELS)}")
    dtypes = a.dtypes.split(",")
    if any(d not in DTYPES for d in dtypes):
        sys.exit(f"--dtypes: each of {', '.join(DTYPES)}")
    budget = a.budget if a.budget is not None else (1.5 if a.device == "cuda" else 0.5)
    if a.threads:
        torch.set_num_threads(a.threads)
    env = suite.environment(a.device)
    print(f"{env['device']}: torch {env['torch']}, triton {env['triton']}, strata {env['strata']} ({env['commit']}); "
          f"caches under {os.path.dirname(os.environ.get('STRATA_CACHE_DIR', '?'))}", flush=True)
    start = time.perf_counter()
    deadline = a.deadline if a.deadline is not None else (420.0 if a.device == "cuda" else 0.0)
    seconds: dict[str, float] = {}

    def log(line: str) -> None:
        print(line, flush=True)

    def save(cells_so_far: list[Cell]) -> None:  # after each cell: a stopped run leaves its results
        seconds["total"] = time.perf_counter() - start
        write_outputs(a.out, env, as_train_cells(cells_so_far), a, seconds, quiet=True)

    warm_up_training(a.device)
    cells = model_suite.run(models, dtypes, a.device, a.small, a.rounds, budget, log=log,
                            stop_at=start + deadline if deadline > 0 else None, after_cell=save, cell_fn=run_train_cell)
    cells = as_train_cells(cells)
    seconds["total"] = time.perf_counter() - start
    text = write_outputs(a.out, env, cells, a, seconds)
    print(text)
    print(f"wrote {a.out}/train.md, train.json{', train.png' if suite.chart_panels(cells) and chart.available() else ''} in {seconds['total']:.0f} s", flush=True)
    bad = [f"{c.model} {c.dtype}" for c in cells if c.skipped is None and ("strata" in c.failed or not c.ok.get("strata", False))]
    if bad:
        print(f"strata failed or its gradients did not match on: {', '.join(bad)}", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
