"""The buffer layouts a fused program asks for (passes/fusion/layouts.py writes them), as the
runtime and the interpreters apply them: the strides of a launch's outputs, the
memory format of a library op's result, and the strides eager gives the graph's
results (passes/fusion/layouts.py)."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from xdsl.dialects.builtin import ArrayAttr, StringAttr
from xdsl.ir import Operation

from strata.dialects import prim
from strata.dialects.attributes import CHANNELS_LAST, LAYOUT_ATTR, RESULT_STRIDES_ATTR, SEQUENCE_MAJOR, STRIDES_ATTR


def launch_strides(op: Operation) -> list[Sequence | None]:
    """Each output's strides (dims: ints or sympy expressions), None for contiguous."""
    attr = op.attributes.get(STRIDES_ATTR)
    if not isinstance(attr, ArrayAttr):
        return [None] * len(op.results)
    return [prim.dims_of(a) for a in attr.data]


def result_format(op: Operation) -> torch.memory_format:
    """The memory format a library op's result must have for the kernels that read it."""
    attr = op.attributes.get(LAYOUT_ATTR)
    if isinstance(attr, StringAttr) and attr.data == CHANNELS_LAST:
        return torch.channels_last
    return torch.contiguous_format


def sequence_major(op: Operation) -> bool:
    """Whether an attention's result is asked for as [B, S, H, E] in memory."""
    attr = op.attributes.get(LAYOUT_ATTR)
    return isinstance(attr, StringAttr) and attr.data == SEQUENCE_MAJOR


def result_strides(program: Operation) -> list[Sequence | None]:
    """Each graph result's strides as eager lays it out, None where row-major (or as made)."""
    attr = program.attributes.get(RESULT_STRIDES_ATTR)
    if not isinstance(attr, ArrayAttr):
        return [None] * len(program.function_type.outputs.data)
    return [prim.dims_of(a) if a.data else None for a in attr.data]
