"""One fuzzed Python program: a straight-line function and the calls it gets.

    program.source            # "def f(x0, k0):\n    v0 = abs(k0)\n    ..."
    program.function()        # that function (a fresh object each time)
    program.arguments(i)      # the arguments of call i, built from their text
    program.script(note)      # a runnable reproducer: `python script.py` replays it

A program is called several times in a row (`calls`), since what Dynamo compiles
depends on the calls before: an int that changes between calls becomes dynamic
(automatic dynamic), and only a later call meets the code compiled for it. Each
argument is kept as source text (`tensor((2, 3), torch.float32, "transposed", seed=1)`,
`torch.tensor([1, 100000000])`, `-3`) so that the reproducer shows it as it ran.
"""

from __future__ import annotations

import ast
import hashlib
import linecache
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from strata.testing.fuzz_inputs import literal, tensor

# What the statements and the argument texts may name.
NAMESPACE = {"torch": torch, "tensor": tensor, "literal": literal}


@dataclass(frozen=True)
class PythonProgram:
    params: tuple[str, ...]
    statements: tuple[tuple[str, str], ...]  # (name, expression): `name = expression`
    returns: tuple[str, ...]
    calls: tuple[tuple[str, ...], ...]  # per call, each parameter's argument as source text
    dynamic: bool | None = None  # torch.compile's dynamic=: None is automatic dynamic
    capture_scalar_outputs: bool = False  # torch._dynamo.config's: .item() traced (unbacked) or a graph break
    features: frozenset[str] = field(default=frozenset(), compare=False)  # what it exercises (python_programs.py)

    @property
    def source(self) -> str:
        body = [f"    {name} = {expr}" for name, expr in self.statements]
        return "\n".join([f"def f({', '.join(self.params)}):", *body, f"    return {', '.join(self.returns)}", ""])

    @property
    def mode(self) -> str:
        return {None: "automatic dynamic", True: "dynamic=True", False: "dynamic=False"}[self.dynamic]

    def function(self) -> Callable:
        """The program's function, compiled from its source under a file name that
        linecache knows, so that tracebacks and Dynamo's messages show its lines."""
        source = self.source
        filename = f"<fuzzed program {hashlib.sha1(source.encode()).hexdigest()[:10]}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        namespace = dict(NAMESPACE)
        exec(compile(source, filename, "exec"), namespace)
        return namespace["f"]

    def arguments(self, call: int) -> tuple[Any, ...]:
        return tuple(eval(text, dict(NAMESPACE)) for text in self.calls[call])

    def script(self, note: str = "") -> str:
        """A Python file that replays the program's calls compiled and eagerly and
        prints how each call compares (testing/differential.py's `replay`)."""
        calls = "\n".join(f"    {as_tuple(args)}," for args in self.calls)
        header = f'"""{note.rstrip()}\n"""\n' if note else ""
        return (
            f"{header}import torch\n"
            "from strata.testing.fuzz_inputs import tensor\n\n\n"
            f"{self.source}\n\n"
            f"CALLS = [  # in this order: what Dynamo compiles depends on the calls before\n{calls}\n]\n"
            f"DYNAMIC = {self.dynamic!r}  # torch.compile's dynamic= ({self.mode})\n"
            f"CAPTURE_SCALAR_OUTPUTS = {self.capture_scalar_outputs!r}  # torch._dynamo.config.capture_scalar_outputs\n\n"
            'if __name__ == "__main__":\n'
            "    from strata.testing.differential import replay\n\n"
            "    replay(f, CALLS, dynamic=DYNAMIC, capture_scalar_outputs=CAPTURE_SCALAR_OUTPUTS)\n"
        )

    # Smaller programs, for testing/fuzz_reduce.py.

    def returning(self, returns: tuple[str, ...]) -> PythonProgram:
        """The program returning only `returns`, without the statements and the
        parameters nothing returned needs any more."""
        needed = set(returns)
        statements = []
        for name, expr in reversed(self.statements):
            if name in needed:
                statements.append((name, expr))
                needed |= names_in(expr)
        kept = [i for i, p in enumerate(self.params) if p in needed]
        return replace(
            self,
            params=tuple(self.params[i] for i in kept),
            statements=tuple(reversed(statements)),
            returns=returns,
            calls=tuple(tuple(args[i] for i in kept) for args in self.calls),
        )

    def with_calls(self, calls: list[int]) -> PythonProgram:
        """The program called only with the calls numbered `calls`, in that order."""
        return replace(self, calls=tuple(self.calls[i] for i in calls))


def as_tuple(texts: tuple[str, ...]) -> str:
    """The source of a tuple of these expressions."""
    return f"({', '.join(texts)}{',' if len(texts) == 1 else ''})"


def names_in(expression: str) -> set[str]:
    return {n.id for n in ast.walk(ast.parse(expression, mode="eval")) if isinstance(n, ast.Name)}
