"""The kernel dialect's reference semantics: a `kernel.func` walks its iteration
domain, loading from and storing into buffers.

The walk is done for all points at once with torch: a scalar of the body is a tensor
of shape [P, 1] (one value per point of the flattened pointwise domain; [1, 1] where
it is the same for all), a row is [P, R] (R points of the flattened reduction domain).
Index expressions evaluate to integer tensors of those shapes, over the loop variables
x0… and r0… and the shape symbols; loads gather and stores scatter through them, over
each buffer's storage counted from its first element. Prim ops in the body run their
reference on these tensors (runtime/interpreters/prim.py), `arith.constant` is a
[1, 1] tensor, and `kernel.reduce` reduces rows to scalars.

This is the meaning both code generators are tested against (tests/test_properties.py),
and the runtime's way to run a kernel that a code generator cannot compile.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from xdsl.dialects import arith
from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls
from xdsl.ir import SSAValue

from strata.dialects import kernel as kd
from strata.dialects import philox
from strata.dialects.kernel_random import PhiloxOp
from strata.dialects.prim import reduction_identity
from strata.dialects.types import DTYPES, concrete, scalar_dtype
from strata.runtime.index_values import evaluate
from strata.runtime.interpreters import symbols



def flat_storage(t: torch.Tensor) -> torch.Tensor:
    """A 1-D view of t's storage, starting at t's first element."""
    n = t.untyped_storage().nbytes() // t.element_size() - t.storage_offset()
    return torch.as_strided(t, (n,), (1,), t.storage_offset())


@dataclass
class Walk:
    """One call of a kernel.func: its domain and the buffers' storage."""

    points: int  # P
    row: int  # R
    index_env: dict[str, Any]
    storage: dict[SSAValue, torch.Tensor] = field(default_factory=dict)

    def index(self, op: kd.IndexedOp, values: dict[str, Any] | None = None) -> torch.Tensor:
        env = {**self.index_env, **values} if values else self.index_env
        return torch.as_tensor(evaluate(op.index_expr, env)).to(torch.int64)


class KernelFunctions(InterpreterFunctions):
    """kernel.load/store/index/reduce/philox and arith.constant inside a kernel body, and
    `call_kernel`, which runs a whole kernel.func."""

    # ------------------------------------------------------------ a whole kernel
    def call_kernel(
        self, interpreter: Interpreter, func: kd.FuncOp, buffers: Sequence[torch.Tensor], symbol_values: Sequence[int]
    ) -> None:
        """Runs `func` on `buffers` (inputs, then outputs, written in place), with its
        shape symbols (`func.symbols`, in order) bound to `symbol_values`."""
        if len(buffers) != len(func.block.args):
            raise ValueError(f"kernel.func @{func.sym_name.data} takes {len(func.block.args)} buffers, got {len(buffers)}")
        env = dict(zip(func.symbol_names, (int(s) for s in symbol_values)))
        pdims = concrete(func.pointwise_dims, env)
        rdims = concrete(func.reduction_dims, env)
        p, r = _numel(pdims), _numel(rdims)
        if p == 0:
            return
        index_env: dict[str, Any] = dict(env)
        index_env.update(_unravel(torch.arange(p).view(p, 1), pdims, "x"))
        index_env.update(_unravel(torch.arange(r).view(1, r), rdims, "r"))
        walk = Walk(p, r, index_env, {a: flat_storage(b) for a, b in zip(func.block.args, buffers)})
        walks: list[Walk] = interpreter.get_data(KernelFunctions, "walks", list)
        walks.append(walk)
        try:
            with symbols.binding(interpreter, env):
                interpreter.run_ssacfg_region(func.body, tuple(buffers), func.sym_name.data)
        finally:
            walks.pop()

    @staticmethod
    def walk(interpreter: Interpreter) -> Walk:
        walks = interpreter.get_data(KernelFunctions, "walks", list)
        if not walks:
            raise ValueError("kernel body ops run only inside a kernel.func call")
        return walks[-1]

    # ------------------------------------------------------------ body ops
    @impl(kd.LoadOp)
    def run_load(self, interpreter: Interpreter, op: kd.LoadOp, args: PythonValues) -> PythonValues:
        w = self.walk(interpreter)
        # a data-dependent load: its index names the values v0, v1, … (args after the buffer)
        idx = w.index(op, {f"v{i}": v.to(torch.int64) for i, v in enumerate(args[1:])})
        storage = w.storage[op.buffer]
        _check_bounds(op, idx, storage)
        return (_at_least_2d(storage[idx.reshape(-1)].reshape(idx.shape)),)

    @impl(kd.StoreOp)
    def run_store(self, interpreter: Interpreter, op: kd.StoreOp, args: PythonValues) -> PythonValues:
        w = self.walk(interpreter)
        value = args[0]
        # a data-dependent store: its index names the values v0, v1, … (args after the buffer)
        idx = _at_least_2d(w.index(op, {f"v{i}": v.to(torch.int64) for i, v in enumerate(args[2:])}))
        shape = torch.broadcast_shapes(tuple(idx.shape), tuple(value.shape))
        if w.row == 0 and shape[1] == 0:
            return ()  # a row of an empty reduction domain: nothing to write
        target = w.storage[op.buffer]
        _check_bounds(op, idx, target)
        target[idx.expand(shape).reshape(-1)] = value.expand(shape).reshape(-1).to(target.dtype)
        return ()

    @impl(kd.IndexOp)
    def run_index(self, interpreter: Interpreter, op: kd.IndexOp, args: PythonValues) -> PythonValues:
        w = self.walk(interpreter)
        return (_at_least_2d(w.index(op)).to(DTYPES[scalar_dtype(op.result.type)]),)

    @impl(kd.ReduceOp)
    def run_reduce(self, interpreter: Interpreter, op: kd.ReduceOp, args: PythonValues) -> PythonValues:
        return (_reduce(op.kind.data, args[0], self.walk(interpreter).row),)

    @impl(PhiloxOp)
    def run_philox(self, interpreter: Interpreter, op: PhiloxOp, args: PythonValues) -> PythonValues:
        seed, counter = args
        return (philox.as_int32(philox.philox_words(seed, counter)[op.word_index]),)

    @impl(arith.ConstantOp)
    def run_constant(self, interpreter: Interpreter, op: arith.ConstantOp, args: PythonValues) -> PythonValues:
        dtype = DTYPES[scalar_dtype(op.result.type)]
        return (torch.tensor(op.value.value.data, dtype=dtype).view(1, 1),)


register_impls(KernelFunctions)


def _check_bounds(op: kd.IndexedOp, idx: torch.Tensor, storage: torch.Tensor) -> None:
    """An index outside the buffer is an error of the kernel, reported as such (a
    compiled kernel would read or write memory it does not own)."""
    if idx.numel() == 0:
        return
    low, high = int(idx.min()), int(idx.max())
    if low < 0 or high >= storage.numel():
        raise IndexError(
            f"{op.name} at index '{op.index.data}' reaches elements {low}..{high} of a buffer of "
            f"{storage.numel()} elements"
        )


def _unravel(flat: torch.Tensor, dims: Sequence[int], prefix: str) -> dict[str, torch.Tensor]:
    out = {}
    inner = 1
    for i in reversed(range(len(dims))):
        out[f"{prefix}{i}"] = (flat // inner) % max(dims[i], 1)
        inner *= dims[i]
    return out


def _reduce(kind: str, v: torch.Tensor, r: int) -> torch.Tensor:
    if v.shape[1] != r:
        v = v.expand(v.shape[0], r)
    if r == 0:
        return torch.full((v.shape[0], 1), reduction_identity(kind, v.dtype), dtype=v.dtype)
    if kind == "sum":
        return v.sum(1, keepdim=True, dtype=v.dtype)
    if kind == "prod":
        return v.prod(1, keepdim=True, dtype=v.dtype)
    return (v.amax if kind == "amax" else v.amin)(1, keepdim=True)


def _at_least_2d(t: torch.Tensor) -> torch.Tensor:
    while t.dim() < 2:
        t = t.unsqueeze(0)
    return t


def _numel(dims: Sequence[int]) -> int:
    n = 1
    for d in dims:
        n *= d
    return n
