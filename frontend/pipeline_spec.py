"""The `pipeline` option: pass names, comma-separated, each with options or none.

It is read by xDSL's pipeline parser, the one behind strata-opt's `-p`, so any text
strata-opt takes is taken here (`infer-shapes,fuse{emulate_precision_casts=true}`),
and checked against the pass registry (passes/registry.py) when the options are
resolved, so that a misspelt pass fails at `strata.compile`, not at the first call.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from xdsl.utils.arg_spec import ArgSpec, parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError

from strata.passes.registry import PASSES

# The pass that lowers a graph to the kernel.program the runtime runs.
LOWERING_PASS = "fuse"


def parse(text: str) -> list[ArgSpec]:
    """Each pass of the pipeline with its options; a ValueError says what is wrong."""
    try:
        specs = list(parse_pipeline(text))
    except ArgSpecParseError as e:  # a BaseException in xDSL 0.74; its message points at the column
        where = str(e).strip().removeprefix("Error parsing pass pipeline specification:").strip()
        raise ValueError(f"it does not parse as a pass pipeline:\n{where}") from None
    unknown = [s.name for s in specs if s.name not in PASSES]
    if unknown:
        raise ValueError(f"no pass is named {', '.join(map(repr, unknown))}; strata's passes are: {', '.join(PASSES)}")
    if LOWERING_PASS not in [s.name for s in specs]:
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
