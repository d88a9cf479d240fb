"""strata::sdpa (frontend/attention.py) → prim.sdpa, a library call."""

from __future__ import annotations

from xdsl.ir import SSAValue

from strata.dialects.aten import AtenOp
from strata.frontend import attention as _registers_strata_sdpa  # noqa: F401  (the op's schema)
from strata.dialects.prim_attention import ScaledDotProductAttentionOp
from strata.passes.decompositions.builder import Decline, PrimBuilder, tensor_of
from strata.passes.decompositions.rules import decomposes


@decomposes("strata::sdpa")
def sdpa(op: AtenOp, b: PrimBuilder) -> SSAValue:
    q, k, v, mask = b.arg("q"), b.arg("k"), b.arg("v"), b.arg("attn_mask")
    if not (tensor_of(q).dtype == tensor_of(k).dtype == tensor_of(v).dtype):
        raise Decline("query, key and value of different dtypes")
    scale = b.arg("scale")
    return b.add(ScaledDotProductAttentionOp(q, k, v, mask, bool(b.arg("is_causal")), None if scale is None else float(scale)))
