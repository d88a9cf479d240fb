"""Floats Dynamo has already specialized, named to AOTAutograd before it traces.

With dynamic=True Dynamo gives each float it reads from a module a symbol (a
LayerNorm's eps, for one). A call that needs the number itself (F.layer_norm) then
replaces the symbol by its value, under a guard. AOTAutograd's tensorify pass later finds
a float symbol it did not turn into a tensor, marks it to be specialized and restarts
Dynamo's analysis: the frame is traced again from the start, AOTAutograd's joint trace
included (a GPT block with two LayerNorms on the CPU: 4.3–4.5 s of compile instead of
2.7–3.2). Such a symbol is a guarded constant already; marking it before AOTAutograd
runs gives the same graph and an equivalent guard (`eps == 1e-05` either way) without
the second trace. A symbol that is also a graph input keeps torch's own path.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sympy
import torch


def mark_specialized_floats(example_inputs: Sequence[Any]) -> list[str]:
    """Marks, for the tensorify pass, the float symbols of the graph's ShapeEnv that are
    replaced by a number and are no graph input; returns their names."""
    try:
        from torch._dynamo.symbolic_convert import TensorifyState
        from torch._guards import detect_fake_mode
        from torch.utils._sympy.symbol import SymT, symbol_is_type
    except ImportError:  # another torch: its own path
        return []
    fake_mode = detect_fake_mode(example_inputs)
    shape_env = getattr(fake_mode, "shape_env", None)
    if shape_env is None:
        return []
    # torch 2.12 renamed var_to_val (and warns on the old name)
    values = shape_env.backed_var_to_val if hasattr(shape_env, "backed_var_to_val") else shape_env.var_to_val
    inputs = _input_symbols(example_inputs)
    names = [
        str(s)
        for s in values
        if symbol_is_type(s, SymT.FLOAT)
        and isinstance(shape_env.replacements.get(s), sympy.Number)
        and s not in inputs
        and not TensorifyState.should_specialize(str(s))
    ]
    for name in names:
        TensorifyState.specialize(name)
    return names


def _input_symbols(example_inputs: Sequence[Any]) -> set[sympy.Symbol]:
    """The symbols behind the graph's scalar inputs (before replacement)."""
    symbols: set[sympy.Symbol] = set()
    for x in example_inputs:
        if isinstance(x, (torch.SymFloat, torch.SymInt, torch.SymBool)):
            expr = getattr(x.node, "_expr", x.node.expr)
            symbols |= expr.free_symbols
    return symbols
