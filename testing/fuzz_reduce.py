"""Makes a failing fuzzed program smaller while it still fails.

    smaller = reduce(program, lambda p: "wrong_value" in run_program(p).kinds)

Greedy, one piece at a time, until no piece can go: a returned value (and with it the
statements and parameters only it needed), then a call (the calls left keep their
order: an earlier call may be what made an int dynamic). Each try compiles the
program again, so a reduction costs a few seconds.
"""

from __future__ import annotations

from collections.abc import Callable

from strata.testing.python_program import PythonProgram


def reduce(program: PythonProgram, fails: Callable[[PythonProgram], bool]) -> PythonProgram:
    while True:
        smaller = next((p for p in _one_piece_less(program) if fails(p)), None)
        if smaller is None:
            return program
        program = smaller


def _one_piece_less(program: PythonProgram):
    if len(program.returns) > 1:
        for name in program.returns:
            yield program.returning(tuple(r for r in program.returns if r != name))
    if len(program.calls) > 1:
        for dropped in range(len(program.calls)):
            yield program.with_calls([c for c in range(len(program.calls)) if c != dropped])
