"""Compile errors that say where: the pass, the op, and the user's source line.

A pass that raises is reported as

    CompileError: pass 'decompose' failed on aten.gelu.default at model.py:31 in forward:
        return self.fc2(F.gelu(self.fc1(x)))
      RuntimeError: <the original message>

The op is the one the pass recorded on the exception (passes/provenance.py `blame`),
or else the innermost op found among the local variables of the failing frames.
"""

from __future__ import annotations

from types import TracebackType

from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation

from strata.passes.provenance import Source, parse_source, source_of


class CompileError(Exception):
    """A pass or a code generator failed on a graph; the message names the pass, the
    op and the user's source line, which are also kept as attributes."""

    def __init__(self, message: str, stage: str = "", op: str | None = None, source: Source | None = None):
        super().__init__(message)
        self.stage = stage
        self.op = op
        self.source = source


def failing_op(error: BaseException) -> Operation | None:
    """The op a pass was working on when `error` was raised, if one can be found."""
    seen: set[int] = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:  # the recorded op, on the error or its causes
        seen.add(id(e))
        op = getattr(e, "strata_op", None)
        if isinstance(op, Operation):
            return op
        e = e.__cause__ or e.__context__
    return _op_in_frames(error.__traceback__)


_CONTAINERS = (ModuleOp, func.FuncOp)


def _op_in_frames(tb: TracebackType | None) -> Operation | None:
    frames = []
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    fallback: Operation | None = None
    for frame in reversed(frames):  # innermost first
        ops = [v for v in frame.f_locals.values() if isinstance(v, Operation) and not isinstance(v, _CONTAINERS)]
        for op in ops:
            if source_of(op) is not None:
                return op
        if ops and fallback is None:
            fallback = ops[0]
    return fallback


def describe_failure(stage: str, error: BaseException, op: Operation | None) -> CompileError:
    """The CompileError for `error`, raised in `stage` ("pass 'fuse'", "code generator
    'llvm' on kernel k3") while working on `op`."""
    message = f"{type(error).__name__}: {error}"
    if op is None:
        return CompileError(f"{stage} failed: {message}", stage)
    source = source_of(op)
    head = f"{stage} failed on {op.name}"
    if source is not None and source.op != op.name:
        head += f" (from {source.op})"
    if source is not None and source.location:
        head += f" at {source.location}"
    else:
        head += " (no source line recorded: Dynamo gave none, or a pass built the op)"
    lines = [head + ":"]
    code = source.code if source is not None else None
    if code:
        lines.append(f"    {code}")
    lines.append(f"  {message}")
    return CompileError("\n".join(lines), stage, op.name, source)


def describe_kernel_failure(codegen: str, kernel: Operation, error: BaseException) -> CompileError:
    """A code generator raised on a kernel.func: name the kernel, the op of its body
    it was on, and the aten ops (with the user's lines) the kernel computes."""
    name = kernel.sym_name.data  # type: ignore[attr-defined]
    op = failing_op(error)
    at = f" at its {op.name}" if op is not None and op is not kernel else ""
    sources = list(getattr(kernel, "source_ops", []))
    lines = [f"code generator {codegen!r} failed on kernel {name}{at}; the kernel computes:"]
    lines += [f"    {s}" for s in sources[:8]] + (["    ..."] if len(sources) > 8 else [])
    lines.append(f"  {type(error).__name__}: {error}")
    first = parse_source(sources[0]) if sources else None
    return CompileError("\n".join(lines), f"code generator {codegen!r}", op.name if op is not None else None, first)
