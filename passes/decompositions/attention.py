"""strata::sdpa → prim.sdpa, and strata::sdpa_forward/backward → prim.sdpa_forward/backward
(dialects/strata_ops.py; frontend/attention/ writes them): library calls."""

from __future__ import annotations

from xdsl.ir import SSAValue

from strata.dialects.aten import AtenOp
from strata.dialects import strata_ops as _registers_strata_ops  # noqa: F401  (the ops' schemas)
from strata.dialects.prim_attention import ScaledDotProductAttentionOp
from strata.dialects.prim_attention_training import SdpaBackwardOp, SdpaForwardOp
from strata.passes.decompositions.builder import Decline, PrimBuilder, tensor_of
from strata.passes.decompositions.rules import decomposes


@decomposes("strata::sdpa")
def sdpa(op: AtenOp, b: PrimBuilder) -> SSAValue:
    q, k, v, mask = b.arg("q"), b.arg("k"), b.arg("v"), b.arg("attn_mask")
    if not (tensor_of(q).dtype == tensor_of(k).dtype == tensor_of(v).dtype):
        raise Decline("query, key and value of different dtypes")
    scale = b.arg("scale")
    return b.add(ScaledDotProductAttentionOp(q, k, v, mask, bool(b.arg("is_causal")), None if scale is None else float(scale)))


def _flags(b: PrimBuilder) -> tuple[bool, float | None, int]:
    scale = b.arg("scale")
    return bool(b.arg("is_causal")), None if scale is None else float(scale), int(b.arg("backend"))


@decomposes("strata::sdpa_forward")
def sdpa_forward(op: AtenOp, b: PrimBuilder) -> list[SSAValue]:
    q, k, v, mask = b.arg("q"), b.arg("k"), b.arg("v"), b.arg("attn_mask")
    call = SdpaForwardOp(q, k, v, mask, b.out(1), *_flags(b))
    if call.out.type != b.out(0):
        raise Decline(f"prim.sdpa_forward gives {call.out.type} where the op declares {b.out(0)}")
    b.add(call)
    return list(call.results)


@decomposes("strata::sdpa_backward")
def sdpa_backward(op: AtenOp, b: PrimBuilder) -> list[SSAValue]:
    args = [b.arg(n) for n in ("grad", "q", "k", "v", "attn_mask", "out", "lse")]
    b.add(SdpaBackwardOp(*args, *_flags(b)))
    return list(b.ops[-1].results)
