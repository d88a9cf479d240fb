"""The storage offsets of graph inputs that as_strided addresses.

as_strided(x, size, stride, storage_offset) reads x's storage from its start, so its
result depends on where x begins in its storage, which the values of x do not say and
Dynamo does not guard (a call with x[2:] reuses a graph traced with x). The importer
records the offset (`strata.storage_offset`) of each input an as_strided with an
explicit storage_offset reads, from the traced FakeTensor, so that the decomposition
can turn the read into a gather of x's own elements (passes/decompositions/copies.py);
and the compiled graph runs eagerly (the ATen graph, as a fallback) on any call whose
such input begins elsewhere in its storage or has other strides.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import torch
import torch.fx
from xdsl.dialects.builtin import IntegerAttr, i64

from strata.dialects.attributes import STORAGE_OFFSET

_AS_STRIDED = (torch.ops.aten.as_strided.default, torch.ops.aten.as_strided_copy.default)


def _addresses_storage(user: torch.fx.Node, n: torch.fx.Node) -> bool:
    if user.op != "call_function" or user.target not in _AS_STRIDED or user.args[0] is not n:
        return False
    offset = user.kwargs.get("storage_offset", user.args[3] if len(user.args) > 3 else None)
    return offset is not None


def _layout(n: torch.fx.Node) -> tuple[int, tuple[int, ...]] | None:
    """(storage offset, strides) of placeholder n if an as_strided addresses its
    storage and both are static."""
    val = n.meta.get("val")
    if not isinstance(val, torch.Tensor) or not any(_addresses_storage(u, n) for u in n.users):
        return None
    offset, strides = val.storage_offset(), val.stride()
    if type(offset) is not int or not all(type(s) is int for s in strides):
        return None
    return offset, tuple(strides)


def storage_offset_attr(n: torch.fx.Node) -> dict[str, IntegerAttr]:
    """The argument attribute recording placeholder n's storage offset, where needed."""
    layout = _layout(n)
    return {} if layout is None else {STORAGE_OFFSET: IntegerAttr(layout[0], i64)}


def guarded(call: Callable[[list], list], gm: torch.fx.GraphModule) -> Callable[[list], list]:
    """`call`, or gm run eagerly where an input whose storage offset was recorded
    arrives at another offset or with other strides."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    checks = [(i, layout) for i, n in enumerate(placeholders) if (layout := _layout(n)) is not None]
    if not checks:
        return call
    warned: list[bool] = []

    def run(args: list) -> list:
        for i, (offset, strides) in checks:
            x = args[i]
            if x.storage_offset() != offset or tuple(x.stride()) != strides:
                if not warned:
                    warned.append(True)
                    warnings.warn(
                        f"strata: an input read by as_strided begins at storage offset {x.storage_offset()} "
                        f"(strides {tuple(x.stride())}), not {offset} ({strides}) as traced: this graph runs eagerly"
                    )
                out = gm(*args)
                return list(out) if isinstance(out, list | tuple) else [out]
        return call(args)

    return run
