"""aten.roll, traced whole by AOTAutograd in the layout eager's kernel gives it.

strata lowers roll itself, as one gather (passes/decompositions/rearrange.py), so
AOTAutograd's table maps aten.roll to `roll_in_eager_layout` rather than to torch's
decomposition (arange, fmod, index_select). Either way the traced value would be
contiguous, as torch's meta of roll is, and as CUDA's kernel makes it; but eager's CPU
kernel rolls each dim as the cat of the tensor's two pieces narrowed at the shift
(TensorTransformations.cpp), in the memory format cat picks for them: channels-last
stays channels-last, unless the shift is a multiple of the dim's size (one piece is
then empty, and the result contiguous). The ops computed from the result follow its
layout (TensorIterator), so the layout must be right in the trace, where AOTAutograd
records every value, the backward's saved ones and the views it regenerates included,
not patched into the forward graph afterwards: the roll is traced followed by a
clone into eager's format, which costs strata nothing (a layout only, in which the
gather writes the result).
"""

from __future__ import annotations

import threading

import torch
from torch import _prims_common
from torch.fx.experimental.proxy_tensor import disable_proxy_modes_tracing
from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols, guard_or_false


_inside = threading.local()


def roll_in_eager_layout(x: torch.Tensor, shifts, dims=()):
    """aten.roll in AOTAutograd's trace: the op itself, then a clone into the memory
    format eager gives its result where that is not contiguous."""
    if getattr(_inside, "roll", False):
        return NotImplemented  # the call below: make_fx traces it as the op itself
    _inside.roll = True
    try:
        rolled = torch.ops.aten.roll.default(x, shifts, dims)
    finally:
        _inside.roll = False
    if x.device.type != "cpu":
        return rolled
    fmt = _cpu_format(x, _as_list(shifts), _as_list(dims))
    return rolled if fmt is None else torch.ops.aten.clone.default(rolled, memory_format=fmt)


def _as_list(v) -> list:
    return list(v) if isinstance(v, list | tuple) else [v]


def _cpu_format(x: torch.Tensor, shifts: list, dims: list) -> torch.memory_format | None:
    """The memory format of eager's CPU roll of x where it is not contiguous, else None.
    An empty x is cloned as it is, as torch's meta does too; the flattened roll (no
    dims) is contiguous, and so is the roll of a contiguous x (known without the guards
    the pieces' formats would take). Otherwise a symbolic shift or size decides the
    format by guards (added during AOTAutograd's trace: the capture cache does not
    store such a compile). A shift item() read cannot be guarded on: it is taken to be no multiple of
    the dim's size."""
    if not dims or x.dim() not in (4, 5) or guard_or_false(x.numel() == 0) or x.is_contiguous():
        return None
    fmt = torch.contiguous_format
    with disable_proxy_modes_tracing():  # a computation of layouts: nothing to trace
        for shift, d in zip(shifts, dims):
            d %= x.dim()
            n = x.shape[d]
            start = (n - shift) % n
            if free_unbacked_symbols(start):  # a value item() read: taken to split the dim
                formats = {_piece_format(x, d, n)}
            else:  # cat's rule: the pieces' common format, else contiguous
                formats = {_piece_format(x, d, size) for size in (n - start, start)}
            fmt = formats.pop() if len(formats) == 1 else torch.contiguous_format
            x = torch.empty_like(x, memory_format=fmt)  # what the next dim rolls
    return None if fmt == torch.contiguous_format else fmt


# torch's mirror of the test behind eager's Tensor.suggest_memory_format (renamed in
# later versions)
_like_channels_last = (getattr(_prims_common, "are_strides_like_channels_last_or_false", None)
                       or _prims_common.are_strides_like_channels_last)


def _piece_format(x: torch.Tensor, d: int, size) -> torch.memory_format:
    """The memory format eager suggests for x narrowed to `size` along d: from the
    sizes and strides (narrow itself would guard on bounds that always hold)."""
    if not _like_channels_last([*x.shape[:d], size, *x.shape[d + 1 :]], x.stride()):
        return torch.contiguous_format
    return torch.channels_last if x.dim() == 4 else torch.channels_last_3d
