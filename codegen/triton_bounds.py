"""prim.check_index in Triton kernels: a device-side assert, as TorchInductor emits for
indirect indexing, and the index kept inside the tensor.

On a GPU the assert needs the kernel compiled with `debug=True` (Triton leaves asserts
out otherwise), so a kernel with a check is launched with CHECKED_OPTIONS: debug on,
and Triton's own overflow checks of 32-bit integer arithmetic (which debug would also
turn on, and which would fire on arithmetic that wraps on purpose, such as philox's)
off. A failed assert stops the kernel and the CUDA context, as eager's CUDA indexing
kernels do.

Triton's interpreter (3.9, CPU tensors) runs with its own options, debug off, whatever
the launch asks: `interpreter_debug` turns them on around an interpreted launch, so
that the assert raises there; `as_index_error` turns the InterpreterError it raises
into the IndexOutOfBounds a compiled CPU kernel raises. The assert cannot say which
index was out of range (its message is a constant), only the op, dim and size.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator

from strata.dialects.prim_indexing import IndexOutOfBounds

CHECKED_OPTIONS = "debug=True, sanitize_overflow=False"
MESSAGE_PREFIX = "index out of bounds"


def check_lines(name: str, index: str, size: str, size_text: str, wraps: bool, mask: str | None, dim: int,
                indexing_op: str) -> list[str]:
    """Statements that set `name` to `index` (wrapped where it `wraps`) checked against
    `size`, 0 where out of range. `mask`: the lanes that are points of the domain (the
    others hold whatever a masked load left there), None where all are."""
    lines = []
    if wraps:
        lines.append(f"{name} = tl.where({index} < 0, {index} + {size}, {index})")
        index = name
    inside = f"({index} >= 0) & ({index} < {size})"
    message = f"{MESSAGE_PREFIX} for dimension {dim} with size {size_text} ({indexing_op})"
    lines.append(f"tl.device_assert({inside if mask is None else f'({inside}) | ~{mask}'}, {message!r})")
    lines.append(f"{name} = tl.where({inside}, {index}, 0)")
    return lines


@contextlib.contextmanager
def interpreter_debug() -> Iterator[None]:
    """Triton's interpreter with device asserts on (and its overflow checks off)."""
    try:
        from triton.runtime import interpreter
    except ImportError:  # pragma: no cover - a Triton without the interpreter
        yield
        return
    builder = getattr(interpreter, "interpreter_builder", None)
    old = getattr(builder, "options", None)
    if old is None or not dataclasses.is_dataclass(old):
        yield
        return
    builder.options = dataclasses.replace(old, debug=True, sanitize_overflow=False)
    try:
        yield
    finally:
        builder.options = old


def as_index_error(error: BaseException) -> BaseException | None:
    """The IndexOutOfBounds for an error an interpreted kernel's failed check raised,
    else None."""
    cause = error if isinstance(error, AssertionError) else error.__cause__
    if isinstance(cause, AssertionError) and str(cause).startswith(MESSAGE_PREFIX):
        return IndexOutOfBounds(str(cause))
    return None
