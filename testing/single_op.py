"""One aten op as a module, for tests that reach overloads no traced graph produces
(or with dtypes and 0-d operands traced graphs rarely have)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Region

from strata.dialects import aten
from strata.frontend.capture.importer import tensor_type_of


def single_op_module(overload: str, inputs: Sequence[torch.Tensor], **constants: Any) -> ModuleOp:
    """`func.func @graph` holding one `overload` op: its tensor arguments, in schema
    order, are the function's arguments (one per tensor in `inputs`; a Tensor[]
    takes all that remain, a Tensor? the next one if any remains), the rest come
    from `constants`; the result types are those of the eager result."""
    sig = aten.signature_of(aten.torch_overload(overload)._schema)
    # A Tensor?[] argument is given as one list of tensors and Nones.
    flat = [t for x in inputs for t in (x if isinstance(x, list) else [x]) if t is not None]
    block = Block(arg_types=[tensor_type_of(t) for t in flat])
    args = iter(block.args)
    values: dict[str, Any] = dict(constants)
    eager_args: dict[str, Any] = dict(constants)
    tensors = iter(inputs)
    for a in sig.args:
        if a.kind == "Tensor":
            values[a.name], eager_args[a.name] = next(args), next(tensors)
        elif a.kind == "Tensor?":
            values[a.name], eager_args[a.name] = next(args, None), next(tensors, None)
        elif a.kind == "Tensor[]":
            values[a.name], eager_args[a.name] = list(args), list(tensors)
        elif a.kind == "Tensor?[]":
            given = next(tensors)
            values[a.name], eager_args[a.name] = [None if t is None else next(args) for t in given], given
        elif a.is_tensor:
            raise ValueError(f"{a.kind} arguments are not supported here")
    result = aten.torch_overload(overload)(**eager_args)
    results = list(result) if isinstance(result, tuple | list) else [result]
    op = aten.build(overload, values, [tensor_type_of(r) for r in results])
    block.add_ops([op, func.ReturnOp(*op.results)])
    fn = func.FuncOp("graph", ([a.type for a in block.args], [r.type for r in op.results]), Region(block))
    return ModuleOp([fn])
