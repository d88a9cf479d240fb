"""A compiled graph's steps as one generated Python function.

CompiledGraph turns every op of a kernel.program into a step (a closure over
precomputed data). Called one by one from a loop, each step costs a Python call, the
loop's own bookkeeping and the release of dead registers by another loop: a few
microseconds a step, and a training step of a transformer runs several hundred of
them (a host-bound graph is as slow as its Python). So the steps become one
straight-line function, as TorchInductor's generated wrapper is: the common steps
(a kernel launch with static sizes, a view, a matrix product, a library call with its
arguments worked out at compile time) are written out as statements on the register
list, the others are called as they are, and dead registers are dropped by an
assignment after the step that read them last.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

Step = Callable[[list, dict], None]


@dataclass
class InlineStep:
    """A step written as statements for the generated function: `code` reads and
    writes `regs` (the register list) and `env` (the symbol bindings), and names the
    objects in `names` as `{name}` (str.format fields, so the code itself has no
    braces). Called directly, it runs the equivalent closure `step`."""

    code: list[str]
    names: dict[str, Any]
    step: Step
    comment: str = field(default="")

    def __call__(self, regs: list, env: dict) -> None:
        self.step(regs, env)


def generate_runner(plan: Sequence[tuple[Step, tuple[int, ...]]], title: str = "graph") -> tuple[Step, str]:
    """One function `run(regs, env)` doing what `for step, dead in plan: step(regs,
    env); drop dead` does; returns it with its source (for reading and tests)."""
    namespace: dict[str, Any] = {}
    body: list[str] = []
    for i, (step, dead) in enumerate(plan):
        if isinstance(step, InlineStep):
            fields = {name: f"s{i}_{name}" for name in step.names}
            for name, value in step.names.items():
                namespace[fields[name]] = value
            if step.comment:
                body.append(f"# {step.comment}")
            body += [line.format(**fields) for line in step.code]
        else:
            namespace[f"s{i}"] = step
            body.append(f"s{i}(regs, env)")
        if dead:
            body.append(" = ".join(f"regs[{r}]" for r in dead) + " = None")
    source = f"def run(regs, env):  # {title}\n" + "".join(f"    {line}\n" for line in body or ["pass"])
    exec(compile(source, f"<strata runner: {title}>", "exec"), namespace)
    return namespace["run"], source
