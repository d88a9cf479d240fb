"""What strata made of one graph, as data: the report strata.explain prints and
STRATA_LOGS=graphs logs.

compile_graph fills a GraphReport while it compiles (only when someone listens: an
explain call, through `recording`, or the `graphs` log): ops per dialect level, the
kernels with the aten ops each fused and the user's lines, library calls, eager
fallbacks with the reason, seconds per pass, and the estimated bytes moved by eager,
by the unfused prim program and by strata's kernels.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import sympy
import torch
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from strata.dialects import aten
from strata.dialects import kernel as kd
from strata.dialects import prim
from strata.frontend.inspection.logs import ms
from strata.passes.fusion.traffic import concrete_bytes, human_bytes, is_view, values_bytes
from strata.passes.provenance import parse_source, source_of

log = logging.getLogger("strata.graphs")

Bytes = int | str  # a count, or a sympy expression over shape symbols as text


@dataclass
class KernelReport:
    """One generated kernel."""

    name: str
    aten_ops: list[str]  # the aten overloads it computes, in order
    sources: list[str]  # as the kernel lists them: `aten.x @ file:N in fn`
    locations: list[str]  # the user's lines: `file:N in fn`
    domain: str  # `[4, 6]` or `[4] x reduce [6]`
    body_ops: int
    bytes: Bytes  # its inputs read and outputs written, once each
    codegen: str | None = None
    compile_s: float | None = None
    cache: str | None = None  # "hit", "miss" or "same code as <kernel>"
    lines: int | None = None  # of generated source
    interpreted: str | None = None  # why it runs in the kernel interpreter, if it does


@dataclass
class CallReport:
    """A library call or an eager fallback in the compiled program."""

    op: str
    source: str | None  # `aten.x @ file:N in fn`
    reason: str | None = None  # an eager fallback: why no lowering covers it
    bytes: Bytes = 0


@dataclass
class GraphReport:
    number: int
    kind: str = "forward"  # or "backward"
    compile_id: str | None = None  # Dynamo's frame/compile id, as TORCH_LOGS prints it
    function: str | None = None  # the user function Dynamo captured: `forward() in model.py`
    eager_reason: str | None = None  # the whole graph runs eagerly, and why
    ops: dict[str, dict[str, int]] = field(default_factory=dict)  # level -> dialect -> count
    kernels: list[KernelReport] = field(default_factory=list)
    library_calls: list[CallReport] = field(default_factory=list)
    fallbacks: list[CallReport] = field(default_factory=list)
    pass_times: list[tuple[str, float]] = field(default_factory=list)
    import_s: float = 0.0
    codegen_s: float = 0.0
    total_s: float = 0.0
    bytes_eager: Bytes | None = None  # one kernel per aten op, as eager runs it
    bytes_unfused: Bytes | None = None  # one kernel per prim op
    bytes_fused: Bytes | None = None  # strata's kernels, library calls and fallbacks
    symbols: dict[str, int] = field(default_factory=dict)  # the sizes the bytes assume

    @property
    def label(self) -> str:
        return f"graph {self.number}" + (f" ({self.compile_id})" if self.compile_id else "")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def text(self) -> str:
        return "\n".join(graph_lines(self))


# ---------------------------------------------------------------- recording
_RECORDER: contextvars.ContextVar[list[GraphReport] | None] = contextvars.ContextVar("strata_reports", default=None)


@contextlib.contextmanager
def recording() -> Iterator[list[GraphReport]]:
    """Collects the report of every graph compiled meanwhile (in this context)."""
    reports: list[GraphReport] = []
    token = _RECORDER.set(reports)
    try:
        yield reports
    finally:
        _RECORDER.reset(token)


def wanted() -> bool:
    return _RECORDER.get() is not None or log.isEnabledFor(logging.INFO)


def publish(report: GraphReport) -> None:
    reports = _RECORDER.get()
    if reports is not None:
        reports.append(report)
    if log.isEnabledFor(logging.INFO):  # the line's [graph N] tag already names it
        log.info("%s", report.text().removeprefix(report.label + ", "))


# ---------------------------------------------------------------- filling it in
_STRUCTURAL = ("builtin.module", "func.func", "func.return", "kernel.return")


def count_ops(module: ModuleOp) -> dict[str, int]:
    """Ops by dialect (`aten`, `prim`, `kernel`, `arith`), structure left out."""
    counts: Counter[str] = Counter()
    for op in module.walk():
        if op.name not in _STRUCTURAL:
            counts[op.name.split(".")[0]] += 1
    return dict(sorted(counts.items()))


def captured_function(gm: torch.fx.GraphModule) -> str | None:
    """`forward() in /path/model.py`: the outermost user frame of the graph's first
    op with a recorded stack, i.e. the function Dynamo compiled."""
    for n in gm.graph.nodes:
        trace = n.meta.get("stack_trace")
        if trace:
            for line in trace.splitlines():
                m = re.match(r'\s*File "(.*)", line \d+, in (.*)', line)
                if m:
                    return f"{m[2]}() in {m[1]}"
    return None


def symbol_hints(gm: torch.fx.GraphModule) -> dict[str, int]:
    """The example sizes of the graph's shape symbols (for concrete byte counts)."""
    hints: dict[str, int] = {}
    for n in gm.graph.nodes:
        if n.op != "placeholder":
            continue
        val = n.meta.get("val")
        sizes = list(val.shape) if isinstance(val, torch.Tensor) else [val]
        for d in sizes:
            if isinstance(d, torch.SymInt) and isinstance(d.node.expr, sympy.Symbol):
                hint = d.node.hint
                if hint is not None:
                    hints[str(d.node.expr)] = int(hint)
    return hints


def as_bytes(n: sympy.Expr, bindings: dict[str, int]) -> Bytes:
    value = concrete_bytes(n, bindings)
    return value if isinstance(value, int) else str(value)


def fill_program(report: GraphReport, module: ModuleOp, declines: list[tuple[str, str | None, str]]) -> None:
    """Kernels, library calls and fallbacks from the kernel-level module."""
    program = next(op for op in module.ops if isinstance(op, kd.ProgramOp))
    funcs = {op.sym_name.data: op for op in module.ops if isinstance(op, kd.FuncOp)}
    for op in program.block.ops:
        if isinstance(op, kd.LaunchOp):
            func = funcs[op.callee.string_value()]
            moved = values_bytes(op.args) + values_bytes(op.outs)
            report.kernels.append(kernel_report(func, as_bytes(moved, report.symbols)))
        elif isinstance(op, aten.AtenOp):
            report.fallbacks.append(
                CallReport(op.overload_name, source_text(op), fallback_reason(op, declines), _op_bytes(op, report))
            )
        elif isinstance(op, prim.PrimOp) and not is_view(op):
            report.library_calls.append(CallReport(op.name, source_text(op), None, _op_bytes(op, report)))


def kernel_report(func: kd.FuncOp, moved: Bytes) -> KernelReport:
    sources = [parse_source(s) for s in func.source_ops]
    aten_ops = list(dict.fromkeys(s.op for s in sources))
    locations = list(dict.fromkeys(s.location for s in sources if s.location))
    domain = _dims(func.pointwise_dims)
    if func.reduction_dims:
        domain += f" x reduce {_dims(func.reduction_dims)}"
    return KernelReport(
        name=func.sym_name.data,
        aten_ops=aten_ops,
        sources=func.source_ops,
        locations=locations,
        domain=domain,
        body_ops=len(func.block.ops),
        bytes=moved,
    )


def fallback_reason(op: aten.AtenOp, declines: list[tuple[str, str | None, str]]) -> str:
    """Why `op` stayed aten: decompose's reason for this op (matched by overload and
    source line), else for the overload, else that no rule exists."""
    source = op.attributes.get("strata.source")
    text = getattr(source, "data", None)
    by_overload = None
    for overload, where, reason in reversed(declines):
        if overload == op.overload_name:
            if where == text:
                return _reason_text(reason)
            by_overload = by_overload or reason
    return _reason_text(by_overload or "no rule")


def _reason_text(reason: str) -> str:
    return "no decomposition rule for it" if reason == "no rule" else f"its decomposition declined: {reason}"


def source_text(op: Operation) -> str | None:
    source = source_of(op)
    return str(source) if source is not None else None


def _op_bytes(op: Operation, report: GraphReport) -> Bytes:
    return as_bytes(values_bytes(op.operands) + values_bytes(op.results), report.symbols)


def _dims(dims) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


# ---------------------------------------------------------------- as text
def _short_op(name: str) -> str:
    """`aten.native_layer_norm.default` -> `native_layer_norm`."""
    name = name.removeprefix("aten.")
    return name.removesuffix(".default")


def _short_location(location: str) -> str:
    path, _, rest = location.partition(":")
    return path.rsplit("/", 1)[-1] + ":" + rest if rest else location


def _bytes_text(n: Bytes | None) -> str:
    return "?" if n is None else human_bytes(n)


def graph_lines(r: GraphReport) -> list[str]:
    head = f"{r.label}, {r.kind}" + (f" graph of {r.function}" if r.function else "")
    if r.eager_reason is not None:
        return [f"{head}: runs eagerly, not compiled: {r.eager_reason}"]
    lines = [f"{head}: compiled in {ms(r.total_s)}"]
    levels = []
    for level, counts in r.ops.items():
        levels.append(f"{level}: " + ", ".join(f"{n} {d}" for d, n in counts.items()))
    if levels:
        lines.append("  ops per level   " + " | ".join(levels))
    lines.append(
        f"  kernels ({len(r.kernels)}), library calls ({len(r.library_calls)}), eager fallbacks ({len(r.fallbacks)})"
    )
    for k in r.kernels:
        ops = ", ".join(_short_op(o) for o in k.aten_ops[:5]) + (f", +{len(k.aten_ops) - 5}" if len(k.aten_ops) > 5 else "")
        where = ", ".join(_short_location(loc) for loc in k.locations[:3]) + (" ..." if len(k.locations) > 3 else "")
        extra = []
        if k.cache:
            extra.append(f"cache {k.cache}")
        if k.interpreted:
            extra.append(f"interpreted: {k.interpreted}")
        tail = f"  [{'; '.join(extra)}]" if extra else ""
        lines.append(f"    {k.name:<4} {k.domain:<24} {_bytes_text(k.bytes):>10}  {ops}" + (f"  @ {where}" if where else "") + tail)
    for c in r.library_calls:
        lines.append(f"    call {c.op:<24} {_bytes_text(c.bytes):>10}  " + (_call_source(c.source) or ""))
    for c in r.fallbacks:
        lines.append(f"    EAGER {c.op}: {c.reason}" + (f"  @ {_call_location(c.source)}" if c.source else ""))
    if r.pass_times:
        passes = ", ".join(f"{name} {ms(s)}" for name, s in r.pass_times)
        lines.append(f"  compile time    import {ms(r.import_s)}, {passes}, codegen {ms(r.codegen_s)}")
    if r.bytes_fused is not None:
        text = f"  bytes moved     {_bytes_text(r.bytes_fused)} by strata, {_bytes_text(r.bytes_unfused)} unfused (one kernel per prim op)"
        if r.bytes_eager is not None:
            text += f", {_bytes_text(r.bytes_eager)} eager"
        saved = _saving(r.bytes_fused, r.bytes_unfused)
        if saved:
            text += f": {saved} less than unfused"
        lines.append(text + " (estimates)")
    return lines


def _saving(fused: Bytes | None, unfused: Bytes | None) -> str | None:
    if isinstance(fused, int) and isinstance(unfused, int) and unfused > 0:
        return f"{100 * (unfused - fused) / unfused:.0f}%"
    return None


def _call_source(source: str | None) -> str | None:
    if source is None:
        return None
    s = parse_source(source)
    loc = s.short_location
    return f"{_short_op(s.op)}" + (f" @ {loc}" if loc else "")


def _call_location(source: str) -> str:
    s = parse_source(source)
    return s.location or s.op
