"""Attention in a training graph: torch's fused kernels forward and backward.

A training graph's sdpa call becomes `strata::sdpa_forward` (the output and the
log-sum-exp of each query's scores) and its backward `strata::sdpa_backward`, custom ops
AOTAutograd differentiates through the formula registered here, so the compiled
backward reads what the forward saved: the fused backward kernel (flash, cuDNN or
memory-efficient attention on CUDA, the blocked flash kernel on the CPU) never builds
the [L, S] matrix of scores. Written as math (bmm, softmax, bmm and their gradients),
attention moves those scores through memory several times a layer: its softmax
kernels alone took 6 of the 17 ms of GPU time of GPT-2's training step on an H200.

The kernel is chosen once, when the graph is rewritten, as torch's sdpa would choose it
for the traced inputs (`torch._fused_sdp_choice`), and travels as the ops' `backend`
argument, so forward and backward use the same one. A call torch would run as math
(an unsupported mask, dtype or head size), with dropout, grouped-query heads, or a
mask that needs a gradient is written as math (frontend/attention/attention.py's rewrite).
"""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.fx

from strata.dialects.prim_attention_training import CPU_OR_CUDA_BACKENDS
from strata.dialects.strata_ops import sdpa_backward, sdpa_forward  # noqa: F401  (the ops the rewrite calls)
from strata.frontend.attention.attention import (
    _autocast_dtypes,
    _calls,
    _cast_as_autocast_would,
    _example,
    _mask_sends_torch_to_math,
    _replace,
    _rewrite_as_math,
    _shared_additive_mask,
)


def attention_for_training(gm: torch.fx.GraphModule) -> int:
    """Rewrites each sdpa call of a training graph to strata::sdpa_forward where a fused
    kernel takes it, else to torch's math implementation; returns how many it rewrote."""
    rewritten = 0
    additive: dict = {}
    autocast = _autocast_dtypes(gm)
    for n, args in _calls(gm):
        _cast_as_autocast_would(gm, n, args, autocast.get(n, {}))
        backend = _fused_backend(args)
        if backend is None:
            _rewrite_as_math(gm, n, args)
        else:
            mask = _shared_additive_mask(gm, args.get("attn_mask"), args["query"], additive)
            with gm.graph.inserting_before(n):
                call = gm.graph.call_function(
                    torch.ops.strata.sdpa_forward.default,
                    (args["query"], args["key"], args["value"], mask, bool(args.get("is_causal", False)), args.get("scale"), backend),
                )
                out = gm.graph.call_function(operator.getitem, (call, 0))
            _replace(gm, n, out)
        rewritten += 1
    if rewritten:
        gm.recompile()
    return rewritten


def _fused_backend(args: dict[str, Any]) -> int | None:
    """The fused kernel torch's sdpa would run for these traced inputs, where strata's
    ops take it; None for the math implementation."""
    if args.get("dropout_p", 0.0) != 0.0 or args.get("enable_gqa", False):
        return None
    if not all(isinstance(args.get(k), bool | float | None) for k in ("is_causal", "scale")):
        return None
    q, k, v = (_example(args[name]) for name in ("query", "key", "value"))
    mask = args.get("attn_mask")
    if mask is not None and not isinstance(mask, torch.fx.Node):
        return None
    m = _example(mask) if mask is not None else None
    if not all(isinstance(t, torch.Tensor) for t in (q, k, v)) or (mask is not None and not isinstance(m, torch.Tensor)):
        return None
    if m is not None and (m.requires_grad or _mask_sends_torch_to_math(m)):
        return None
    # On fake tensors torch's choice is always math: it is made on real ones, unset, of
    # the traced metadata (symbolic sizes at their hints) but one batch element.
    try:
        q, k, v, m = (None if t is None else _real_like(t) for t in (q, k, v, m))
    except (TypeError, RuntimeError):  # a size with no hint (data-dependent)
        return None
    if q.dim() != 4 or not (q.dtype == k.dtype == v.dtype) or not q.is_floating_point():
        return None
    if m is not None and m.dtype == torch.bool:
        m = torch.zeros_like(m, dtype=q.dtype)  # what sdpa sees once the mask is additive
    if q.size(-1) % 8 or v.size(-1) % 8:
        return None  # torch pads these for its flash kernel; left to math
    try:
        choice = int(torch._fused_sdp_choice(q, k, v, m, 0.0, bool(args.get("is_causal", False)), scale=args.get("scale")))
    except RuntimeError:
        return None
    return choice if choice in CPU_OR_CUDA_BACKENDS.get(q.device.type, ()) else None


def _real_like(t: torch.Tensor) -> torch.Tensor:
    """An uninitialized tensor with t's metadata, a symbolic size at its hint, and a
    4-d tensor's batch of one (the choice does not depend on how many, and a batch of
    long sequences would take memory the compile does not need)."""
    hint = lambda xs: [int(x.node.hint) if isinstance(x, torch.SymInt) else x for x in xs]  # noqa: E731
    # An empty tensor is chosen for as if it were not: fused_forward computes empty ones
    # without a kernel.
    sizes = [max(n, 1) for n in hint(t.shape)]
    if len(sizes) == 4:
        sizes[0] = 1
    real = torch.empty_strided(sizes, hint(t.stride()), dtype=t.dtype, device=t.device)
    return real.requires_grad_(t.requires_grad)
