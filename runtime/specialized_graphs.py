"""A graph of symbolic sizes runs as a static one for the bindings it meets again.

Under dynamic shapes each step of a graph works its sizes out at every call: an
output's dims and strides, a view's layout, a launch's tile and grid; and the memory
plan, which needs sizes, places nothing. Measured on an H200 (0.3B Llama-style model),
that doubled the host time of a call (a 512-token prefill 5.7 → 12.3 ms, a training
step 22 → 48 ms), and both were host-bound. Yet such a graph meets the same few
bindings again and again: a training step's batch, a server's usual lengths.

So the second call with a binding compiles the program specialized to it
(passes/specialize_symbols.py) into a graph of its own, which takes the static paths:
sizes worked out once, the memory plan, Triton launches bound to their tile and grid.
Its kernels are the symbolic graph's, compiled once; it reads the binding's values
for them. A binding met once (a one-off length) never pays for a specialization, and a
graph keeps at most MAX_KEPT of them, after which new bindings run the symbolic steps.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import sympy
import torch

from strata.dialects.types import TensorType

log = logging.getLogger("strata.graphs")

# The call that builds a specialization: the second with its binding.
SPECIALIZE_AT = 2
MAX_KEPT = 8
MAX_SEEN = 1024  # bindings counted, awaiting their second call


def binding_key(arg_types: Sequence[Any], arg_symbols: Sequence[str | None]) -> tuple[tuple[str, ...], Callable[[Sequence[Any]], tuple]] | None:
    """(the symbols the arguments bind, a function of the arguments giving their
    values in that order), or None if they bind none. Each symbol is read where the
    graph's entry binds it first: a tensor's dim that is the bare symbol, or an
    integer argument that names it."""
    where: dict[str, str] = {}
    for i, t in enumerate(arg_types):
        if isinstance(t, TensorType):
            for k, d in enumerate(t.dims):
                if isinstance(d, sympy.Symbol) and d.name not in where:
                    where[d.name] = f"args[{i}].shape[{k}]"
        elif i < len(arg_symbols) and arg_symbols[i] and arg_symbols[i] not in where:
            where[arg_symbols[i]] = f"int(args[{i}])"
    if not where:
        return None
    names = tuple(sorted(where))
    source = f"def key(args):\n    return ({''.join(where[n] + ', ' for n in names)})\n"
    namespace: dict[str, Any] = {}
    exec(compile(source, "<strata binding key>", "exec"), namespace)
    return names, namespace["key"]


class Specializations:
    """A symbolic graph's specialized graphs, by binding; `build(binding)` makes one."""

    def __init__(self, names: tuple[str, ...], key: Callable[[Sequence[Any]], tuple],
                 build: Callable[[dict[str, int]], Callable[[Sequence[Any]], list]]):
        self.names = names
        self.key = key
        self.build = build
        self.graphs: dict[tuple, Callable[[Sequence[Any]], list] | None] = {}  # None: it failed to build
        self.seen: dict[tuple, int] = {}

    def find(self, args: Sequence[Any]) -> Callable[[Sequence[Any]], list] | None:
        """The specialized graph for these arguments' binding, built now if this call
        is the one to build it; None: the symbolic graph runs them."""
        try:
            key = self.key(args)
        except Exception:  # a wrong argument: the symbolic graph's entry names it
            return None
        graph = self.graphs.get(key)
        if graph is not None or len(self.graphs) >= MAX_KEPT:
            return graph
        if len(self.seen) >= MAX_SEEN:  # a graph called with ever new bindings
            self.seen.clear()
        seen = self.seen[key] = self.seen.get(key, 0) + 1
        if seen < SPECIALIZE_AT or _capturing():
            return None
        binding = dict(zip(self.names, key))
        del self.seen[key]
        named = ", ".join(f"{n}={v}" for n, v in binding.items())
        try:
            graph = self.build(binding)
        except Exception as e:  # the symbolic graph runs this binding, as before
            warnings.warn(f"strata: no specialized graph for {named} ({type(e).__name__}: {e}); "
                          "its calls run the symbolic graph")
            graph = None
        self.graphs[key] = graph
        log.info("specialized graph %d of %d for %s", len(self.graphs), MAX_KEPT, named)
        return graph


def _capturing() -> bool:
    """A CUDA graph is being captured: no compile (nor its allocations) now."""
    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()
