"""Which of a graph's attention calls run as split-key decode attention
(runtime/decode_attention.py), decided when the graph is built, without importing
Triton: a CUDA graph's non-causal attention of at most MAX_ROWS static query rows (a
decode step; with grouped heads folded by passes/grouped_attention.py, the group's
rows). Each call still checks its tensors and runs torch's SDPA where the kernel does
not apply. STRATA_DECODE_ATTENTION=0 keeps torch's SDPA everywhere.
"""

from __future__ import annotations

import os

import torch

from strata.dialects.prim_attention import MAX_DECODE_ROWS as MAX_ROWS, ScaledDotProductAttentionOp
from strata.dialects.types import TensorType

ENV_VAR = "STRATA_DECODE_ATTENTION"
MAX_HEAD_DIM = 256


def decode_attention_takes(op: ScaledDotProductAttentionOp, device: torch.device) -> bool:
    if device.type != "cuda" or os.environ.get(ENV_VAR, "1") == "0" or op.is_causal.value.data:
        return False
    q = op.inputs[0].type
    if not isinstance(q, TensorType) or q.rank != 4:
        return False
    rows, head = q.dims[2], q.dims[3]
    return isinstance(rows, int) and 0 < rows <= MAX_ROWS and isinstance(head, int) and head <= MAX_HEAD_DIM
