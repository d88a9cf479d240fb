"""The `pipeline` option: pass names, comma-separated, each with options or none;
and the `extra_passes` option: passes inserted into it next to a named pass.

Both are read by xDSL's pipeline parser, the one behind strata-opt's `-p`, so any text
strata-opt takes is taken here (`infer-shapes,fuse{emulate_precision_casts=true}`),
and checked against the pass registry (passes/registry.py) when the options are
resolved, so that a misspelt pass fails at `strata.compile`, not at the first call.

`extra_passes` maps a position, `after:<pass>` or `before:<pass>`, to the passes that
go there, so that a pass joins the pipeline without restating it:

    {"after:simplify": "pow-to-mul"}
    {"before:fuse": "fold-neutral-elements{exact=false},simplify"}

The pass named must run once in the pipeline (infer-shapes runs twice in the default
one: `before:decompose` is after its first run, `before:fuse` after its second).
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Mapping
from typing import Any

from xdsl.utils.arg_spec import ArgSpec, parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError

from strata.passes.registry import PASSES

# The pass that lowers a graph to the kernel.program the runtime runs.
LOWERING_PASS = "fuse"
# The pass max-autotune adds before the lowering (matmul templates).
MATMUL_PASS = "matmul-to-dot"
# The pass the option attention_patterns=False takes out.
ATTENTION_PASS = "recognize-attention"


def parse(text: str, whole: bool = True) -> list[ArgSpec]:
    """Each pass of the pipeline with its options; a ValueError says what is wrong.
    A `whole` pipeline must hold the lowering pass; passes to insert need not."""
    try:
        specs = list(parse_pipeline(text))
    except ArgSpecParseError as e:  # a BaseException in xDSL 0.74; its message points at the column
        where = str(e).strip().removeprefix("Error parsing pass pipeline specification:").strip()
        raise ValueError(f"it does not parse as a pass pipeline:\n{where}") from None
    unknown = [s.name for s in specs if s.name not in PASSES]
    if unknown:
        raise ValueError(f"no pass is named {', '.join(map(repr, unknown))}{_did_you_mean(unknown[0], PASSES)}; "
                         f"strata's passes are: {', '.join(PASSES)}")
    if whole and LOWERING_PASS not in [s.name for s in specs]:
        raise ValueError(f"it lacks {LOWERING_PASS!r}, which lowers each graph to the kernels the runtime runs")
    for spec in specs:
        if spec.parameters:  # only then is the pass imported: a pass module may be slow to load
            pass_options(spec)
    return specs


def pass_options(spec: ArgSpec) -> dict[str, Any]:
    """The keyword arguments of the pass `spec` names, typed as its fields are."""
    try:
        built = PASSES[spec.name]().from_pass_spec(spec)
    except (Exception, ArgSpecParseError) as e:  # an option the pass lacks, or a value of the wrong type
        raise ValueError(f"pass {spec.name!r} does not take {spec} ({e})") from None
    given = spec.normalize_parameter_names().parameters
    return {f.name: getattr(built, f.name) for f in dataclasses.fields(built) if f.name in given}


def steps(text: str) -> list[tuple[str, dict[str, Any]]]:
    """(pass name, its options) for each pass of the pipeline, in order."""
    return [(s.name, pass_options(s) if s.parameters else {}) for s in parse(text)]


# ---------------------------------------------------------------- extra_passes
POSITIONS = ("after", "before")


def insert(pipeline: str, extra: Mapping[str, str]) -> str:
    """The pipeline text with `extra`'s passes inserted, each at its position
    (`after:<pass>` or `before:<pass>`); passes given one position go there in order,
    and positions that meet keep `extra`'s order. A ValueError says what is wrong."""
    specs = parse(pipeline)
    names = [s.name for s in specs]
    slots: dict[int, list[str]] = {}
    for where, added in extra_specs(extra).items():
        slots.setdefault(position(where, names), []).extend(map(str, added))
    out: list[str] = []
    for i, spec in enumerate([*specs, None]):
        out.extend(slots.get(i, []))
        if spec is not None:
            out.append(str(spec))
    return ",".join(out)


def without(pipeline: str, name: str) -> str:
    """The pipeline text with every run of the pass `name` taken out."""
    return ",".join(str(s) for s in parse(pipeline) if s.name != name)


def extra_specs(extra: Mapping[str, str]) -> dict[str, list[ArgSpec]]:
    """The passes of each position, checked as far as no pipeline is needed: each
    position is `after:<pass>` or `before:<pass>`, each pass exists and takes its options."""
    checked = {}
    for where, passes in extra.items():
        if not isinstance(where, str) or not isinstance(passes, str):
            raise ValueError(f"{where!r}: {passes!r} is not a position and passes, both str "
                             "(as in {'after:simplify': 'my-pass'})")
        kind, _, name = where.partition(":")
        if kind.strip() not in POSITIONS or not name.strip():
            raise ValueError(f"position {where!r} is not 'after:<pass>' or 'before:<pass>'")
        try:
            checked[where] = parse(passes, whole=False)
        except ValueError as e:
            raise ValueError(f"the passes for {where!r} ({passes!r}): {e}") from None
        if not checked[where]:
            raise ValueError(f"no passes are given for {where!r}")
    return checked


def position(where: str, names: list[str]) -> int:
    """The index in `names` before which `where` (`after:<pass>`, `before:<pass>`) inserts."""
    kind, _, name = where.partition(":")
    kind, name = kind.strip(), name.strip()
    if kind not in POSITIONS or not name:
        raise ValueError(f"position {where!r} is not 'after:<pass>' or 'before:<pass>' "
                         f"with a pass of the pipeline ({', '.join(names)})")
    runs = [i for i, n in enumerate(names) if n == name]
    if not runs:
        raise ValueError(f"position {where!r}: the pipeline has no pass {name!r}{_did_you_mean(name, names)}; "
                         f"its passes are: {', '.join(names)}")
    slots = [i + 1 if kind == "after" else i for i in runs]
    if len(slots) == 1:
        return slots[0]
    hint = ", ".join(f"{alt!r} for its run {n}" for n, slot in enumerate(slots, 1) if (alt := _unique_name(slot, names)))
    raise ValueError(f"position {where!r} is ambiguous: {name!r} runs {len(slots)} times in the pipeline "
                     f"({', '.join(names)}); name a pass that runs once" + (f": {hint}" if hint else ""))


def _unique_name(slot: int, names: list[str]) -> str | None:
    """A position naming a pass that runs once, for the slot before names[slot]."""
    if slot < len(names) and names.count(names[slot]) == 1:
        return f"before:{names[slot]}"
    if slot > 0 and names.count(names[slot - 1]) == 1:
        return f"after:{names[slot - 1]}"
    return None


def _did_you_mean(name: str, choices) -> str:
    close = difflib.get_close_matches(name, list(choices), 1)
    return f" (did you mean {close[0]!r}?)" if close else ""
