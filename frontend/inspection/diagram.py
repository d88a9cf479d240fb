"""The fused graph as a picture: `options={"trace.graph_diagram": True}`.

Draws a graph's kernel.program: kernels as green boxes (their domain, the aten ops
they fuse, the user's lines, the bytes they move), library calls blue, eager fallbacks
red with the reason, views dashed; each edge is a buffer, labelled with its shape and
dtype. The DOT text is written by hand (no Python graphviz package); graphviz's `dot`
turns it into graph.svg and graph.png. Without `dot` only graph.dot is written, and
one line says how to get the pictures.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import warnings
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

from strata.dialects import aten
from strata.dialects import kernel as kd
from strata.dialects import prim
from strata.dialects.types import TensorType
from strata.passes.fusion.traffic import human_bytes, is_view, values_bytes
from strata.passes.provenance import parse_source, source_of

log = logging.getLogger("strata.graphs")

KERNEL = dict(shape="box", style="rounded,filled", fillcolor="#d9f2d9", color="#2e7d32")
LIBRARY = dict(shape="box", style="filled", fillcolor="#dbe7ff", color="#1f4fa3")
FALLBACK = dict(shape="box", style="filled,bold", fillcolor="#ffd9d9", color="#c62828", fontcolor="#8e0000")
VIEW = dict(shape="box", style="dashed", color="#888888", fontcolor="#555555", fontsize="9")
TERMINAL = dict(shape="ellipse", style="filled", fillcolor="#eeeeee", color="#888888")

_hinted = False


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _attrs(style: dict[str, str], label: str) -> str:
    items = [f"label={_quote(label)}"] + [f"{k}={_quote(v)}" for k, v in style.items()]
    return "[" + ", ".join(items) + "]"


def _type_label(v: SSAValue) -> str:
    t = v.type
    if isinstance(t, TensorType):
        return "[" + ", ".join(str(d) for d in t.dims) + f"] {t.dtype}"
    return str(t)


def _short_op(name: str) -> str:
    return name.removeprefix("aten.").removesuffix(".default")


def _kernel_label(launch: kd.LaunchOp, func: kd.FuncOp) -> str:
    sources = [parse_source(s) for s in func.source_ops]
    ops = list(dict.fromkeys(_short_op(s.op) for s in sources))
    where = list(dict.fromkeys(s.short_location for s in sources if s.short_location))
    domain = "[" + ", ".join(str(d) for d in func.pointwise_dims) + "]"
    if func.reduction_dims:
        domain += " x reduce [" + ", ".join(str(d) for d in func.reduction_dims) + "]"
    lines = [func.sym_name.data, domain]
    lines += [", ".join(ops[i : i + 3]) for i in range(0, min(len(ops), 9), 3)]
    if len(ops) > 9:
        lines.append(f"+{len(ops) - 9} more aten ops")
    if where:
        lines.append(", ".join(where[:3]) + (" ..." if len(where) > 3 else ""))
    lines.append(human_bytes(values_bytes(launch.args) + values_bytes(launch.outs)))
    return "\n".join(lines)


def _op_origin(op: Operation) -> list[str]:
    source = source_of(op)
    if source is None:
        return []
    where = source.short_location
    return [_short_op(source.op) + (f" @ {where}" if where else "")]


def program_dot(module: ModuleOp, declines: list, title: str = "graph") -> str:
    """The DOT text of the module's kernel.program."""
    from strata.frontend.inspection.report import fallback_reason

    program = next(op for op in module.ops if isinstance(op, kd.ProgramOp))
    funcs = {op.sym_name.data: op for op in module.ops if isinstance(op, kd.FuncOp)}
    nodes: dict[str, tuple[dict[str, str], list[str]]] = {}  # id -> (style, label lines)
    edges: list[str] = []
    producer: dict[SSAValue, str] = {}
    counts = {"kernels": 0, "library calls": 0, "eager fallbacks": 0}

    for i, arg in enumerate(program.block.args):
        if isinstance(arg.type, TensorType):
            producer[arg] = f"in{i}"
            nodes[f"in{i}"] = (TERMINAL, [f"input {i}"])

    def edge(v: SSAValue, node: str) -> None:
        if v in producer:
            edges.append(f"  {producer[v]} -> {node} [label={_quote(_type_label(v))}];")

    for n, op in enumerate(program.block.ops):
        node = f"op{n}"
        if isinstance(op, kd.ReturnOp):
            for j, v in enumerate(op.values):
                nodes[f"out{j}"] = (TERMINAL, [f"output {j}"])
                edge(v, f"out{j}")
            continue
        if isinstance(op, prim.PrimOp) and is_view(op):
            base = op.operands[0]
            owner = base.owner
            chained = producer.get(base, "").startswith("op") and nodes[producer[base]][0] is VIEW
            if chained and sum(1 for _ in base.uses) == 1 and isinstance(owner, Operation):
                # A chain of views is one dashed box: reshape, permute, ...
                node = producer[base]
                nodes[node][1][0] += ", " + op.name.removeprefix("prim.")
                producer[op.results[0]] = node
                continue
            nodes[node] = (VIEW, ["view: " + op.name.removeprefix("prim.")])
        elif isinstance(op, kd.LaunchOp):
            func = funcs[op.callee.string_value()]
            node = func.sym_name.data
            nodes[node] = (KERNEL, _kernel_label(op, func).split("\n"))
            counts["kernels"] += 1
        elif isinstance(op, aten.AtenOp):
            nodes[node] = (FALLBACK, [f"{op.overload_name} (eager)", fallback_reason(op, declines), *_op_origin(op)])
            counts["eager fallbacks"] += 1
        else:
            nodes[node] = (LIBRARY, [f"{op.name} (library call)", *_op_origin(op)])
            counts["library calls"] += 1
        for v in op.operands:
            edge(v, node)
        for r in op.results:
            producer[r] = node

    summary = ", ".join(f"{v} {k}" for k, v in counts.items())
    legend = [
        "  subgraph cluster_legend {",
        '    label="legend"; fontsize="9"; color="#bbbbbb";',
        f"    legend_kernel {_attrs(KERNEL, 'kernel')};",
        f"    legend_library {_attrs(LIBRARY, 'library call')};",
        f"    legend_fallback {_attrs(FALLBACK, 'eager fallback')};",
        f"    legend_view {_attrs(VIEW, 'views')};",
        "    legend_kernel -> legend_library -> legend_fallback -> legend_view [style=invis];",
        "  }",
    ]
    return "\n".join(
        [
            "digraph strata {",
            f"  label={_quote(f'{title}: {summary}')}; labelloc=t; fontname=Helvetica;",
            '  node [fontname="Helvetica", fontsize="10"];',
            '  edge [fontname="Helvetica", fontsize="8", color="#666666"];',
            *(f"  {node} {_attrs(style, chr(10).join(label))};" for node, (style, label) in nodes.items()),
            *edges,
            *legend,
            "}",
            "",
        ]
    )


def dot_binary() -> str | None:
    return shutil.which("dot")


def render(dot_text: str, base: Path) -> list[Path]:
    """Writes base.dot, and base.svg and base.png with graphviz where it is installed."""
    global _hinted
    dot_file = base.with_suffix(".dot")
    dot_file.write_text(dot_text)
    written = [dot_file]
    dot = dot_binary()
    if dot is None:
        if not _hinted:
            _hinted = True
            warnings.warn(
                "strata: trace.graph_diagram wrote graph.dot only: graphviz's `dot` is not on PATH "
                "(install graphviz, e.g. `apt-get install graphviz` or `brew install graphviz`, for SVG and PNG)",
                stacklevel=2,
            )
        return written
    for fmt in ("svg", "png"):
        out = base.with_suffix(f".{fmt}")
        try:
            done = subprocess.run([dot, f"-T{fmt}", "-o", str(out), str(dot_file)], capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as e:
            warnings.warn(f"strata: graphviz could not draw {dot_file} as {fmt}: {e}", stacklevel=2)
            continue
        if done.returncode != 0:
            first = (done.stderr.strip().splitlines() or ["no message"])[0]
            warnings.warn(f"strata: graphviz could not draw {dot_file} as {fmt}: {first}", stacklevel=2)
            continue
        written.append(out)
    log.info("diagram: %s", ", ".join(str(p) for p in written))
    return written
