"""How often generated programs reach a pass's pattern: the number of programs, of N
generated, that each pass changes.

A property over generated programs says nothing about a pattern the programs never
hold. Measure first, then aim the generator (prim_programs' `favour` and `constants`)
until the pass changes enough of them, and assert that in the test:

    from strata.testing import strategies as sst
    from strata.testing.reach import reach

    found = reach("pow-to-mul", sst.prim_programs(favour=("prim.pow",), constants=(2.0,)))
    print(found)                           # pow-to-mul changed 61 of 200 programs (30%)
    assert found.fraction("pow-to-mul") >= 0.2

or from the shell (the same count; `--level aten --prepare infer-shapes,decompose` for
decomposed aten programs):

    python -m strata.testing.reach pow-to-mul --favour prim.pow --constants 2

Each pass runs alone on each program (after the `prepare` passes, which are not
counted). A program counts as changed where the pass's result differs from its input
once dead code is removed from both: a pass whose rewrites run under xDSL's greedy
applier also deletes ops nothing uses, which generated programs have, and that is not
the pattern. The programs are drawn as the `ci` profile draws them (derandomized), so a
count is the same on every run and can be asserted.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.transforms.dead_code_elimination import region_dce
from xdsl.utils.arg_spec import parse_pipeline

from strata.dialects.context import strata_context
from strata.passes.registry import PASSES
from strata.testing.graphs import Program


@dataclass(frozen=True)
class Reach:
    """Of `examples` generated programs, how many each pass (by its spec) changed."""

    examples: int
    changed: dict[str, int]

    def fraction(self, name: str | None = None) -> float:
        """The share of programs the pass changed (the only pass measured, by default)."""
        if name is None:
            (name,) = self.changed
        return self.changed[name] / self.examples if self.examples else 0.0

    def __str__(self) -> str:
        return "\n".join(f"{p} changed {n} of {self.examples} programs ({self.fraction(p):.0%})"
                         for p, n in self.changed.items())


def build_passes(pipeline: str | Sequence[str]) -> list[tuple[str, ModulePass]]:
    """(spec text, pass) for each pass of a pipeline text ("simplify,fuse{x=1}") or of
    a list of pass specs; a ValueError names an unknown pass or a bad option."""
    text = pipeline if isinstance(pipeline, str) else ",".join(pipeline)
    built = []
    for spec in parse_pipeline(text) if text else []:
        if spec.name not in PASSES:
            raise ValueError(f"no pass is named {spec.name!r}; strata's passes are: {', '.join(PASSES)}")
        built.append((str(spec), PASSES[spec.name]().from_pass_spec(spec)))
    return built


def without_dead_code(module: ModuleOp) -> str:
    clone = module.clone()
    region_dce(clone.body)
    return str(clone)


def changes(module: ModuleOp, pass_: ModulePass) -> bool:
    """Whether `pass_` changes `module` (a copy of it: the module stays as it is),
    leaving dead code aside. The result must verify."""
    after = module.clone()
    pass_.apply(strata_context(), after)
    after.verify()
    return without_dead_code(after) != without_dead_code(module)


def reach(
    passes: str | Sequence[str],
    programs: st.SearchStrategy[Program] | None = None,
    *,
    examples: int = 200,
    prepare: str | Sequence[str] = (),
) -> Reach:
    """How many of `examples` programs drawn from `programs` (default: prim_programs())
    each of `passes` changes, each pass alone, after the `prepare` passes."""
    if programs is None:
        from strata.testing.prim_programs import prim_programs

        programs = prim_programs()
    measured = build_passes(passes)
    before = [p for _, p in build_passes(prepare)]
    changed = {name: 0 for name, _ in measured}
    seen = 0

    @settings(max_examples=examples, derandomize=True, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(programs)
    def count(program: Program) -> None:
        nonlocal seen
        module = program.module.clone()
        for p in before:
            p.apply(strata_context(), module)
        seen += 1
        for name, p in measured:
            changed[name] += changes(module, p)

    count()
    return Reach(seen, changed)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m strata.testing.reach", description=__doc__.split("\n\n")[0])
    parser.add_argument("passes", help="the passes to measure, each alone, as strata-opt's -p takes them")
    parser.add_argument("--level", choices=("prim", "aten"), default="prim", help="the programs generated")
    parser.add_argument("--prepare", default="", help="passes run before (not counted), e.g. infer-shapes,decompose")
    parser.add_argument("--favour", nargs="*", default=[], help="prim ops to draw more often (prim.pow ...)")
    parser.add_argument("--constants", nargs="*", type=float, default=[], help="values constant operands take")
    parser.add_argument("--examples", type=int, default=200)
    args = parser.parse_args(argv)
    if args.level != "prim" and (args.favour or args.constants):
        parser.error("--favour and --constants aim prim programs only")
    from strata.testing import strategies as sst

    aimed = {"favour": tuple(args.favour), "constants": tuple(args.constants)} if args.favour or args.constants else {}
    print(reach(args.passes, sst.programs(args.level, **aimed), examples=args.examples, prepare=args.prepare))


if __name__ == "__main__":
    main()
