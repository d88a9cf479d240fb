"""Binding shape symbols to the sizes of concrete inputs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sympy
import torch
from xdsl.ir import Attribute

from strata.dialects.types import TensorType


def bind_symbols(arg_types: Sequence[Attribute], args: Sequence[Any], arg_symbols: Sequence[str | None] = ()) -> dict[str, int]:
    """Shape symbol → int, read off the inputs: a dim that is a bare symbol binds to the
    input's size there; an `index` argument binds the symbol named for it."""
    env: dict[str, int] = {}
    for i, (t, a) in enumerate(zip(arg_types, args)):
        if isinstance(t, TensorType):
            if not isinstance(a, torch.Tensor) or a.dim() != t.rank:
                raise ValueError(f"argument {i}: expected a tensor of rank {t.rank}, got {_describe(a)}")
            for d, size in zip(t.dims, a.shape):
                if isinstance(d, sympy.Symbol):
                    env.setdefault(d.name, int(size))
        elif i < len(arg_symbols) and arg_symbols[i]:
            env.setdefault(arg_symbols[i], int(a))
    return env


def _describe(a: Any) -> str:
    if isinstance(a, torch.Tensor):
        return f"a tensor of shape {tuple(a.shape)}"
    return type(a).__name__
