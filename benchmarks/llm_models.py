"""A Llama-style decoder written for the LLM benchmark: RMSNorm, rotary embeddings,
grouped-query attention through SDPA, SwiGLU, and a static KV cache written in place
at `input_pos` (the shape of gpt-fast's decode loop). `sliding_window` turns the
causal mask into Mistral's banded one.

Configurations are named by size; "0.85b" is the decode benchmark's model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class LlamaConfig:
    vocab: int = 32000
    dim: int = 2048
    layers: int = 16
    heads: int = 16
    kv_heads: int = 4
    hidden: int = 5632
    max_seq: int = 2048
    rope_base: float = 10000.0
    sliding_window: int | None = None
    norm_eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.dim // self.heads


CONFIGS = {
    "0.85b": LlamaConfig(),
    "0.3b": LlamaConfig(dim=1024, layers=16, heads=16, kv_heads=4, hidden=2816),
    "tiny": LlamaConfig(vocab=512, dim=64, layers=2, heads=4, kv_heads=2, hidden=160, max_seq=64),
}


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x) * self.weight


def rotary_table(cfg: LlamaConfig) -> torch.Tensor:
    """[max_seq, head_dim/2, 2]: cos and sin of each position's angles."""
    freqs = 1.0 / (cfg.rope_base ** (torch.arange(0, cfg.head_dim, 2).float() / cfg.head_dim))
    angles = torch.outer(torch.arange(cfg.max_seq).float(), freqs)
    return torch.stack([angles.cos(), angles.sin()], dim=-1)


def apply_rotary(x: torch.Tensor, table: torch.Tensor) -> torch.Tensor:
    """x: [B, T, H, D]; table: [T, D/2, 2] (the rows of x's positions)."""
    xs = x.float().reshape(*x.shape[:-1], -1, 2)
    t = table.view(1, xs.size(1), 1, xs.size(3), 2)
    out = torch.stack([xs[..., 0] * t[..., 0] - xs[..., 1] * t[..., 1],
                       xs[..., 1] * t[..., 0] + xs[..., 0] * t[..., 1]], dim=-1)
    return out.flatten(3).type_as(x)


class KVCache(nn.Module):
    def __init__(self, batch: int, cfg: LlamaConfig, dtype: torch.dtype):
        super().__init__()
        shape = (batch, cfg.kv_heads, cfg.max_seq, cfg.head_dim)
        self.register_buffer("k", torch.zeros(shape, dtype=dtype), persistent=False)
        self.register_buffer("v", torch.zeros(shape, dtype=dtype), persistent=False)

    def update(self, input_pos: torch.Tensor, k: torch.Tensor, v: torch.Tensor):
        self.k[:, :, input_pos] = k
        self.v[:, :, input_pos] = v
        return self.k, self.v


class Attention(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.cfg = cfg
        self.wq = nn.Linear(cfg.dim, cfg.heads * cfg.head_dim, bias=False)
        self.wk = nn.Linear(cfg.dim, cfg.kv_heads * cfg.head_dim, bias=False)
        self.wv = nn.Linear(cfg.dim, cfg.kv_heads * cfg.head_dim, bias=False)
        self.wo = nn.Linear(cfg.heads * cfg.head_dim, cfg.dim, bias=False)
        self.cache: KVCache | None = None

    def forward(self, x, table, mask, input_pos):
        cfg = self.cfg
        b, t, _ = x.shape
        q = self.wq(x).view(b, t, cfg.heads, cfg.head_dim)
        k = self.wk(x).view(b, t, cfg.kv_heads, cfg.head_dim)
        v = self.wv(x).view(b, t, cfg.kv_heads, cfg.head_dim)
        q, k = apply_rotary(q, table), apply_rotary(k, table)
        q, k, v = (y.transpose(1, 2) for y in (q, k, v))
        if self.cache is not None:
            k, v = self.cache.update(input_pos, k, v)
        group = cfg.heads // cfg.kv_heads
        k = k.repeat_interleave(group, dim=1)
        v = v.repeat_interleave(group, dim=1)
        if mask is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.wo(y.transpose(1, 2).reshape(b, t, cfg.dim))


class FeedForward(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.w1 = nn.Linear(cfg.dim, cfg.hidden, bias=False)
        self.w3 = nn.Linear(cfg.dim, cfg.hidden, bias=False)
        self.w2 = nn.Linear(cfg.hidden, cfg.dim, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Block(nn.Module):
    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.attention = Attention(cfg)
        self.feed_forward = FeedForward(cfg)
        self.attention_norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.ffn_norm = RMSNorm(cfg.dim, cfg.norm_eps)

    def forward(self, x, table, mask, input_pos):
        h = x + self.attention(self.attention_norm(x), table, mask, input_pos)
        return h + self.feed_forward(self.ffn_norm(h))


class Llama(nn.Module):
    """`forward(idx, input_pos)`: with caches set up, a prefill (input_pos = arange(T))
    or a decode step (T = 1) against the cache; without, a plain causal forward for
    training (input_pos ignored)."""

    def __init__(self, cfg: LlamaConfig):
        super().__init__()
        self.cfg = cfg
        self.tok_embeddings = nn.Embedding(cfg.vocab, cfg.dim)
        self.layers = nn.ModuleList(Block(cfg) for _ in range(cfg.layers))
        self.norm = RMSNorm(cfg.dim, cfg.norm_eps)
        self.output = nn.Linear(cfg.dim, cfg.vocab, bias=False)
        self.register_buffer("rotary", rotary_table(cfg), persistent=False)
        self.register_buffer("allowed", self._allowed(cfg), persistent=False)
        self.cached = False

    @staticmethod
    def _allowed(cfg: LlamaConfig) -> torch.Tensor:
        """[max_seq, max_seq] bool: which cached positions each position may attend."""
        i = torch.arange(cfg.max_seq)
        allowed = i[None, :] <= i[:, None]
        if cfg.sliding_window is not None:
            allowed &= i[None, :] > i[:, None] - cfg.sliding_window
        return allowed

    def setup_caches(self, batch: int) -> None:
        dtype = self.output.weight.dtype
        device = self.output.weight.device
        for layer in self.layers:
            layer.attention.cache = KVCache(batch, self.cfg, dtype).to(device)
        self.cached = True

    def forward(self, idx: torch.Tensor, input_pos: torch.Tensor | None = None) -> torch.Tensor:
        x = self.tok_embeddings(idx)
        if self.cached:
            table = self.rotary[input_pos]
            mask = self.allowed[None, None, input_pos]
        else:
            table = self.rotary[: idx.shape[1]]
            mask = None if self.cfg.sliding_window is None else self.allowed[None, None, : idx.shape[1], : idx.shape[1]]
        for layer in self.layers:
            x = layer(x, table, mask, input_pos)
        return self.output(self.norm(x))


def init_weights(model: Llama, seed: int = 0) -> Llama:
    """Weights with logits far from ties: normal(0, 1/sqrt(fan_in)) linears, so that a
    greedy decode's argmax is decided by a clear margin."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("norm.weight"):
                continue
            fan_in = p.shape[-1]
            p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(fan_in))
    return model


def weight_bytes(model: nn.Module) -> int:
    """Bytes a decode step reads from weights: every parameter but the embedding table,
    of which one row per token is read."""
    total = sum(p.numel() * p.element_size() for n, p in model.named_parameters() if "tok_embeddings" not in n)
    emb = model.tok_embeddings.weight
    return total + emb.shape[1] * emb.element_size()
