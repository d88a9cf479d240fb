"""Which Core ATen overloads (torch.Tag.core) strata lowers, and which fall back to eager.

    python -m strata.tools.core_coverage                     # the static table walk
    python -m strata.tools.core_coverage --sweep --out docs/core-aten-coverage
    python -m strata.tools.core_coverage --sweep --ops gather,sort --dtypes f32,i64

The static walk lists the overloads of dialects/aten_ops_generated.py that no
decomposition rule names. The sweep compiles the OpInfo samples of the OpInfos that
exercise each core op (tools/opinfo.py) and lists the core overloads that still ran
through the eager fallback (a rule missing, or declining on those samples), with the
OpInfos that showed it. Writes <out>.md and <out>.json.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict

from strata.dialects.aten_ops_generated import CORE_ATEN_SCHEMAS

# Core overloads whose OpInfo goes by another name (base name → OpInfo names).
OPINFOS = {
    "_adaptive_avg_pool2d": ["nn.functional.adaptive_avg_pool2d"],
    "_adaptive_avg_pool3d": ["nn.functional.adaptive_avg_pool3d"],
    "adaptive_avg_pool1d": ["nn.functional.adaptive_avg_pool1d"],
    "_cdist_forward": ["cdist"],
    "_pdist_forward": ["nn.functional.pdist"],
    "_embedding_bag": ["nn.functional.embedding_bag"],
    "_log_softmax": ["log_softmax"],
    "_softmax": ["softmax"],
    "_native_batch_norm_legit": ["nn.functional.batch_norm"],
    "_native_batch_norm_legit_no_training": ["nn.functional.batch_norm"],
    "_to_copy": ["to"],
    "avg_pool1d": ["nn.functional.avg_pool1d"],
    "avg_pool2d": ["nn.functional.avg_pool2d"],
    "avg_pool3d": ["nn.functional.avg_pool3d"],
    "max_pool2d_with_indices": ["nn.functional.max_pool2d"],
    "max_pool3d_with_indices": ["nn.functional.max_pool3d"],
    "constant_pad_nd": ["constant_pad_nd", "nn.functional.pad.constant"],
    "reflection_pad1d": ["nn.functional.pad.reflect"],
    "reflection_pad2d": ["nn.functional.pad.reflect"],
    "reflection_pad3d": ["nn.functional.pad.reflect"],
    "replication_pad2d": ["nn.functional.pad.replicate"],
    "replication_pad3d": ["nn.functional.pad.replicate"],
    "embedding": ["nn.functional.embedding"],
    "index": ["__getitem__", "index_select"],
    "max": ["max.reduction_with_dim", "max.reduction_no_dim"],
    "min": ["min.reduction_with_dim", "min.reduction_no_dim"],
    "scatter_reduce": ["scatter_reduce.sum", "scatter_reduce.amax", "scatter_reduce.prod"],
    "upsample_bilinear2d": ["nn.functional.upsample_bilinear", "nn.functional.interpolate.bilinear"],
    "upsample_nearest2d": ["nn.functional.upsample_nearest", "nn.functional.interpolate.nearest"],
    "native_layer_norm": ["nn.functional.layer_norm"],
    "native_group_norm": ["nn.functional.group_norm"],
    "native_dropout": ["nn.functional.dropout"],
    "grid_sampler_2d": ["nn.functional.grid_sample"],
    "gelu": ["nn.functional.gelu"],
    "elu": ["nn.functional.elu"],
    "relu": ["nn.functional.relu"],
    "leaky_relu": ["nn.functional.leaky_relu"],
    "hardtanh": ["nn.functional.hardtanh"],
    "convolution": ["nn.functional.conv2d"],
    "var": ["var", "var_mean"],
    "col2im": ["nn.functional.fold"],
    "_fft_r2c": ["fft.rfft"],
    "_fft_c2r": ["fft.irfft"],
    "bitwise_and": ["bitwise_and"],
}


# Core overloads that never reach a graph strata compiles, so no rule could run, and
# why; tests/test_core_coverage.py shows each (the graph compiles with no fallback).
NEVER_IN_A_GRAPH = {
    "aten::atan2.out": "an out= variant: Dynamo and functionalization leave the functional atan2",
    "aten::resize_": "Dynamo breaks the graph at resize_; the pieces around it compile",
    "aten::sym_size.int": "a size query: the importer records its sympy expression, no op",
    "aten::sym_numel": "a size query: the importer records its sympy expression, no op",
    "aten::sym_stride.int": "a stride query: the importer records its sympy expression, no op",
    "aten::sym_storage_offset": "an offset query: the importer records its sympy expression, no op",
    "aten::sym_is_contiguous": "a layout query: the importer records its value, no op",
}


def core_overloads() -> list[str]:
    return [s.split("(")[0] for s in CORE_ATEN_SCHEMAS]


def base_name(overload: str) -> str:
    return overload.removeprefix("aten::").split(".")[0]


def without_rule() -> list[str]:
    from strata.passes.decompositions import RULES
    from strata.passes.decompositions.complex_values import COMPLEX_RULES  # ops of complex values

    return [n for n in core_overloads() if n not in RULES and n not in COMPLEX_RULES and n not in NEVER_IN_A_GRAPH]


def opinfo_names(overloads: list[str]) -> list[str]:
    from torch.testing._internal.common_methods_invocations import op_db

    known = {o.name + (f".{o.variant_test_name}" if o.variant_test_name else "") for o in op_db} | {o.name for o in op_db}
    names: list[str] = []
    for n in overloads:
        b = base_name(n)
        for cand in OPINFOS.get(b, [b, f"nn.functional.{b}"]):
            if cand in known and cand not in names:
                names.append(cand)
    return names


def sweep(op_names: list[str], dtypes: list[str], samples: int) -> dict[str, list[str]]:
    """Core overload → the OpInfo (op, dtype) pairs on which it ran eagerly; plus
    wrong/error outcomes under the key '!wrong' and '!error'."""
    from strata.tools.opinfo import select
    from strata.tools.opinfo import sweep as run

    seen: dict[str, list[str]] = defaultdict(list)
    core = set(core_overloads())
    for o in run(select(op_names, False), dtypes, "cpu", "strata", samples, log=print):
        for f in o.fallbacks:
            key = f if f in core else f"(not core) {f}"
            seen[key].append(f"{o.op}/{o.dtype}")
        if o.bin in ("wrong", "error"):
            seen[f"!{o.bin}"].append(f"{o.op}/{o.dtype}: {o.detail[:120]}")
    return dict(seen)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sweep", action="store_true", help="also compile the OpInfo samples")
    p.add_argument("--ops", default=None, help="core base names to sweep (default: all core ops)")
    p.add_argument("--dtypes", default="f32")
    p.add_argument("--samples", type=int, default=2)
    p.add_argument("--out", default=None)
    a = p.parse_args(argv)
    core = core_overloads()
    missing = without_rule()
    lines = [f"# Core ATen coverage", "", f"{len(core)} core overloads; {len(missing)} have no decomposition rule:", ""]
    lines += [f"- `{n}`" for n in missing]
    never = [n for n in core if n in NEVER_IN_A_GRAPH]
    lines += ["", f"{len(never)} never reach a compiled graph:", ""]
    lines += [f"- `{n}`: {NEVER_IN_A_GRAPH[n]}" for n in never]
    result: dict = {"core": len(core), "without_rule": missing}
    if a.sweep:
        chosen = core if not a.ops else [n for n in core if base_name(n) in a.ops.split(",")]
        fell = sweep(opinfo_names(chosen), a.dtypes.split(","), a.samples)
        result["fallbacks"] = fell
        core_fell = sorted(k for k in fell if k.startswith("aten::"))
        lines += ["", f"## OpInfo sweep ({a.dtypes}): {len(core_fell)} core overloads ran eagerly", ""]
        lines += [f"- `{k}`: {', '.join(sorted(set(fell[k]))[:6])}" for k in core_fell]
        other = sorted(k for k in fell if not k.startswith("aten::"))
        if other:
            lines += ["", "## Other", ""]
            lines += [f"- `{k}`: {', '.join(sorted(set(fell[k]))[:6])}" for k in other]
    text = "\n".join(lines) + "\n"
    if a.out:
        with open(a.out + ".md", "w") as f:
            f.write(text)
        with open(a.out + ".json", "w") as f:
            json.dump(result, f, indent=1)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
