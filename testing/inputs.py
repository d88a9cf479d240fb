"""Inputs for a module, made from a seed and the values of its shape symbols.

An `InputSpec` is written `seed=3,special=1,s0=5,s1=0`: the seed of the random values,
whether special values (0, ±1, ±inf, NaN) are mixed into floating inputs, and one
int per shape symbol (a symbol left out is 3). The module says everything else: the
argument types of its `func.func` (or `kernel.program`), and each tensor argument's
layout, from the `strata.strides` argument attribute (or the program's
`arg_strides`), so that a non-contiguous input is part of the IR text. So a failing
property example is reproduced by its IR and its spec alone:

    strata-opt failing.mlir -p decompose --check-values seed=3,s0=5
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IndexType, ModuleOp, StringAttr
from xdsl.ir import Attribute

from strata.dialects import kernel as kd
from strata.dialects.prim import dims_of
from strata.dialects.types import Dim, TensorType, concrete

DEFAULT_SIZE = 3
SPECIAL_FLOATS = (0.0, -0.0, 1.0, -1.0, 0.5, float("inf"), float("-inf"), float("nan"))


@dataclass(frozen=True)
class InputSpec:
    seed: int = 0
    special: bool = False
    sizes: tuple[tuple[str, int], ...] = field(default=())

    @property
    def bindings(self) -> dict[str, int]:
        return dict(self.sizes)

    @classmethod
    def parse(cls, text: str) -> InputSpec:
        """`seed=3,special=1,s0=5` (any order; spaces allowed)."""
        seed, special, sizes = 0, False, []
        for part in text.replace(" ", ",").split(","):
            if not part:
                continue
            key, sep, value = part.partition("=")
            if not sep:
                raise ValueError(f"bad input spec entry '{part}': write name=value")
            try:
                number = int(value)
            except ValueError:
                raise ValueError(f"bad input spec entry '{part}': the value must be an int") from None
            if key == "seed":
                seed = number
            elif key == "special":
                special = bool(number)
            else:
                if number < 0:
                    raise ValueError(f"shape symbol {key} must not be negative")
                sizes.append((key, number))
        return cls(seed, special, tuple(sorted(sizes)))

    def __str__(self) -> str:
        parts = [f"seed={self.seed}"] + (["special=1"] if self.special else [])
        return ",".join(parts + [f"{k}={v}" for k, v in self.sizes])


@dataclass(frozen=True)
class Signature:
    """A module's arguments: types, strides per tensor (None: contiguous), and the
    shape symbol each `index` argument carries."""

    types: list[Attribute]
    strides: list[Sequence[Dim] | None]
    symbols: list[str | None]


def signature_of(module: ModuleOp) -> Signature:
    for op in module.ops:
        if isinstance(op, func.FuncOp):
            types = list(op.function_type.inputs.data)
            attrs = list(op.arg_attrs.data) if op.arg_attrs is not None else []
            attrs += [DictionaryAttr({})] * (len(types) - len(attrs))
            strides, symbols = [], []
            for d in attrs:
                s = d.data.get("strata.strides")
                strides.append(dims_of(s) if isinstance(s, ArrayAttr) else None)
                name = d.data.get("strata.symbol")
                symbols.append(name.data if isinstance(name, StringAttr) else None)
            return Signature(types, strides, symbols)
    for op in module.ops:
        if isinstance(op, kd.ProgramOp):
            types = [a.type for a in op.block.args]
            strides = [s if isinstance(t, TensorType) else None for t, s in zip(types, op.strides)]
            return Signature(types, strides, [s or None for s in op.symbol_names])
    raise ValueError("the module has neither a func.func nor a kernel.program")


def free_symbols(sig: Signature) -> list[str]:
    """The shape symbols the arguments' types and strides name, sorted."""
    names: set[str] = set()
    for t, strides in zip(sig.types, sig.strides):
        if isinstance(t, TensorType):
            for d in (*t.dims, *(strides or ())):
                if not isinstance(d, int):
                    names |= {s.name for s in d.free_symbols}
    names |= {s for s in sig.symbols if s}
    return sorted(names)


def make_inputs(module: ModuleOp, spec: InputSpec | str) -> list[Any]:
    """The arguments of the module's graph (or program) under `spec`."""
    spec = InputSpec.parse(spec) if isinstance(spec, str) else spec
    sig = signature_of(module)
    env = {name: spec.bindings.get(name, DEFAULT_SIZE) for name in free_symbols(sig)}
    gen = torch.Generator().manual_seed(spec.seed)
    out: list[Any] = []
    for i, (t, strides, symbol) in enumerate(zip(sig.types, sig.strides, sig.symbols)):
        if isinstance(t, TensorType):
            sizes = concrete(t.dims, env)
            layout = concrete(strides, env) if strides is not None else _contiguous(sizes)
            out.append(_tensor(sizes, layout, t.torch_dtype, gen, spec.special))
        elif isinstance(t, IndexType):
            if symbol is None:
                raise ValueError(f"argument {i} is an index without a strata.symbol: its value is unknown")
            out.append(env[symbol])
        else:
            raise ValueError(f"argument {i}: cannot make an input of type {t}")
    return out


def _contiguous(sizes: Sequence[int]) -> list[int]:
    strides, step = [], 1
    for n in reversed(sizes):
        strides.append(step)
        step *= max(n, 1)
    return strides[::-1]


def _tensor(sizes: list[int], strides: list[int], dtype: torch.dtype, gen: torch.Generator, special: bool) -> torch.Tensor:
    """Random values in a storage just large enough for `strides` (a stride of 0, or
    one that skips elements, is kept: the tensor is a view of that storage)."""
    if len(strides) != len(sizes):
        raise ValueError(f"strides {strides} do not fit sizes {sizes}")
    n = 0 if 0 in sizes else 1 + sum((s - 1) * st for s, st in zip(sizes, strides))
    storage = random_values(n, dtype, gen, special)
    return torch.as_strided(storage, sizes, strides)


def random_values(n: int, dtype: torch.dtype, gen: torch.Generator, special: bool = False) -> torch.Tensor:
    """n values of `dtype`: normal floats (×2), small ints (so that products and sums
    stay exact), fair bools; with `special`, one float in eight is 0, ±1, ±inf or NaN."""
    if dtype == torch.bool:
        return torch.rand(n, generator=gen) < 0.5
    if dtype.is_floating_point:
        values = torch.randn(n, generator=gen) * 2
        if special:
            pick = torch.randint(0, len(SPECIAL_FLOATS), (n,), generator=gen)
            mask = torch.rand(n, generator=gen) < 0.125
            values = torch.where(mask, torch.tensor(SPECIAL_FLOATS)[pick], values)
        return values.to(dtype)
    low, high = (0, 20) if dtype == torch.uint8 else (-9, 10)
    values = torch.randint(low, high, (n,), generator=gen)
    if special:
        mask = torch.rand(n, generator=gen) < 0.125
        values = torch.where(mask, torch.randint(-1, 2, (n,), generator=gen).clamp(min=low), values)
    return values.to(dtype)
