"""Static views made without torch's dispatcher.

A view (reshape, permute, slice, broadcast) of a static shape is a few hundred
nanoseconds of arithmetic, but `x.reshape(...)` goes through torch's dispatcher and its
view tracking: the several hundred views of a transformer's training step cost more
host time than their kernels' launches. The view's result depends only on the input's
strides (its sizes and dtype are fixed by the program), so a `ViewCache` makes the view
the ordinary way once per input layout it sees, remembers the result's sizes, strides
and storage offset relative to the input, and later makes the same tensor through
`_reinterpret_tensor` (TorchInductor's alias of a buffer: one C call, no dispatch) when
the input's strides match. A view the ordinary way that is not a view (a reshape that
had to copy) is not remembered: that step goes on copying, as torch does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

_guards = getattr(getattr(torch._C, "_dynamo", None), "guards", None)
reinterpret = getattr(_guards, "_reinterpret_tensor", None)


def alias_layout(x: torch.Tensor, y: torch.Tensor) -> tuple[tuple[int, ...], tuple[int, ...], int] | None:
    """y's sizes, strides and storage offset relative to x's, if y is a view of x (a
    reshape that had to copy is not)."""
    if y.untyped_storage().data_ptr() != x.untyped_storage().data_ptr() or y.dtype != x.dtype:
        return None
    return tuple(y.shape), y.stride(), y.storage_offset() - x.storage_offset()


class ViewCache:
    """`known[0]` = (input strides, sizes, strides, storage offset increment) of the
    last layout learned, one tuple replaced whole, so that a call in another thread
    never reads half of one layout and half of another (the generated runner reads it
    inline); `learn(x)` makes the view of x the ordinary way and remembers its layout
    if it is an alias of x."""

    def __init__(self, view: Callable[[torch.Tensor], torch.Tensor]):
        self.view = view
        self.known: list[tuple[Any, ...]] = [(None, None, None, 0)]

    def learn(self, x: torch.Tensor) -> torch.Tensor:
        y = self.view(x)
        layout = alias_layout(x, y)
        if layout is not None:
            self.known[0] = (x.stride(), *layout)
        return y

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        k = self.known[0]
        return reinterpret(x, k[1], k[2], k[3]) if x.stride() == k[0] else self.learn(x)


def view_step_code(cache: ViewCache, x: str, result: int) -> tuple[list[str], dict[str, Any]]:
    """The generated statement of a cached view of `x` into register `result`, with
    the names it uses (str.format fields, as the runner's InlineStep wants)."""
    code = [
        "k = {known}[0]",
        f"regs[{result}] = {{reinterpret}}({x}, k[1], k[2], k[3]) if {x}.stride() == k[0] else {{learn}}({x})",
    ]
    return code, {"reinterpret": reinterpret, "known": cache.known, "learn": cache.learn}


class SymbolicViewCache:
    """A ViewCache for a view whose dims name shape symbols (`view(x, env)`): a
    layout is remembered per input sizes, input strides and binding of the view's own
    symbols, the three that decide it, and a graph of symbolic sizes meets the same few
    again and again (a prefill's lengths, a training step's batch)."""

    KEPT = 64

    def __init__(self, view: Callable[[torch.Tensor, dict], torch.Tensor], names: tuple[str, ...]):
        self.view = view
        self.names = names
        self.known: dict[tuple, tuple[Any, ...]] = {}

    def __call__(self, x: torch.Tensor, env: dict) -> torch.Tensor:
        key = (x.shape, x.stride(), *[env[n] for n in self.names])
        k = self.known.get(key)
        if k is not None:
            return reinterpret(x, k[0], k[1], k[2])
        y = self.view(x, env)
        layout = alias_layout(x, y) if reinterpret is not None else None
        if layout is not None:
            if len(self.known) >= self.KEPT:
                self.known.clear()
            self.known[key] = layout
        return y
