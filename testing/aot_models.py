"""Small models the ahead-of-time tests and docs package: an MLP, a GPT with a
dynamic batch and sequence, and a CNN, each with the inputs and dynamic dims it is
exported with and the shapes in range it is checked over."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn


class MLP(nn.Module):
    def __init__(self, d_in: int = 16, hidden: int = 64, d_out: int = 10):
        super().__init__()
        self.l1, self.l2 = nn.Linear(d_in, hidden), nn.Linear(hidden, d_out)

    def forward(self, x):
        return self.l2(F.gelu(self.l1(x))).softmax(-1)


class Block(nn.Module):
    def __init__(self, d: int, heads: int, qkv_bias: bool = True):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d, bias=qkv_bias), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q, k, v = (y.view(b, t, self.heads, c // self.heads).transpose(1, 2) for y in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, vocab: int = 97, d: int = 32, heads: int = 4, layers: int = 2, block: int = 64,
                 qkv_bias: bool = True):
        super().__init__()
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(block, d)
        self.blocks = nn.ModuleList(Block(d, heads, qkv_bias) for _ in range(layers))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


class CNN(nn.Module):
    def __init__(self, classes: int = 10):
        super().__init__()
        self.c1, self.bn1 = nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16)
        self.c2, self.bn2 = nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32)
        self.fc = nn.Linear(32, classes)

    def forward(self, x):
        x = F.relu(self.bn1(self.c1(x)))
        x = F.relu(self.bn2(self.c2(x)))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


@dataclass
class Case:
    name: str
    model: nn.Module
    example: tuple
    dynamic_shapes: dict[str, Any]
    checks: list[tuple]  # inputs in range, each a tuple of arguments


def cases(seed: int = 0) -> list[Case]:
    from torch.export import Dim

    torch.manual_seed(seed)
    gpt = GPT().eval()
    cnn = CNN().eval()
    with torch.no_grad():  # batch norms with statistics of their own, not the identity
        for bn in (cnn.bn1, cnn.bn2):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
    batch, seq = Dim("batch", min=1, max=8), Dim("seq", min=2, max=64)
    return [
        Case("mlp", MLP().eval(), (torch.randn(4, 16),), {"x": {0: Dim("batch", min=1, max=1024)}},
             [(torch.randn(n, 16),) for n in (1, 3, 17, 1000)]),
        Case("gpt", gpt, (torch.randint(0, 97, (2, 8)),), {"idx": {0: batch, 1: seq}},
             [(torch.randint(0, 97, (b, t)),) for b, t in ((1, 2), (2, 8), (3, 31), (8, 64))]),
        Case("cnn", cnn, (torch.randn(2, 3, 16, 16),), {"x": {0: Dim("batch", min=1, max=32)}},
             [(torch.randn(n, 3, 16, 16),) for n in (1, 5, 32)]),
    ]
