"""The reference interpreter of the kernel dialect.

It walks a `kernel.func`'s iteration domain all at once with torch: a scalar of the
body is a tensor of shape [P, 1] (one value per point of the flattened pointwise
domain), a row is [P, R]. Loads and stores gather and scatter through the evaluated
index expressions over the buffers' storage from element 0. It is the meaning against
which both code generators are tested, and the runtime's way to run a kernel that a
code generator cannot compile.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from xdsl.dialects import arith
from xdsl.ir import SSAValue

from strata.dialects import kernel as kd
from strata.dialects import prim
from strata.dialects.types import DTYPES, concrete, scalar_dtype
from strata.runtime.index_eval import evaluate

IDENTITY = {"sum": 0, "prod": 1, "amax": float("-inf"), "amin": float("inf")}


def flat_storage(t: torch.Tensor) -> torch.Tensor:
    """A 1-D view of t's storage, starting at t's first element."""
    n = t.untyped_storage().nbytes() // t.element_size() - t.storage_offset()
    return torch.as_strided(t, (n,), (1,), t.storage_offset())


def _unravel(flat: torch.Tensor, dims: Sequence[int], prefix: str) -> dict[str, torch.Tensor]:
    out = {}
    inner = 1
    for i in reversed(range(len(dims))):
        out[f"{prefix}{i}"] = (flat // inner) % max(dims[i], 1)
        inner *= dims[i]
    return out


def run_kernel(func: kd.FuncOp, buffers: Sequence[torch.Tensor], symbols: Sequence[int]) -> None:
    env_sym = dict(zip(func.symbol_names, (int(s) for s in symbols)))
    pdims = concrete(func.pointwise_dims, env_sym)
    rdims = concrete(func.reduction_dims, env_sym)
    p = _numel(pdims)
    r = _numel(rdims)
    if p == 0:
        return
    index_env: dict = dict(env_sym)
    index_env.update(_unravel(torch.arange(p).view(p, 1), pdims, "x"))
    index_env.update(_unravel(torch.arange(r).view(1, r), rdims, "r"))
    storage = {arg: flat_storage(b) for arg, b in zip(func.block.args, buffers)}
    values: dict[SSAValue, torch.Tensor] = {}

    def index_of(op: kd.IndexedOp) -> torch.Tensor:
        return torch.as_tensor(evaluate(op.index_expr, index_env)).to(torch.int64)

    for op in func.block.ops:
        if isinstance(op, kd.LoadOp):
            idx = index_of(op)
            values[op.result] = storage[op.buffer][idx.reshape(-1)].reshape(idx.shape)
            values[op.result] = _at_least_2d(values[op.result])
        elif isinstance(op, kd.StoreOp):
            idx = index_of(op)
            v = values[op.value]
            shape = torch.broadcast_shapes(tuple(_at_least_2d(idx).shape), tuple(v.shape))
            idx = _at_least_2d(idx).expand(shape).reshape(-1)
            if r == 0 and shape[1] == 0:
                continue
            storage[op.buffer][idx] = v.expand(shape).reshape(-1).to(storage[op.buffer].dtype)
        elif isinstance(op, kd.IndexOp):
            values[op.result] = _at_least_2d(index_of(op)).to(DTYPES[scalar_dtype(op.result.type)])
        elif isinstance(op, kd.ReduceOp):
            values[op.result] = _reduce(op.kind.data, values[op.value], r)
        elif isinstance(op, arith.ConstantOp):
            dtype = DTYPES[scalar_dtype(op.result.type)]
            values[op.result] = torch.tensor(op.value.value.data, dtype=dtype).view(1, 1)
        elif isinstance(op, prim.PrimOp):
            args = [values[a] for a in op.operands]
            values[op.results[0]] = op.reference(*args)
        else:
            raise ValueError(f"the kernel interpreter cannot run {op.name}")


def _reduce(kind: str, v: torch.Tensor, r: int) -> torch.Tensor:
    if v.shape[1] != r:
        v = v.expand(v.shape[0], r)
    if r == 0:
        return torch.full((v.shape[0], 1), IDENTITY[kind], dtype=v.dtype)
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
