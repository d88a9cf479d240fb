"""strata.explain(fn, *args): what strata makes of a function, as a report and as data.

First Dynamo's own explain (torch._dynamo.explain) says where the function breaks into
graphs and why; then the function is compiled by strata and run once, and each graph's
report (frontend/inspection/report.py) says what became of it: ops per dialect level, kernels
with the aten ops and source lines each fuses, library calls, eager fallbacks with the
reason, seconds per pass, and the estimated bytes moved.

Dynamo's explain does not list a graph break it cannot resume after (one inside a
loop): it gives up on the whole function, which then runs eagerly, uncompiled. Those
are found in Dynamo's `graph_breaks` log during strata's run and reported as frames
Dynamo skipped.

    report = strata.explain(model, x)      # prints it
    report.graphs[0].kernels[0].aten_ops   # ['aten.native_layer_norm.default']
    report.to_dict()                       # plain data (json.dumps-able)
"""

from __future__ import annotations

import contextlib
import logging
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from strata.frontend.inspection.report import CallReport, GraphReport, KernelReport, recording

# Lines of Dynamo's break reasons that speak to torch's developers, not to users.
_DEVELOPER_LINES = ("Developer debug context", "Hint: Please report an issue to PyTorch")


@dataclass
class GraphBreak:
    reason: str  # Dynamo's words, developer details left out
    location: str | None  # the user's line where the graph broke: `file:N in fn`
    code: str | None  # that line's text
    stack: list[str] = field(default_factory=list)  # the user frames, outermost first


@dataclass
class ExplainReport:
    graph_count: int  # graphs Dynamo captured
    graph_break_count: int
    breaks: list[GraphBreak]
    graphs: list[GraphReport]  # one per graph strata compiled (backward graphs compile when backward runs)
    skipped: list[GraphBreak] = field(default_factory=list)  # functions Dynamo gave up on: they run eagerly

    @property
    def kernels(self) -> list[KernelReport]:
        return [k for g in self.graphs for k in g.kernels]

    @property
    def fallbacks(self) -> list[CallReport]:
        return [f for g in self.graphs for f in g.fallbacks]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def __str__(self) -> str:
        return "\n".join(report_lines(self))


def explain(
    fn: Callable,
    *args: Any,
    options: dict[str, Any] | None = None,
    mode: str | None = None,
    dynamic: bool | None = None,
    print_report: bool = True,
    **kwargs: Any,
) -> ExplainReport:
    from strata.frontend.backend import make_backend

    backend = make_backend(mode, options)  # bad options fail before anything runs
    torch._dynamo.reset()
    dynamo = torch._dynamo.explain(fn)(*args, **kwargs)
    breaks = [_graph_break(r) for r in dynamo.break_reasons]
    torch._dynamo.reset()
    compiled = torch.compile(fn, backend=backend, dynamic=dynamic)
    try:
        with recording() as graphs, _graph_break_log() as logged, warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the report lists every fallback the warnings would
            compiled(*args, **kwargs)
    finally:
        torch._dynamo.reset()
    known = {b.location.rsplit(" in ", 1)[0] for b in breaks if b.location}
    skipped = [b for b in logged if "falling back to eager" in b.reason and b.location not in known]
    # (Dynamo counts graphs - 1 breaks: -1 when it captured no graph at all.)
    report = ExplainReport(dynamo.graph_count, max(dynamo.graph_break_count, 0), breaks, graphs, skipped)
    if print_report:
        print(report)
    return report


def _user_text(reason: str) -> str:
    reason = reason.split("Stack variable source attribution:")[0]  # torch's internals
    lines = [line.rstrip() for line in reason.splitlines() if not line.strip().startswith(_DEVELOPER_LINES)]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


@contextlib.contextmanager
def _graph_break_log() -> Iterator[list[GraphBreak]]:
    """Dynamo's `graph_breaks` log (TORCH_LOGS=graph_breaks) while the function runs
    compiled, as GraphBreaks; torch's own logging settings are restored afterwards."""
    found: list[GraphBreak] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            found.append(_logged_break(record.getMessage()))

    try:
        from torch._logging._internal import log_registry

        names = sorted(n for n in log_registry.artifact_log_qnames if n.endswith(".__graph_breaks"))
        torch._dynamo.utils.reset_graph_break_dup_checker()
    except (ImportError, AttributeError):  # another torch: no skipped frames reported
        names = []
    handler = Collect()
    saved = []
    for name in names:
        logger = logging.getLogger(name)
        saved.append((logger, logger.level, logger.propagate))
        logger.setLevel(logging.DEBUG)
        logger.propagate = False
        logger.addHandler(handler)
    try:
        yield found
    finally:
        for logger, level, propagate in saved:
            logger.removeHandler(handler)
            logger.setLevel(level)
            logger.propagate = propagate


def _logged_break(message: str) -> GraphBreak:
    """`Graph break in user code at f.py:17\nGraph Break Reason: ...\n\nUser code traceback: ...`"""
    head, _, rest = message.partition("\n")
    location = head.removeprefix("Graph break in user code at ").strip() or None
    reason = rest.removeprefix("Graph Break Reason: ").split("\n\nUser code traceback:")[0]
    code = None
    if location and ":" in location:
        import linecache

        file, _, line = location.rpartition(":")
        code = linecache.getline(file, int(line)).strip() if line.isdigit() else None
    return GraphBreak(reason=_user_text(reason), location=location, code=code or None, stack=[location] if location else [])


def _graph_break(reason: Any) -> GraphBreak:
    text = _user_text(str(reason.reason))
    frames = list(getattr(reason, "user_stack", None) or [])
    stack = [f"{f.filename}:{f.lineno} in {f.name}" for f in frames]
    last = frames[-1] if frames else None
    return GraphBreak(
        reason=text,
        location=stack[-1] if stack else None,
        code=(last.line or None) if last is not None else None,
        stack=stack,
    )


def report_lines(r: ExplainReport) -> list[str]:
    skipped = f"{len(r.skipped)} function{'s' if len(r.skipped) != 1 else ''} Dynamo skipped, " if r.skipped else ""
    lines = [
        f"strata.explain: {r.graph_count} graph{'s' if r.graph_count != 1 else ''}, "
        f"{r.graph_break_count} graph break{'s' if r.graph_break_count != 1 else ''}, {skipped}"
        f"{len(r.kernels)} kernels, {len(r.fallbacks)} eager fallbacks"
    ]
    if r.skipped:
        lines.append("")
        lines.append("Functions Dynamo skipped (a graph break it cannot resume after: the whole function runs eagerly)")
        for i, b in enumerate(r.skipped, 1):
            reason = [line.strip() for line in b.reason.splitlines() if line.strip()]
            lines.append(f"  {i}. at {b.location}" + (f":  {b.code}" if b.code else ""))
            lines += [f"     {line}" for line in reason]
    if r.breaks:
        lines.append("")
        lines.append("Graph breaks (Dynamo: the function splits into graphs here)")
        for i, b in enumerate(r.breaks, 1):
            reason = b.reason.splitlines()
            lines.append(f"  {i}. {reason[0] if reason else '(no reason given)'}")
            if b.location:
                lines.append(f"     at {b.location}" + (f":  {b.code}" if b.code else ""))
            lines += [f"     {line.strip()}" for line in reason[1:] if line.strip()]
    for g in r.graphs:
        lines.append("")
        lines += g.text().splitlines()
    if r.fallbacks:
        lines.append("")
        lines.append(
            "Eager fallbacks run torch's own kernel between strata's: correct, but each one "
            "is a kernel boundary fusion cannot cross."
        )
    return lines
