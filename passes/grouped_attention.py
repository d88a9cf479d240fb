"""fold-grouped-attention: grouped-query attention without its repeated heads.

A model with fewer key/value heads than query heads repeats each K and V head for its
group of G query heads before attention (`k.repeat_interleave(G, dim=1)`, or HF's
`repeat_kv`): at the prim level `reshape(broadcast_in_dim(reshape(k)))`, a copy G
times the size of the cache, written and then read by the attention, on every decoded
token. For a few queries the same attention folds the group into the query rows
instead: query head kv·G + g at position l becomes row g·L + l of kv head kv,

    sdpa(q [B, Hkv·G, L, E], repeat(k), repeat(v), mask)
      = reshape(sdpa(reshape(q, [B, Hkv, G·L, E]), k, v, reshape(mask [B, Hkv·G, L, S], [B, Hkv, G·L, S])))

so K and V are read once per kv head. A mask shared by the heads stays shared (a decode
step's is unchanged); only a per-head mask or one of several query rows is laid out
again for the folded rows.

Only where that pays and is exact: L static and at most MAX_ROWS (decoding; a long
prefill would repeat the mask instead of K and V), G·L at most MAX_DECODE_ROWS (the rows
a GPU's split-key decode attention holds, runtime/decode_attention.py: cuDNN's attention
over more folded rows has too few blocks), no `is_causal` (whose triangle follows the
query rows), G from a repeat of both K and V alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriter, PatternRewriteWalker
from xdsl.pattern_rewriter import RewritePattern, op_type_rewrite_pattern

from strata.dialects import prim
from strata.passes.provenance import inserter, with_source
from strata.dialects.prim_attention import MAX_DECODE_ROWS, ScaledDotProductAttentionOp
from strata.dialects.types import TensorType, sym

MAX_ROWS = 16


def repeated_heads(v: SSAValue) -> tuple[SSAValue, int] | None:
    """(x, G) where v is x [B, Hkv, S, E] with each head repeated G times in place
    (reshape(broadcast_in_dim(...)) as repeat_interleave decomposes), else None."""
    outer = v.owner
    if not isinstance(outer, prim.ReshapeOp) or not isinstance(outer.operands[0].owner, prim.BroadcastInDimOp):
        return None
    wide = outer.operands[0].owner
    dims = wide.results[0].type.dims
    if len(dims) != 5 or not isinstance(dims[2], int):
        return None
    b, hkv, g, s, e = dims
    src = wide.operands[0]
    bd = list(wide.broadcast_dimensions.get_values())
    src_dims = src.type.dims
    if bd == [0, 1, 3, 4] and len(src_dims) == 4:
        x = src
    elif bd == [0, 1, 2, 3, 4] and len(src_dims) == 5 and sym(src_dims[2]) == 1 and isinstance(src.owner, prim.ReshapeOp):
        x = src.owner.operands[0]
    else:
        return None
    xd = x.type.dims
    if len(xd) != 4 or any(sym(p) != sym(q) for p, q in zip(xd, [b, hkv, s, e])):
        return None
    # the broadcast stretched only the group dim
    if any(sym(p) != sym(q) for p, q in zip(src_dims[:2], [b, hkv])):
        return None
    out = v.type.dims
    if sym(out[1]) != sym(hkv * g) or sym(out[2]) != sym(s) or sym(out[0]) != sym(b):
        return None
    return x, g


def folded_mask(mask: SSAValue, add, b, h, hkv, g: int, length: int, s) -> SSAValue:
    """The mask of the folded rows. A mask the same for every head (dim 1 of size 1)
    stays one for all heads, broadcast as attention takes it (a decode step's mask,
    one row over the keys, is then unchanged); a per-head mask is laid out as the
    rows are."""
    dims = list(mask.type.dims)
    if len(dims) < 4:
        mask = add(prim.ReshapeOp(mask, [1] * (4 - len(dims)) + dims))
        dims = [1] * (4 - len(dims)) + dims
    if sym(dims[1]) == 1:
        if length == 1 or sym(dims[2]) == 1:
            return mask
        rows = add(prim.BroadcastInDimOp(mask, [dims[0], 1, g, length, dims[3]], [0, 1, 3, 4]))
        return add(prim.ReshapeOp(rows, [dims[0], 1, g * length, dims[3]]))
    full = [b, h, length, s]
    if tuple(dims) != tuple(full):
        mask = add(prim.BroadcastInDimOp(mask, full, [0, 1, 2, 3]))
    return add(prim.ReshapeOp(mask, [b, hkv, g * length, s]))


@dataclass
class FoldGroupedAttention(RewritePattern):
    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: ScaledDotProductAttentionOp, rewriter: PatternRewriter) -> None:
        q, k, v = op.inputs[:3]
        mask = op.inputs[3] if len(op.inputs) == 4 else None
        qt = q.type
        if op.is_causal.value.data or not isinstance(qt, TensorType) or qt.rank != 4:
            return
        b, h, length, e = qt.dims
        if not isinstance(length, int) or length > MAX_ROWS:
            return
        rk, rv = repeated_heads(k), repeated_heads(v)
        if rk is None or rv is None or rk[1] != rv[1] or rk[1] == 1:
            return
        (kk, g), (vv, _) = rk, rv
        if g * length > MAX_DECODE_ROWS:
            return
        hkv = kk.type.dims[1]
        s = kk.type.dims[2]

        add = inserter(rewriter, op)
        rows = g * length
        q2 = add(prim.ReshapeOp(q, [b, hkv, rows, e]))
        m2 = None
        if mask is not None:
            if mask.type.rank > 4:
                return
            m2 = folded_mask(mask, add, b, h, hkv, g, length, s)
        scale = op.scale.value.data if op.scale is not None else None
        folded = add(ScaledDotProductAttentionOp(q2, kk, vv, m2, False, scale))
        rewriter.replace(op, with_source(op, prim.ReshapeOp(folded, list(op.result.type.dims))))


@dataclass(frozen=True)
class FoldGroupedAttentionPass(ModulePass):
    name = "fold-grouped-attention"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        PatternRewriteWalker(GreedyRewritePatternApplier([FoldGroupedAttention()])).rewrite_module(op)
