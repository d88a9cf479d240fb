"""strata's own torch ops: attention kept whole through AOTAutograd.

`strata::sdpa` (an inference graph's attention, frontend/attention/attention.py) and
`strata::sdpa_forward` / `strata::sdpa_backward` (a training graph's, with the
log-sum-exp the backward reads, frontend/attention/attention_training.py) are custom ops that
AOTAutograd leaves whole and the decompositions lower to prim.sdpa and
prim.sdpa_forward/backward (passes/decompositions/attention.py). Their schemas live
here, with the dialects, because the frontend that writes them and the pass that lowers
them both need them registered; each runs torch's fused attention kernels.
"""

from __future__ import annotations

from strata.dialects.lazy_torch import torch
from torch.nn import functional as F

from strata.dialects.prim_attention_training import fused_backward, fused_forward, fused_forward_meta


@torch.library.custom_op("strata::sdpa", mutates_args=())
def sdpa(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal, scale=scale).contiguous()


@sdpa.register_fake
def _(q, k, v, attn_mask=None, is_causal=False, scale=None):
    return q.new_empty((*q.shape[:-1], v.shape[-1]))


@torch.library.custom_op("strata::sdpa_forward", mutates_args=())
def sdpa_forward(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attn_mask: torch.Tensor | None,
    is_causal: bool,
    scale: float | None,
    backend: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    out, lse = fused_forward(q, k, v, attn_mask, is_causal, scale, backend)
    return out, lse


@sdpa_forward.register_fake
def _(q, k, v, attn_mask, is_causal, scale, backend):
    # What attention requires of the sizes, stated so that symbolic ones are known
    # equal (an empty batch traces no op that would relate them).
    for a, b in ((q.shape[:2], k.shape[:2]), (k.shape[:3], v.shape[:3]), (q.shape[3:], k.shape[3:])):
        for x, y in zip(a, b):
            torch._check(x == y)
    return fused_forward_meta(q, k, v, attn_mask, is_causal, scale, backend)


@torch.library.custom_op("strata::sdpa_backward", mutates_args=())
def sdpa_backward(
    grad: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attn_mask: torch.Tensor | None,
    out: torch.Tensor,
    lse: torch.Tensor,
    is_causal: bool,
    scale: float | None,
    backend: int,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    dq, dk, dv = fused_backward(grad, q, k, v, attn_mask, out, lse, is_causal, scale, backend)
    return dq, dk, dv


@sdpa_backward.register_fake
def _(grad, q, k, v, attn_mask, out, lse, is_causal, scale, backend):
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


def _setup_context(ctx, inputs, output) -> None:
    q, k, v, mask, is_causal, scale, backend = inputs
    ctx.save_for_backward(q, k, v, mask, *output)
    ctx.flags = (is_causal, scale, backend)


def _gradient(ctx, grad_out, grad_lse):
    q, k, v, mask, out, lse = ctx.saved_tensors
    dq, dk, dv = sdpa_backward(grad_out, q, k, v, mask, out, lse, *ctx.flags)
    return dq, dk, dv, None, None, None, None


sdpa_forward.register_autograd(_gradient, setup_context=_setup_context)
