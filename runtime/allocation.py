"""Allocating a kernel's outputs with as little host time as torch allows.

`torch.empty` goes through the dispatcher and its argument parser: a few microseconds
a tensor, and a compiled graph allocates a buffer for nearly every kernel it launches
(hundreds a training step). On CUDA torch has a direct entry for this,
`_empty_strided_cuda` (what TorchInductor's generated code calls), which allocates on
the current device from the caching allocator; it is used where that device is the
graph's (a single-GPU process), torch.empty_strided elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch._prims_common import make_contiguous_strides_for

Allocator = Callable[[tuple[int, ...], tuple[int, ...], torch.dtype], torch.Tensor]


def contiguous_strides(sizes: Sequence[int]) -> tuple[int, ...]:
    return tuple(make_contiguous_strides_for(sizes))


def fast_empty_strided(device: torch.device) -> Allocator:
    """alloc(sizes, strides, dtype): an uninitialized tensor on `device`."""
    direct = getattr(getattr(torch._C, "_dynamo", None), "guards", None)
    direct = getattr(direct, "_empty_strided_cuda", None)
    if device.type == "cuda" and direct is not None and torch.cuda.device_count() == 1 and device.index in (None, 0):
        return direct
    return lambda sizes, strides, dtype: torch.empty_strided(sizes, strides, dtype=dtype, device=device)


def relayout(x: torch.Tensor, sizes: Sequence[int], strides: Sequence[int]) -> torch.Tensor:
    """x as is if its strides are `strides` (dims of size 1 aside), else a copy so laid out."""
    if all(st == s or n == 1 for st, s, n in zip(x.stride(), strides, sizes)):
        return x
    out = torch.empty_strided(sizes, strides, dtype=x.dtype, device=x.device)
    out.copy_(x)
    return out


def as_sequence_major(t: torch.Tensor) -> torch.Tensor:
    """t ([B, H, S, E]) laid out as [B, S, H, E] in memory (an attention result a
    kernel reads so, runtime/layouts.py's `sequence_major`): itself where torch's fused
    attention made it so, else a copy."""
    swapped = t.transpose(1, 2)
    return t if swapped.is_contiguous() else swapped.contiguous().transpose(1, 2)
