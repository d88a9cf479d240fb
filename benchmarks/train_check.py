"""Training checks on a device: 20 steps of each small model, eager and compiled by strata.

    python benchmarks/train_check.py --device cuda            # on a GPU machine (Triton)
    python benchmarks/train_check.py --device cpu             # here (LLVM)
    python benchmarks/train_check.py --device cuda --cases gpt,cnn --precisions bf16

The models, batches, tolerances and the side-by-side training loop are those of
tests/test_training.py (strata/testing/training.py): an MLP, a small GPT (two
TransformerBlocks, embeddings, a head), a small CNN with BatchNorm2d and Dropout, and
dropout variants of the MLP and the GPT; SGD (momentum) and AdamW; fp32 and bf16
autocast. For each cell the table gives the worst loss error over the steps, the
first step's worst gradient error and the buffers' worst error after the last step,
each in units of its tolerance (at most 1 passes), the first and last losses, and the
compiled side's eager fallbacks. Models with dropout are trained twice: with
fallback_random (eager's masks: tracked like the others) and with strata's own philox
masks ("own masks": only the loss going down, and no fallback, are checked). The exit
status is 1 if a check fails.
"""

from __future__ import annotations

import argparse
import sys
import time

import torch

from strata.testing.training import CASES, TrainingRun, run_training

COLUMNS = ("case", "optimizer", "precision", "masks", "loss err", "grad err", "buffer err", "loss eager", "loss strata", "fallbacks", "time", "ok")


def check(run: TrainingRun, own_masks: bool) -> bool:
    """The checks of tests/test_training.py for one run."""
    if run.fallbacks or not run.loss_decreased("compiled"):
        return False
    if own_masks:
        return True
    return run.loss_error() <= 1 and run.grad_error() <= 1 and run.buffer_error() <= 1


def row(run: TrainingRun, masks: str, seconds: float, ok: bool) -> list[str]:
    tracked = masks != "own"
    return [
        run.case,
        run.optimizer,
        run.precision,
        masks,
        f"{run.loss_error():.3g}" if tracked else "-",
        f"{run.grad_error():.3g}" if tracked else "-",
        f"{run.buffer_error():.3g}" if tracked and run.buffers_eager else "-",
        f"{run.losses_eager[0]:.4f} → {run.losses_eager[-1]:.4f}",
        f"{run.losses_compiled[0]:.4f} → {run.losses_compiled[-1]:.4f}",
        str(len(run.fallbacks)),
        f"{seconds:.1f}s",
        "yes" if ok else "NO",
    ]


def print_table(rows: list[list[str]]) -> None:
    widths = [max(len(c), *(len(r[i]) for r in rows)) for i, c in enumerate(COLUMNS)]
    line = lambda cells: "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"  # noqa: E731
    print(line(COLUMNS))
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for r in rows:
        print(line(r))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--cases", default=",".join(CASES), help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--optimizers", default="sgd,adamw")
    parser.add_argument("--precisions", default="fp32,bf16")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--codegen", default=None, help="llvm or triton (default: the device's)")
    args = parser.parse_args(argv)
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print("no CUDA device here: use --device cpu", file=sys.stderr)
        return 2
    options = {"codegen": args.codegen} if args.codegen else {}
    print(f"strata training checks: {args.steps} steps, device {args.device}"
          + (f" ({torch.cuda.get_device_name()})" if args.device.startswith("cuda") else "")
          + f", torch {torch.__version__}")
    rows, failures = [], []
    for name in args.cases.split(","):
        case = CASES[name]
        for optimizer in args.optimizers.split(","):
            for precision in args.precisions.split(","):
                for own_masks in ((False, True) if case.random else (False,)):
                    torch._dynamo.reset()
                    start = time.perf_counter()
                    run = run_training(case, optimizer, precision, args.steps, args.device, fallback_random=case.random and not own_masks, options=options)
                    seconds = time.perf_counter() - start
                    ok = check(run, own_masks)
                    masks = "own" if own_masks else "eager" if case.random else "-"
                    rows.append(row(run, masks, seconds, ok))
                    print(f"{name} {optimizer} {precision} masks={masks}: {'ok' if ok else 'FAILED'} in {seconds:.1f}s", flush=True)
                    if not ok:
                        failures.append((run, masks))
    print()
    print_table(rows)
    for run, masks in failures:
        print(f"\nFAILED {run.case} {run.optimizer} {run.precision} masks={masks}")
        print(f"  eager losses    {[round(v, 5) for v in run.losses_eager]}")
        print(f"  compiled losses {[round(v, 5) for v in run.losses_compiled]}")
        for f in run.fallbacks:
            print(f"  {f}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
