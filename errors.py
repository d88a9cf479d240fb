"""The errors strata raises at run time that a user may catch: plain Python classes,
importable without the compiler (an ahead-of-time package raises them too)."""

from __future__ import annotations


class IndexOutOfBounds(IndexError, RuntimeError):
    """An index out of range for the dim it indexes, found by a compiled kernel. An
    IndexError, as eager's advanced indexing, index_select and embedding raise, and a
    RuntimeError, as eager's gather and embedding_bag raise: whatever a caller of the
    eager op catches catches this too."""


def out_of_bounds_message(index: int | None, dim: int, size: int, indexing_op: str) -> str:
    """Eager's words, and the op (with the user's line, where known) that indexed;
    `index` None where it is not known (every index into an empty dim is out of range)."""
    which = "an index" if index is None else f"index {index}"
    return f"{which} is out of bounds for dimension {dim} with size {size} ({indexing_op})"
