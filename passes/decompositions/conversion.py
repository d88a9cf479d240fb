"""Copies and dtype conversions. Tensors have value semantics at this level, so a copy
is its operand and only a change of dtype leaves an op (prim.convert_element_type)."""

from __future__ import annotations

import torch
from xdsl.ir import SSAValue

from strata.dialects.aten import AtenOp
from strata.dialects.attributes import graph_device
from strata.passes.decompositions.builder import Decline, PrimBuilder, tensor_of
from strata.passes.decompositions.rules import decomposes


@decomposes("aten::clone", "aten::alias", "aten::detach", "aten::lift_fresh_copy")
def identity(op: AtenOp, b: PrimBuilder) -> SSAValue:
    return b.arg("self")  # memory formats are layouts, which do not exist here


@decomposes("aten::_to_copy")
def to_copy(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x, dtype = b.arg("self"), b.out().dtype
    # AOTAutograd names the graph's own device on the conversions it makes, as on
    # the tensors it creates; a copy that changes only the device is a transfer,
    # and the input's device is not known here.
    if b.arg("device") is not None and tensor_of(x).dtype == dtype and not on_graph_device(op, b.arg("device")):
        raise Decline("a device transfer")
    layout = b.arg("layout")
    if layout is not None and str(layout) != "torch.strided":
        raise Decline(f"layout {layout}")
    return b.convert(x, dtype)


def on_graph_device(op: AtenOp, device) -> bool:
    """Whether `device` is the graph's own device (its tensors live on one): a copy
    there is no transfer. CUDA with an index could name another GPU than the inputs',
    unless there is only one."""
    own = graph_device(op)
    device = torch.device(device)
    if own is None or device.type != own:
        return False
    if device.type == "cpu" or device.index is None:
        return True
    return device.type == "cuda" and device.index == 0 and torch.cuda.device_count() == 1


@decomposes("aten::copy")
def copy(op: AtenOp, b: PrimBuilder) -> SSAValue:
    # The result is `src` in the shape and dtype of `self`, whose values are unused.
    out = b.out()
    return b.broadcast(b.convert(b.arg("src"), out.dtype), out.dims)
