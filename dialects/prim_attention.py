"""prim.sdpa: scaled dot-product attention as a library call.

softmax(q·kᵀ·scale + mask)·v over the last two dims, batched over the leading ones.
It runs as torch's scaled_dot_product_attention, which picks a fused kernel (flash or
memory-efficient attention on CUDA, a blocked one on the CPU) that never materializes
the [L, S] matrix of scores: decomposed into bmm, softmax and bmm, attention moves
L·S scores through memory twice.
"""

from __future__ import annotations

from strata.dialects.lazy_torch import torch
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, f64, i1
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, opt_prop_def, prop_def, result_def, var_operand_def
from xdsl.utils.exceptions import VerifyException

from strata.dialects.prim import TensorOp, same_dims
from strata.dialects.types import TensorType


# The most query rows a decode step's attention holds in one program: the rows
# fold-grouped-attention folds a group into (passes/grouped_attention.py), and the
# rows a GPU's split-key decode attention takes (runtime/decode_attention_choice.py).
MAX_DECODE_ROWS = 64


@irdl_op_definition
class ScaledDotProductAttentionOp(TensorOp):
    """q [..., L, E], k [..., S, E], v [..., S, Ev] (and an optional additive or
    boolean mask broadcastable to [..., L, S]) → [..., L, Ev]; `is_causal` masks the
    upper triangle; `scale` defaults to 1/sqrt(E). No dropout."""

    name = "prim.sdpa"
    inputs = var_operand_def()
    result = result_def()
    is_causal = prop_def(IntegerAttr)
    scale = opt_prop_def(FloatAttr)

    def __init__(self, q: SSAValue, k: SSAValue, v: SSAValue, mask: SSAValue | None, is_causal: bool, scale: float | None):
        props: dict[str, Attribute] = {"is_causal": IntegerAttr(int(is_causal), i1)}
        if scale is not None:
            props["scale"] = FloatAttr(scale, f64)
        operands = [q, k, v] + ([mask] if mask is not None else [])
        super().__init__(operands=[operands], result_types=[_result_type(q.type, v.type)], properties=props)

    def infer_type(self) -> Attribute:
        return _result_type(self.tensor(self.inputs[0]), self.tensor(self.inputs[2]))

    def verify_(self) -> None:
        if len(self.inputs) not in (3, 4):
            raise VerifyException(f"prim.sdpa takes q, k, v and an optional mask, got {len(self.inputs)} operands")
        q, k, v = (self.tensor(x) for x in self.inputs[:3])
        if (
            q.rank < 2
            or not (q.rank == k.rank == v.rank)
            or not (q.dtype == k.dtype == v.dtype)
            or not same_dims(q.dims[:-2], k.dims[:-2])
            or not same_dims(k.dims[:-2], v.dims[:-2])
            or not same_dims([q.dims[-1]], [k.dims[-1]])
            or not same_dims([k.dims[-2]], [v.dims[-2]])
        ):
            raise VerifyException(f"prim.sdpa: no attention of q {q}, k {k}, v {v}")
        if len(self.inputs) == 4 and self.tensor(self.inputs[3]).rank > q.rank:
            raise VerifyException(f"prim.sdpa: the mask {self.inputs[3].type} has more dims than q")
        super().verify_()

    def reference(self, q, k, v, mask=None):
        scale = self.scale.value.data if self.scale is not None else None
        return torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=0.0, is_causal=bool(self.is_causal.value.data), scale=scale
        )


def _result_type(q: Attribute, v: Attribute) -> Attribute:
    assert isinstance(q, TensorType) and isinstance(v, TensorType)
    return q.with_dims([*q.dims[:-1], v.dims[-1]])


ATTENTION_OPS = (ScaledDotProductAttentionOp,)
