"""Memory planning for a compiled graph on the CPU: the intermediates of a call live at
fixed offsets of one workspace, kept from call to call.

A call of a compiled graph allocates each kernel output and library result afresh, as
eager does. On the CPU a fresh buffer of more than a few hundred KiB is fresh pages
from the OS (glibc hands large blocks back to it when they are freed): on a GPT block
the first touch of those pages cost a third of the call (docs/performance-history.md). So the
values that never leave a call (not a result of the graph, nor a view of one) get
offsets in a workspace by liveness: two values share bytes only when one is dead before
the other is made. The workspace is allocated once, with a tensor for each planned
value already cut from it, and reused by every later call; a call that finds it in use
(the same graph called again from another thread, or from inside itself) takes another.

Lifetimes count views: a view keeps its root alive, and an eager fallback's results are
taken to alias its operands (it may return a view). Values of symbolic size are not
planned (their size changes from call to call): they are allocated as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

ALIGN = 64  # bytes: a cache line, and the widest vector the LLVM back end loads


@dataclass(frozen=True)
class Planned:
    slot: int
    sizes: tuple[int, ...]
    dtype: torch.dtype
    offset: int
    strides: tuple[int, ...] | None = None  # None: contiguous


@dataclass(frozen=True)
class MemoryPlan:
    values: tuple[Planned, ...]
    size: int  # bytes

    def workspace(self, device: torch.device) -> list[tuple[int, torch.Tensor]]:
        """A fresh workspace: (slot, tensor) for each planned value."""
        return self.views(torch.empty(max(self.size, 1), dtype=torch.uint8, device=device))

    def views(self, arena: torch.Tensor) -> list[tuple[int, torch.Tensor]]:
        """(slot, tensor) for each planned value, cut from `arena` (at least `size` bytes)."""
        out = []
        for p in self.values:
            n = _numel(p.sizes) * _itemsize(p.dtype)
            view = arena[p.offset : p.offset + n].view(p.dtype)
            view = view.view(p.sizes) if p.strides is None else view.as_strided(p.sizes, p.strides)
            out.append((p.slot, view))
        return out


def plan_memory(
    steps: Sequence[tuple[Sequence[int], Sequence[int], bool]],
    shapes: dict[int, tuple[tuple[int, ...], torch.dtype, tuple[int, ...] | None] | None],
    plannable: set[int],
    escaping: set[int],
) -> MemoryPlan:
    """Offsets for the plannable slots.

    `steps`: for each step in order, (operand slots, result slots, results alias the
    operands); `shapes`: a slot's static sizes, dtype and strides (None for contiguous;
    the strides of a dense layout, such as channels-last), or None when symbolic;
    `plannable`: the slots whose step can write into a given buffer; `escaping`: the
    slots the graph returns."""
    root: dict[int, int] = {}
    for operands, results, aliases in steps:
        for r in results:
            # A result that may alias an operand belongs to the operand's root (the
            # first one: an eager step's several operands make it unplannable below).
            root[r] = root.get(operands[0], operands[0]) if aliases and operands else r
    start: dict[int, int] = {}
    end: dict[int, int] = {}
    unplannable: set[int] = set()
    for i, (operands, results, aliases) in enumerate(steps):
        for r in results:
            start.setdefault(root.get(r, r), i)
        for v in (*operands, *results):
            rv = root.get(v, v)
            end[rv] = max(end.get(rv, i), i)
        if aliases and len(operands) > 1:
            unplannable.update(root.get(v, v) for v in operands)
    for v in escaping:
        unplannable.add(root.get(v, v))
    candidates = sorted(
        (s for s in plannable if root.get(s, s) == s and s not in unplannable and shapes.get(s) is not None and s in start),
        key=lambda s: (start[s], s),
    )
    placed: list[tuple[int, int, int]] = []  # (offset, bytes, last step)
    values = []
    size = 0
    for s in candidates:
        sizes, dtype, strides = shapes[s]  # type: ignore[misc]
        nbytes = _aligned(_numel(sizes) * _itemsize(dtype))
        if nbytes == 0:
            continue
        live = sorted((o, n) for o, n, last in placed if last >= start[s])
        offset = 0
        for o, n in live:  # first fit among the live blocks
            if offset + nbytes <= o:
                break
            offset = max(offset, o + n)
        placed.append((offset, nbytes, end[s]))
        values.append(Planned(s, tuple(sizes), dtype, offset, strides))
        size = max(size, offset + nbytes)
    return MemoryPlan(tuple(values), size)


def _numel(sizes: Sequence[int]) -> int:
    n = 1
    for d in sizes:
        n *= d
    return n


def _itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


def _aligned(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN
