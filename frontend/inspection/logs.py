"""strata's logs: Python `logging` under the `strata` logger, quiet by default.

Switch components on as torch does with TORCH_LOGS, by environment variable or call:

    STRATA_LOGS=+fusion,passes,codegen,cache python train.py
    strata.set_logs("+fusion,passes")                 # the same syntax
    strata.set_logs(fusion=logging.DEBUG, cache=True)  # or keyword arguments
    strata.set_logs()                                  # quiet again

`name` logs the component at INFO, `+name` at DEBUG (every decision), `-name` only
its warnings; `all` names every component except the two artifacts (`ir`,
`output_code`), which print whole programs. Lines go to stderr as
`[strata.fusion] [graph 0] k0: ...`. Each component is a logger of its own
(`strata.fusion`, ...), so a program can also attach its own handlers to them.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import sys
import warnings
from collections.abc import Iterator

ROOT = "strata"

# component -> what it logs; its logger is "strata.<component>".
COMPONENTS: dict[str, str] = {
    "graphs": "each graph compiled: ops per level, kernels, library calls, eager fallbacks, time",
    "passes": "each pass: ops in -> ops out and time (+passes: what it changed, op by op)",
    "fusion": "each kernel formed and the bytes it saves (+fusion: every decision and what blocked it)",
    "codegen": "each kernel compiled: back end, size, time; kernels that fall back to the interpreter",
    "cache": "the kernel cache: a hit or a miss for each kernel (+cache: the files read and written)",
    "cudagraphs": "reduce-overhead: each graph that is not replayed as a CUDA graph, and why",
    "ir": "artifact: the whole IR after each pass",
    "output_code": "artifact: the source of each generated kernel",
}
ARTIFACTS = ("ir", "output_code")
ENV_VAR = "STRATA_LOGS"

# The graph being compiled, for the `[graph N]` part of each line.
current_graph: contextvars.ContextVar[str] = contextvars.ContextVar("strata_graph", default="")


def logger(component: str) -> logging.Logger:
    return logging.getLogger(f"{ROOT}.{component}")


class _StderrHandler(logging.Handler):
    """Writes to whatever sys.stderr is at the time (so that pytest's capsys and
    redirections see it)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.format(record) + "\n")
        except Exception:  # never let a log line break a compile
            self.handleError(record)


class _Formatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        graph = current_graph.get()
        prefix = f"[{record.name}]" + (f" [{graph}]" if graph else "")
        text = record.getMessage()
        if record.exc_info:
            text += "\n" + self.formatException(record.exc_info)
        if "\n" in text:  # a block (IR, source): indent it under its header
            head, _, rest = text.partition("\n")
            return f"{prefix} {head}\n" + "\n".join("    " + line for line in rest.splitlines())
        return f"{prefix} {text}"


_handler = _StderrHandler()
_handler.setFormatter(_Formatter())


def parse(spec: str) -> dict[str, int]:
    """`"+fusion,passes"` -> {"fusion": DEBUG, "passes": INFO}; ValueError for an
    unknown name."""
    levels: dict[str, int] = {}
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        level = logging.INFO
        if item[0] in "+-":
            level = logging.DEBUG if item[0] == "+" else logging.WARNING
            item = item[1:].strip()
        if item == "all":
            names = [c for c in COMPONENTS if c not in ARTIFACTS]
        elif item in COMPONENTS:
            names = [item]
        else:
            raise ValueError(f"unknown strata log component {item!r}; the components are: {describe()}")
        for name in names:
            levels[name] = level
    return levels


def describe() -> str:
    return "; ".join(f"{name} ({what})" for name, what in COMPONENTS.items()) + "; all (every non-artifact component)"


def set_logs(spec: str | None = None, /, **components: bool | int | None) -> None:
    """Sets which components log, replacing the previous setting.

    `spec` uses STRATA_LOGS's syntax ("+fusion,passes"); keywords give a component a
    level (logging.DEBUG, logging.INFO), True (INFO) or False/None (off). With no
    arguments every component goes quiet again."""
    levels = parse(spec) if spec else {}
    for name, value in components.items():
        if name not in COMPONENTS and name != "all":
            raise ValueError(f"unknown strata log component {name!r}; the components are: {describe()}")
        if value is None or value is False:
            level = None
        elif value is True:
            level = logging.INFO
        elif isinstance(value, int):
            level = value
        else:
            raise ValueError(f"set_logs({name}=...) takes a logging level, True or False, not {value!r}")
        for n in [c for c in COMPONENTS if c not in ARTIFACTS] if name == "all" else [name]:
            if level is None:
                levels.pop(n, None)
            else:
                levels[n] = level
    _apply(levels)


def _apply(levels: dict[str, int]) -> None:
    root = logging.getLogger(ROOT)
    for name in COMPONENTS:
        logger(name).setLevel(levels.get(name, logging.NOTSET))
        # logging.config.dictConfig elsewhere in the process (its default disables every
        # logger that exists) must not silence what is asked for here
        if name in levels:
            logger(name).disabled = False
    if levels:
        root.disabled = False
        if _handler not in root.handlers:
            root.addHandler(_handler)
        root.propagate = False  # our handler prints it; a root handler would print it twice
    else:
        if _handler in root.handlers:
            root.removeHandler(_handler)
        root.propagate = True


def enabled_levels() -> dict[str, int]:
    """The components switched on and their levels."""
    return {name: logger(name).level for name in COMPONENTS if logger(name).level != logging.NOTSET}


def configure_from_env() -> None:
    """Quiet by default (warnings still reach Python's last-resort handler); STRATA_LOGS,
    when set, says what to log."""
    root = logging.getLogger(ROOT)
    if root.level == logging.NOTSET:
        root.setLevel(logging.WARNING)  # a program's logging.basicConfig(DEBUG) stays clear of strata
    spec = os.environ.get(ENV_VAR, "").strip()
    if not spec:
        return
    if spec == "help":
        sys.stderr.write(f"{ENV_VAR}: comma-separated components, '+name' for DEBUG, '-name' for warnings only\n")
        for name, what in COMPONENTS.items():
            sys.stderr.write(f"  {name:12} {what}\n")
        return
    try:
        set_logs(spec)
    except ValueError as e:
        warnings.warn(f"{ENV_VAR}={spec!r}: {e}", stacklevel=2)


@contextlib.contextmanager
def graph_context(label: str) -> Iterator[None]:
    """Tags the log lines written meanwhile with `[label]`."""
    token = current_graph.set(label)
    try:
        yield
    finally:
        current_graph.reset(token)


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"
