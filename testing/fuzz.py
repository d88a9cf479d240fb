"""The differential fuzzer's command line: generated Python programs compiled with
torch.compile and compared with eager, call by call (docs/fuzzing.md).

    python -m strata.testing.fuzz --programs 200 --seed 0
    python -m strata.testing.fuzz --programs 1000 --seed 1 --out fuzz-out --reduce
    python -m strata.testing.fuzz --seed 0 --program 17        # one program again
    python -m strata.testing.fuzz --backend eager              # Dynamo alone: the fuzzer's own check
    python -m strata.testing.fuzz --no-strides --minutes 10

Program i of seed S is testing/python_programs.py's random_program(f"{S}:{i}"), so
`--seed S --program i` runs exactly it again. What a run writes to the --out folder:
- `<i>-<kinds>.py` for each program that mismatched: a runnable reproducer
  (`python <file>` replays its calls and prints each outcome);
- `mismatches.jsonl`: one line per mismatching program (source, calls, features,
  mismatches), for triage by script;
- `current.py`: the program running now, while the run goes on.
The programs run in a child process (testing/fuzz_worker.py): one that kills it (a
segfault in a kernel, an abort) or runs past --timeout is a mismatch of kind `crash`,
and a new child goes on. With --in-process they run in this process: a crash ends the
run, and current.py is the program that crashed.

Prints progress and a summary (programs, calls, mismatches by kind, eager fallbacks,
time); exits with 1 when any program mismatched.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import tempfile
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path

import torch

from strata.testing.differential import KINDS, Report, run_program
from strata.testing.fuzz_reduce import reduce
from strata.testing.fuzz_worker import Worker
from strata.testing.python_program import PythonProgram
from strata.testing.python_programs import random_program


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.cache_dir or not os.environ.get("STRATA_CACHE_DIR"):
        # A run of its own kernel cache: no earlier run's entries, none left in ~/.cache.
        os.environ["STRATA_CACHE_DIR"] = args.cache_dir or tempfile.mkdtemp(prefix="strata-fuzz-cache-")
    quiet_torch()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for old in [*out.glob("[0-9][0-9][0-9][0-9][0-9]-*.py"), out / "mismatches.jsonl"]:
        old.unlink(missing_ok=True)  # an earlier run's reproducers
    if (out / "current.py").exists():
        print(f"note: {out / 'current.py'} was left by a run that died; it is overwritten now")
    numbers = [args.program] if args.program is not None else range(args.start, args.start + args.programs)
    check = dict(backend=args.backend, check_strides=not args.no_strides)
    if args.options:
        check["options"] = json.loads(args.options)  # strata's options (codegen="triton" and TRITON_INTERPRET=1 on a CPU)
    with contextlib.ExitStack() as stack:
        if args.in_process:
            run = lambda program: run_program(program, **check)  # noqa: E731
        else:
            run = stack.enter_context(Worker(timeout=args.timeout, **check)).run
        return _run(args, numbers, run, out)


def _run(args, numbers, run, out: Path) -> int:
    summary = Summary()
    started = time.perf_counter()
    for n, i in enumerate(numbers):
        if args.minutes and time.perf_counter() - started > 60 * args.minutes:
            print(f"stopped after {args.minutes} minutes")
            break
        program = random_program(f"{args.seed}:{i}")
        (out / "current.py").write_text(program.script(f"fuzz --seed {args.seed} --program {i}: running"))
        report = run(program)
        summary.add(i, program, report)
        if report.mismatches:
            if args.reduce:
                kinds = report.kinds
                smaller = reduce(program, lambda p: bool(kinds & run(p).kinds))
                again = run(smaller)
                if again.mismatches:  # (else it did not fail twice in a row: keep the whole program)
                    program, report = smaller, again
            path = out / f"{i:05d}-{'-'.join(sorted(report.kinds))}.py"
            path.write_text(program.script(_note(args, i, program, report)))
            with open(out / "mismatches.jsonl", "a") as log:
                log.write(json.dumps(_record(args, i, program, report, path)) + "\n")
            print(f"program {i}: {', '.join(sorted(summary.kinds_of[i]))} -> {path}", flush=True)
        if args.progress and (n + 1) % args.progress == 0:
            print(f"[{n + 1}/{len(numbers)}] {time.perf_counter() - started:.0f} s, "
                  f"{len(summary.kinds_of)} mismatching programs", flush=True)
    (out / "current.py").unlink(missing_ok=True)
    print(summary.text(time.perf_counter() - started))
    return 1 if summary.kinds_of else 0


def quiet_torch() -> None:
    """Torch logs what the fuzzer provokes on purpose: a graph break at .item(), a
    meta function raising on an out-of-range index while Dynamo traces."""
    torch._logging.set_logs(dynamo=logging.ERROR)
    logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.CRITICAL)


class Summary:
    """Counts over a run: programs, calls, mismatches by kind, fallbacks."""

    def __init__(self):
        self.programs = self.calls = self.eager_raised = self.graphs = self.graph_breaks = 0
        self.fallbacks: Counter = Counter()
        self.programs_by_kind: Counter = Counter()
        self.calls_by_kind: Counter = Counter()
        self.first_by_kind: dict[str, int] = {}
        self.kinds_of: dict[int, set[str]] = {}
        self.features: Counter = Counter()
        self.failing_features: Counter = Counter()
        self.torch_own: dict[int, set[str]] = {}  # programs whose mismatches aot_eager shares

    def add(self, i: int, program: PythonProgram, report: Report) -> None:
        self.programs += 1
        self.calls += report.calls
        self.eager_raised += report.eager_raised
        self.graphs += report.graphs
        self.graph_breaks += report.graph_breaks
        self.fallbacks += report.fallbacks
        self.features.update(program.features)
        if report.torch_mismatches:
            self.torch_own[i] = {m.kind for m in report.torch_mismatches}
        if report.mismatches:
            self.kinds_of[i] = report.kinds
            self.programs_by_kind.update(report.kinds)
            self.calls_by_kind.update(kind for kind, _ in {(m.kind, m.call) for m in report.mismatches})
            for kind in report.kinds:
                self.first_by_kind.setdefault(kind, i)
            self.failing_features.update(program.features)

    def text(self, seconds: float) -> str:
        lines = [
            f"programs {self.programs}, calls {self.calls} (eager raised in {self.eager_raised}), "
            f"graphs {self.graphs}, graph breaks {self.graph_breaks}",
            f"time {seconds:.1f} s ({seconds / max(self.programs, 1):.2f} s a program)",
            "strata fallbacks: " + (", ".join(f"{k} {n}" for k, n in sorted(self.fallbacks.items())) or "none"),
            f"mismatching programs: {len(self.kinds_of)}",
        ]
        if self.torch_own:
            kinds = Counter(k for ks in self.torch_own.values() for k in ks)
            lines.append(f"torch.compile's own (aot_eager mismatches alike, not counted above): {len(self.torch_own)} programs ("
                         + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) + "), first in program "
                         + str(min(self.torch_own)))
        for kind in KINDS:
            if kind in self.programs_by_kind:
                lines.append(f"  {kind:22s} {self.programs_by_kind[kind]:5d} programs, {self.calls_by_kind[kind]:5d} calls; "
                             f"first in program {self.first_by_kind[kind]}")
        lift = {f: (n / len(self.kinds_of)) / (self.features[f] / self.programs) for f, n in self.failing_features.items() if n >= 3}
        if lift:
            lines.append("features most over-represented in mismatching programs (share there / share overall):")
            for f in sorted(lift, key=lift.get, reverse=True)[:10]:
                lines.append(f"  {f:30s} {self.failing_features[f]:4d} of {len(self.kinds_of)} ({lift[f]:.1f}x)")
        return "\n".join(lines)


def _record(args, i: int, program: PythonProgram, report: Report, path: Path) -> dict:
    """One line of mismatches.jsonl: the program and its mismatches, for triage by script."""
    return {
        "seed": args.seed, "program": i, "reproducer": str(path), "source": program.source,
        "calls": program.calls, "dynamic": program.dynamic, "capture_scalar_outputs": program.capture_scalar_outputs,
        "features": sorted(program.features), "returns": program.returns,
        "mismatches": [asdict(m) for m in report.mismatches],
    }


def _note(args, i: int, program: PythonProgram, report: Report) -> str:
    return "\n".join([
        f"A mismatch of torch.compile(backend={args.backend!r}) with eager, found by",
        f"    python -m strata.testing.fuzz --seed {args.seed} --program {i}" + (f" --options '{args.options}'" if args.options else "")
        + (" (then reduced)" if args.reduce else ""),
        f"Compiled with {program.mode}, capture_scalar_outputs={program.capture_scalar_outputs}; calls in order:",
        *(f"  {line}" for line in report.describe().splitlines()),
        "Run this file to replay the calls and print each outcome.",
    ])


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m strata.testing.fuzz", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--programs", type=int, default=200, help="how many programs (default 200)")
    p.add_argument("--seed", default="0", help="the run's seed: program i is random_program(f'{seed}:{i}')")
    p.add_argument("--program", type=int, help="run only program number PROGRAM of the seed")
    p.add_argument("--start", type=int, default=0, help="the first program's number (default 0)")
    p.add_argument("--out", default="fuzz-out", help="where reproducers go (default ./fuzz-out)")
    p.add_argument("--backend", default="strata", help="torch.compile's backend (eager, aot_eager: check the fuzzer itself)")
    p.add_argument("--options", default=None, help="strata's options as JSON, e.g. '{\"codegen\": \"triton\"}'")
    p.add_argument("--no-strides", action="store_true", help="do not report wrong_strides")
    p.add_argument("--reduce", action="store_true", help="make each failing program smaller before writing it")
    p.add_argument("--minutes", type=float, help="stop after this long")
    p.add_argument("--progress", type=int, default=25, help="a progress line every N programs (0: none)")
    p.add_argument("--timeout", type=float, default=300, help="seconds a program may run before it counts as a crash (default 300)")
    p.add_argument("--in-process", action="store_true",
                   help="run the programs in this process (a crash ends the run), not in a child process that is replaced when it dies")
    p.add_argument("--cache-dir", help="strata's kernel cache for the run (default: a fresh temporary folder)")
    return p


if __name__ == "__main__":
    sys.exit(main())
