"""Where an op came from: its `strata.source` attribute, read back.

The importer writes `strata.source` on each aten op as `aten.op @ "file", line N, in fn`
(the part after " @ " only where Dynamo recorded the user's stack); decompose and
simplify copy it onto the ops they build. Fusion names each kernel's sources as
`aten.op @ file:N in fn`, and errors and reports print the same short form.
"""

from __future__ import annotations

import functools
import linecache
import re
from dataclasses import dataclass

from collections.abc import Callable

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter
from xdsl.rewriter import InsertPoint

_FRAME = re.compile(r'^"(?P<file>.*)", line (?P<line>\d+)(?:, in (?P<fn>.*))?$')
_SHORT = re.compile(r"^(?P<file>.*):(?P<line>\d+)(?: in (?P<fn>.*))?$")


def with_source(like: Operation, new: Operation) -> Operation:
    """`new`, naming the aten op that `like` came from, as `like` did."""
    if "strata.source" in like.attributes:
        new.attributes["strata.source"] = like.attributes["strata.source"]
    return new


def inserter(rewriter: PatternRewriter, op: Operation) -> Callable[[Operation], SSAValue]:
    """`add(new)`: inserts `new` before `op`, naming op's source, and gives its result."""

    def add(new: Operation) -> SSAValue:
        rewriter.insert(with_source(op, new), InsertPoint.before(op))
        return new.results[0]

    return add


@dataclass(frozen=True)
class Source:
    """An aten overload and, where known, the user's file, line and function."""

    op: str
    file: str | None = None
    line: int | None = None
    function: str | None = None
    raw_location: str | None = None  # a location in a form not understood, as written

    @property
    def location(self) -> str | None:
        """`file:line in fn`, or None where Dynamo recorded no user frame."""
        if self.file is None:
            return self.raw_location
        text = f"{self.file}:{self.line}"
        return f"{text} in {self.function}" if self.function else text

    @property
    def short_location(self) -> str | None:
        """`file.py:line` with the file's base name, for diagrams and tables."""
        if self.file is None:
            return self.raw_location
        return f"{self.file.rsplit('/', 1)[-1]}:{self.line}"

    @property
    def code(self) -> str | None:
        """The text of the user's source line, where the file can be read."""
        if self.file is None or self.line is None:
            return None
        text = linecache.getline(self.file, self.line).strip()
        return text or None

    def __str__(self) -> str:
        loc = self.location
        return f"{self.op} @ {loc}" if loc else self.op


@functools.lru_cache(maxsize=4096)
def parse_source(text: str) -> Source:
    """Reads either form: `aten.x @ "f.py", line 3, in g` or `aten.x @ f.py:3 in g`."""
    op, sep, where = text.partition(" @ ")
    if not sep:
        return Source(op.strip())
    where = where.strip()
    for pattern in (_FRAME, _SHORT):
        m = pattern.match(where)
        if m:
            return Source(op.strip(), m["file"], int(m["line"]), m["fn"])
    return Source(op.strip(), raw_location=where)


def source_of(op: Operation) -> Source | None:
    """The op's recorded source, or None for an op nothing recorded it on."""
    attr = op.attributes.get("strata.source")
    if isinstance(attr, StringAttr):
        return parse_source(attr.data)
    return None


def kernel_source_text(op: Operation) -> str:
    """What a kernel lists for an op it computes: `aten.x @ file:N in fn`, or the aten
    op's name alone, or the op's own name where nothing is recorded."""
    source = source_of(op)
    return str(source) if source is not None else op.name


def blame(error: BaseException, op: Operation) -> None:
    """Records on `error` the op a pass was working on when it was raised (the
    innermost such op wins), so that the compiler's message can name it."""
    if getattr(error, "strata_op", None) is None:
        try:
            error.strata_op = op  # type: ignore[attr-defined]
        except AttributeError:  # an exception type without a __dict__
            pass
