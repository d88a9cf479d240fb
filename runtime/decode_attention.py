"""Attention of a few query rows over a long cache, split along the keys (a decode step).

A decode step asks attention for one query row per head over every cached key. torch's
fused kernels (cuDNN, flash) run one block per (batch, head, block of 64+ queries):
with grouped-query heads folded into their kv head's rows (passes/grouped_attention.py)
that is a handful of blocks for the whole GPU, and without the fold K and V are first
copied G times. Here the keys are split instead ("split-K", as flash-decoding does):

  1. `_partial`: one program per (batch, head, split) reads its slice of K and V once,
     for all the head's query rows (the folded group), and keeps the online softmax's
     running max, sum and unnormalized output, in f32;
  2. `_combine`: one program per (batch, head, row) rescales the splits' partial
     results to their common max and divides by the total sum.

Where a mask is given, each program first finds the span of keys of its slice that the
mask leaves in any row and reads K and V only from that span's first block on: a static
KV cache's mask leaves the positions written so far, so the splits beyond them read no
K or V (a masked key adds exp(-inf) = 0 to a row, so the result is the same; NaN in
never-written cache memory stays out of it too).

Scores are `q·k * scale` in f32 (tl.dot accumulates in f32, 16-bit operands multiply
exactly), the probabilities go to the second product in the value's type, as the fused
kernels do. A boolean mask keeps a key where it is true; a float mask is added. A row
with no key left (all masked, or no key at all) is 0, as eager's SDPA gives it; a NaN
in q, or in a key or value a row attends, stays NaN, as in eager.

`decode_attention(q, k, v, mask, scale)` runs it, or returns None where it does not
apply (then torch's SDPA runs): see `applies`. Which graphs call it:
runtime/decode_attention_choice.py (at most MAX_ROWS query rows: beyond, a prefill,
torch's kernels tile the queries well).
"""

from __future__ import annotations

import functools
import importlib.util
import math
import os

import torch
import triton

from strata.runtime.decode_attention_choice import MAX_HEAD_DIM, MAX_ROWS

BLOCK_N = 64
_DTYPES = (torch.float16, torch.bfloat16, torch.float32)


@functools.cache
def _kernels(interpret: bool, dtype: torch.dtype | None = None) -> tuple:
    """(partial, combine): decode_attention_kernels.py loaded as its own module, with
    Triton's interpreter on or off while its decorators run; on the GPU each kernel
    behind a DirectLauncher (codegen/triton_launch.py: little Python per launch), one
    pair per dtype of q: a launcher keeps compiled kernels by the arguments' alignment
    and options, not their dtypes (a generated kernel's never change), so a bf16
    combine kernel would write into an f32 output."""
    path = os.path.join(os.path.dirname(__file__), "decode_attention_kernels.py")
    name = f"strata.runtime.decode_attention_kernels_{'interpreted' if interpret else 'compiled'}"
    old = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1" if interpret else "0"
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        if old is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = old
    if interpret:
        from strata.codegen import triton_interpreter_compat

        triton_interpreter_compat.install()
        return module.partial, module.combine
    from strata.codegen.triton_launch import DirectLauncher

    return DirectLauncher(module.partial), DirectLauncher(module.combine)


@functools.cache
def _processors(index: int) -> int:
    return torch.cuda.get_device_properties(index).multi_processor_count


def applies(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None) -> str | None:
    """Why this kernel does not take the call (None: it does)."""
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        return "not 4-d"
    b, h, m, e = q.shape
    if m > MAX_ROWS or m == 0:
        return f"{m} query rows"
    if e > MAX_HEAD_DIM or v.shape[-1] != e or k.shape[-1] != e:
        return "head dims"
    if k.shape[0] != b or v.shape[:3] != k.shape[:3] or k.shape[1] == 0 or h % k.shape[1]:
        return "batch or heads"
    if q.dtype not in _DTYPES or k.dtype != q.dtype or v.dtype != q.dtype:
        return "dtypes"
    if mask is not None:
        if mask.dim() > 4 or (mask.dtype != torch.bool and mask.dtype != q.dtype):
            return "mask"
        try:
            torch.broadcast_shapes(mask.shape, (b, h, m, k.shape[2]))
        except RuntimeError:
            return "mask shape"
    return None


def combine_warps(block_s: int, block_e: int) -> int:
    """Warps of a combine program: one up to 4,096 partial outputs (a warp reduces
    across the splits without going through shared memory), more beyond (at most 128
    values a thread). H200, a decode layer's attention (4 heads of 4 rows, 32 splits,
    head 128, bf16), in a CUDA graph with PDL: 4.9-6.4 us at 1 warp against 6.3-7.9
    at 4 and 6.4-8.2 at 2, over 30 to 1,500 cached keys."""
    return max(1, min(4, block_s * block_e // 4096))


def decode_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None,
                     scale: float | None = None, interpret: bool = False,
                     sequence_major: bool = False) -> torch.Tensor | None:
    """softmax(q kᵀ · scale + mask) v for q [B, H, M, E] and k, v [B, Hkv, S, E] (H a
    multiple of Hkv, each kv head serving H/Hkv query heads), or None where `applies`
    says no. `interpret`: launch in Triton's interpreter (tests on the CPU).
    `sequence_major`: the result laid out as [B, M, H, E] in memory."""
    if applies(q, k, v, mask) is not None:
        return None
    b, h, m, e = q.shape
    hkv, s = k.shape[1], k.shape[2]
    if sequence_major:
        out = torch.empty((b, m, h, e), dtype=q.dtype, device=q.device).transpose(1, 2)
    else:
        out = torch.empty((b, h, m, e), dtype=q.dtype, device=q.device)
    if s == 0 or b * h == 0:
        return out.zero_()
    if scale is None:
        scale = 1.0 / math.sqrt(e)
    block_m, block_e = max(16, triton.next_power_of_2(m)), max(16, triton.next_power_of_2(e))
    # enough programs to fill the GPU twice over, each at least one block of keys
    # (the interpreter stands for a small GPU: a few programs, some split, some not)
    processors = 8 if interpret else _processors(q.device.index if q.device.index is not None else torch.cuda.current_device())
    blocks = triton.cdiv(s, BLOCK_N)
    splits = max(1, min(blocks, triton.cdiv(2 * processors, b * h)))
    chunk = triton.cdiv(blocks, splits) * BLOCK_N
    splits = triton.cdiv(s, chunk)
    part_o = torch.empty((b * h * splits * block_m * block_e,), dtype=torch.float32, device=q.device)
    part_ml = torch.empty((b * h * splits * 2 * block_m,), dtype=torch.float32, device=q.device)
    if mask is None:
        kind, mask_arg, ms = 0, q, (0, 0, 0, 0)
    else:
        full = mask.expand(b, h, m, s) if mask.dim() == 4 else mask.reshape((1,) * (4 - mask.dim()) + tuple(mask.shape)).expand(b, h, m, s)
        kind, mask_arg, ms = (1 if mask.dtype == torch.bool else 2), full, full.stride()
    partial, combine = _kernels(interpret, None if interpret else q.dtype)
    dot_f32 = q.dtype == torch.float32 or interpret  # the interpreter's numpy has no bf16
    partial[(b * h, splits)](
        q, k, v, mask_arg, part_o, part_ml, *q.stride(), *k.stride(), *v.stride(), *ms,
        h, h // hkv, m, s, e, chunk, splits,
        SCALE=float(scale), MASK=kind, DOT_F32=dot_f32, BLOCK_M=block_m, BLOCK_N=BLOCK_N, BLOCK_E=block_e, num_warps=4, num_stages=2)
    block_s = max(2, triton.next_power_of_2(splits))
    combine[(b * h, m)](
        part_o, part_ml, out, *out.stride(), h, m, e, splits,
        BLOCK_M=block_m, BLOCK_S=block_s, BLOCK_E=block_e, num_warps=combine_warps(block_s, block_e))
    return out
