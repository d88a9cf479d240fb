"""One workspace arena per GPU stream, shared by every compiled graph on it.

Each compiled graph plans its intermediates into a workspace (runtime/memory_plan.py)
that it keeps from call to call, so that a call makes no views. On a GPU, kept per
graph, those workspaces add up: a training step's forward workspace sits idle through
the backward, and under DDP it raised strata's peak memory 22% above Inductor's. Graphs
on one stream run one after the other, and the stream orders their kernels, so they
can all use one arena, as large as the largest plan: the peak is the largest workspace,
not their sum. Each graph keeps its views of the arena, made again only when the arena
grows (a larger graph arrived); a growing arena drops every graph's stale views, so the
old memory goes back to torch's caching allocator at once. A graph that finds the arena
in use (another thread, on the same stream) takes a workspace of its own, as before.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import torch

from strata.runtime.memory_plan import MemoryPlan

_LOCK = threading.Lock()


class _Arena:
    def __init__(self) -> None:
        self.tensor: torch.Tensor | None = None
        self.busy = False
        self.users: list[weakref.ref] = []  # the graphs holding views of it


_ARENAS: dict[Any, _Arena] = {}


def acquire(graph: Any, plan: MemoryPlan, device: torch.device, stream: Any) -> list[tuple[int, torch.Tensor]] | None:
    """`graph`'s views of the stream's arena (kept in graph.shared_views), which it
    holds until `release`; None if another call holds it."""
    key = (device, stream)
    with _LOCK:
        arena = _ARENAS.setdefault(key, _Arena())
        if arena.busy:
            return None
        arena.busy = True
    if arena.tensor is None or arena.tensor.numel() < plan.size:
        for user in arena.users:  # their stale views, and with them the old arena's memory
            g = user()
            if g is not None:
                g.shared_views.pop(key, None)
        arena.users.clear()
        arena.tensor = None
        arena.tensor = torch.empty(plan.size, dtype=torch.uint8, device=device)
    views = graph.shared_views.get(key)
    if views is None:
        views = graph.shared_views[key] = plan.views(arena.tensor)
        arena.users.append(weakref.ref(graph))
    return views


def release(device: torch.device, stream: Any) -> None:
    _ARENAS[(device, stream)].busy = False
