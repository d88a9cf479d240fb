"""Runs fuzzed programs in a child process, so that a program that kills its process
(a segfault or an abort in a compiled kernel, a hang) is a mismatch of kind `crash`
and the run goes on in a new child.

    with Worker(check_strides=True) as worker:
        report = worker.run(program)      # a differential.Report, crash included
"""

from __future__ import annotations

import multiprocessing
import signal
import time
from typing import Any

from strata.testing.differential import Mismatch, Report


class Worker:
    def __init__(self, timeout: float = 300.0, **options: Any):
        self.timeout = timeout  # seconds a program may take before it counts as hung
        self.options = options  # run_program's
        self.context = multiprocessing.get_context("spawn")  # a fresh interpreter: no state shared
        self.process = self.conn = None

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def run(self, program) -> Report:
        if self.process is None or not self.process.is_alive():
            self._start()
        started = time.perf_counter()
        self.conn.send(program)
        answered = self.conn.poll(self.timeout)  # also True when the child died: then recv fails
        if answered:
            try:
                return self.conn.recv()
            except EOFError:
                pass
        hung = not answered
        self._stop()
        code = self.process.exitcode
        signal_name = f" ({signal.Signals(-code).name})" if code is not None and code < 0 else ""
        why = f"ran past {self.timeout:.0f} s" if hung else f"died with exit code {code}{signal_name}"
        report = Report(calls=len(program.calls), seconds=time.perf_counter() - started)
        report.mismatches.append(Mismatch("crash", None, f"the process running the program {why}"))
        return report

    def close(self) -> None:
        if self.process is not None and self.process.is_alive():
            self.conn.send(None)
            self.process.join(10)
        self._stop()

    def _start(self) -> None:
        self.conn, child = self.context.Pipe()
        self.process = self.context.Process(target=_serve, args=(child, self.options), daemon=True)
        self.process.start()
        child.close()

    def _stop(self) -> None:
        if self.process is not None:
            if self.process.is_alive():
                self.process.kill()
            self.process.join(10)


def _serve(conn, options: dict[str, Any]) -> None:
    """The child: runs each program it is sent until it is sent None."""
    from strata.testing.differential import run_program
    from strata.testing.fuzz import quiet_torch

    quiet_torch()
    while (program := conn.recv()) is not None:
        conn.send(run_program(program, **options))
