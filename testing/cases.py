"""Functions that exercise the aten ops real models produce, for pass tests: each
case is (function, inputs(n, m, dtype)), where the sizes n and m vary between calls
so that dynamic shapes are exercised, and dtype is the floating dtype to use."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def rand(*shape, dtype=torch.float32):
    """Normal random values, drawn in f32 and rounded to `dtype`."""
    return torch.randn(*shape).to(dtype)


class Block(torch.nn.Module):
    """A pre-norm transformer block with attention written by hand."""

    def __init__(self, d: int = 16, heads: int = 2):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.fc1, self.fc2 = torch.nn.Linear(d, 4 * d), torch.nn.Linear(4 * d, d)
        self.drop = torch.nn.Dropout(0.1)

    def forward(self, x, mask):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, -1)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        a = (q @ k.transpose(-2, -1)) / math.sqrt(C // self.heads)
        a = self.drop(torch.softmax(a.masked_fill(mask[:T, :T] == 0, float("-inf")), -1))
        x = x + self.proj((a @ v).transpose(1, 2).contiguous().view(B, T, C))
        return x + self.fc2(self.drop(F.gelu(self.fc1(self.ln2(x)), approximate="tanh")))


# Weights do not matter to the tests, only that the models are in eval mode.
BLOCK = Block().eval()
MLP = torch.nn.Sequential(torch.nn.Linear(7, 5), torch.nn.ReLU(), torch.nn.Linear(5, 3), torch.nn.GELU()).eval()

CASES = {
    "arithmetic": (
        lambda x, y: (
            x + y, x - 2 * y, torch.add(x, y, alpha=3), torch.sub(x, 1.5, alpha=2), 1 - x, x * 3,
            x / y, x / 7, torch.div(x, y, rounding_mode="floor"), torch.div(x, 3, rounding_mode="trunc"),
            -x, x.abs(), x % 0.7, torch.fmod(x, 0.3), torch.atan2(x, y),
        ),
        lambda n, m, dt: [rand(n, m, dtype=dt), rand(m, dtype=dt)],
    ),
    "unary": (
        lambda x: (
            x.exp(), x.abs().log(), x.abs().sqrt(), x.abs().rsqrt(), x.tanh(), x.sigmoid(), x.erf(),
            x.sin(), x.cos(), x.relu(), F.gelu(x), F.gelu(x, approximate="tanh"), x.reciprocal(),
            x.sign(), x.floor(), x.ceil(), x.round(), x.trunc(), x.expm1(), x.abs().log1p(),
            F.leaky_relu(x), F.silu(x),
        ),
        lambda n, m, dt: [rand(n, m, dtype=dt)],
    ),
    "pow": (
        lambda x, y: (
            x**2, x**3, x.abs() ** 0.5, x**-1, x**-2, x.abs() ** -0.5, x.abs() ** 1.7, 2**x,
            x.abs() ** y, x**0, x**1,
        ),
        lambda n, m, dt: [rand(n, m, dtype=dt), rand(n, m, dtype=dt)],
    ),
    "clamp": (
        lambda x, y: (
            x.clamp(-0.5, 0.5), x.clamp(min=0.1), x.clamp(max=0.2), x.clamp(min=y), x.clamp(y, y + 1),
            torch.clamp_min(x, 0), torch.maximum(x, y), torch.minimum(x, y), F.hardtanh(x), F.relu6(x),
        ),
        lambda n, m, dt: [rand(n, m, dtype=dt), rand(m, dtype=dt)],
    ),
    "compare_logic": (
        lambda x, y: (
            x == y, x != 0, x < y, x <= 0.5, x > y, x >= 1, (x > 0) & (y > 0), (x > 0) | (y < 0),
            (x > 0) ^ (y < 0), ~(x > 0), torch.logical_and(x, y), torch.logical_or(x > 0, y),
            torch.logical_xor(x, y), torch.logical_not(x), torch.where(x > y, x, y),
            torch.where(x > 0, x, 0.0), x.masked_fill(x > 0, -1.0), x.isnan(), x.isinf(),
        ),
        lambda n, m, dt: [rand(n, m, dtype=dt), rand(n, m, dtype=dt)],
    ),
    "special_values": (
        lambda x: (torch.nan_to_num(x), torch.nan_to_num(x, nan=1.0, posinf=2.0), x.clamp(0, 1), x.relu(), x.amax(-1)),
        lambda n, m, dt: [torch.tensor([[1.0, math.nan, math.inf, -math.inf, -2.0]] * n).to(dt)],
    ),
    "conversions": (
        lambda x: (
            x.to(torch.bfloat16), x.half().float(), x.double() * 2, x.to(torch.int32), (x > 0).float(),
            x.clone(), x.mT.contiguous(), x.int().to(torch.bool),
        ),
        lambda n, m, dt: [rand(n, m, dtype=dt)],
    ),
    "views": (
        lambda x: (
            x.reshape(-1), x.reshape(2, -1), x.contiguous().view(2, -1), x.permute(1, 0, 2), x.transpose(0, 2), x.unsqueeze(0),
            x[:, None].squeeze(1), x.expand(2, *x.shape), x.mT, x.flatten(), x.unbind(0),
            torch.cat([x, x * 2], 1), torch.cat([x, x.double()]), x.split(2, -1),
        ),
        lambda n, m, dt: [rand(2, n, m, dtype=dt)],
    ),
    "slices": (
        lambda x: (
            x[1:], x[:, -2:], x[..., 1:100], x[-100:1], x[1], x[:, -1], x.narrow(1, 1, 2), x[:, 2:-1],
        ),
        lambda n, m, dt: [rand(n + 1, m + 2, 3, dtype=dt)],
    ),
    "reductions": (
        lambda x: (
            x.sum(), x.sum(0), x.sum((0, 1), keepdim=True), x.sum(-1, dtype=torch.float64), x.mean(),
            x.mean(1, keepdim=True), x.amax(1), x.amin((0, 2)), x.max(), x.min(), x.var(1),
            x.var((0, 1), correction=0), x.std(-1), torch.var_mean(x, 2), x.prod(1), x.prod(),
            (x > 0).any(), (x > 0).all(1), (x > 0).any(-1, keepdim=True), x.logsumexp(-1),
        ),
        lambda n, m, dt: [rand(n, m, 5, dtype=dt)],
    ),
    "normalization": (
        lambda x, w, b: (
            torch.softmax(x, -1), torch.log_softmax(x, 0), torch.softmax(x, 1, dtype=torch.float32),
            F.layer_norm(x, x.shape[-1:]), F.layer_norm(x, x.shape[-2:]), F.layer_norm(x, x.shape[-1:], w, b),
        ),
        lambda n, m, dt: [rand(3, n, m, dtype=dt), rand(m, dtype=dt), rand(m, dtype=dt)],
    ),
    "creation": (
        lambda x: (
            torch.zeros(3, 2), torch.ones_like(x), torch.full((2,), 3.0), torch.full_like(x, 7, dtype=torch.int64),
            torch.arange(x.shape[0]), torch.arange(1, 10, 2, dtype=torch.float32), x.new_empty(x.shape).fill_(1),
            torch.empty(x.shape, dtype=x.dtype).copy_(x * 2), torch.zeros(x.shape[0], dtype=torch.bool), torch.tensor(3.0) + x,
        ),
        lambda n, m, dt: [rand(n, m, dtype=dt)],
    ),
    "linalg": (
        lambda x, w, b: (
            x @ w, F.linear(x, w.t(), b), torch.bmm(x[None].expand(2, -1, -1), w[None].expand(2, -1, -1)),
            torch.addmm(b, x, w, beta=0.5, alpha=2), torch.addmm(b, x, w, beta=0),
        ),
        lambda n, m, dt: [rand(n, m, dtype=dt), rand(m, 6, dtype=dt), rand(6, dtype=dt)],
    ),
    "mlp": (MLP, lambda n, m, dt: [rand(n, 7, dtype=dt)]),
    "transformer_block": (BLOCK, lambda n, m, dt: [rand(n, min(m, 8), 16, dtype=dt), torch.tril(torch.ones(8, 8))]),
    "dropout_eval": (
        lambda x: (F.dropout(x, 0.5, training=False), F.dropout(x, 0.0, training=True)),
        lambda n, m, dt: [rand(n, m, dtype=dt)],
    ),
}

INT_CASES = {
    "integers": (
        lambda a, b: (
            a + b, a * 3, a // b.clamp(min=1), a % 3, a & b, a | b, a ^ b, ~a, a.sum(), (a > 2).sum(),
            a.to(torch.int8).sum(), a.abs(), -a, a.max(), a.float() / 3, a / 2, a**2,
            torch.div(a, 3, rounding_mode="trunc"), a.to(torch.int8) + 100, (a > 0) + (b > 0),
        ),
        lambda n, m, dt: [torch.randint(-9, 10, (n, m)), torch.randint(0, 10, (n, m))],
    ),
}
