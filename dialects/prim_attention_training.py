"""prim.sdpa_forward and prim.sdpa_backward: attention for training, as library calls.

The forward returns the output and the log-sum-exp of each query's scores (f32), which
the backward reads to recompute the probabilities block by block: torch's fused
kernels, forward and backward (flash, cuDNN or memory-efficient attention on CUDA, the
blocked flash kernel on the CPU), so the [L, S] matrix of scores is never stored.
`backend` names the kernel (torch.nn.attention.SDPBackend's value: 1 flash, 2
memory-efficient, 3 cuDNN), fixed when the graph was rewritten
(frontend/attention/attention_training.py) so that both ops use the same one; the log-sum-exp's
layout is that kernel's ([B, H, L], [B, H, L, 1], [B, L, H], or L padded to a multiple
of 32), taken from torch's meta kernel by the rule that builds the op.

- `prim.sdpa_forward`: q [B, H, L, E], k [B, H, S, E], v [B, H, S, Ev], an optional
  additive mask → out [B, H, L, Ev] (q's dtype), lse (f32).
- `prim.sdpa_backward`: the output's gradient, q, k, v, the optional mask, out and lse
  → the gradients of q, k and v.
"""

from __future__ import annotations

from strata.dialects.lazy_torch import torch
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, f64, i1, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, opt_prop_def, prop_def, result_def, var_operand_def
from xdsl.utils.exceptions import VerifyException

from strata.dialects.prim import TensorOp, same_dims
from strata.dialects.prim_linalg import check_result_types
from strata.dialects.types import TensorType

class _AtenOps:
    """torch.ops.aten, looked up when an op is first called (dialects/lazy_torch.py)."""

    def __getattr__(self, name: str):
        return getattr(torch.ops.aten, name)


aten = _AtenOps()

# torch.nn.attention.SDPBackend's values, as torch._fused_sdp_choice returns them.
FLASH, EFFICIENT, CUDNN = 1, 2, 3
CPU_OR_CUDA_BACKENDS = {"cuda": (FLASH, EFFICIENT, CUDNN), "cpu": (FLASH,)}


def _efficient_bias(mask: torch.Tensor | None, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor | None:
    """The additive mask as the memory-efficient kernel takes it (torch's
    preprocess_mask): [B, H, L, S], its rows padded to a multiple of 16 elements."""
    if mask is None:
        return None
    shape = (q.size(0), q.size(1), q.size(2), k.size(2))
    s = shape[-1]
    if s % 16:
        padded = mask.new_zeros((*mask.shape[:-1], s + 16 - s % 16))
        padded[..., :s] = mask
        mask = padded[..., :s]
    return mask.expand(shape)


def fused_forward(q, k, v, mask, is_causal: bool, scale: float | None, backend: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(out, lse) from torch's fused kernel `backend` (on fake tensors, its meta kernel)."""
    if not _nonempty(q, k, v):  # the kernels take no empty sequence (the CPU's divides by it)
        out = aten._scaled_dot_product_attention_math(q, k, v, mask, 0.0, is_causal, scale=scale)[0]
        meta = (x.to("meta") for x in (q, k, v))
        lse = _kernel_forward(*meta, None if mask is None else mask.to("meta"), is_causal, scale, backend, q.device.type)[1]
        return out, torch.zeros(lse.shape, dtype=lse.dtype, device=q.device)
    return _kernel_forward(q, k, v, mask, is_causal, scale, backend, q.device.type)


def _nonempty(*xs: torch.Tensor) -> bool:
    return all(x.numel() != 0 for x in xs)


def fused_forward_meta(q, k, v, mask, is_causal: bool, scale: float | None, backend: int) -> tuple[torch.Tensor, torch.Tensor]:
    """fused_forward's results on fake tensors: the kernel's meta function, whatever
    the (possibly symbolic) sizes."""
    return _kernel_forward(q, k, v, mask, is_causal, scale, backend, q.device.type)


def _kernel_forward(q, k, v, mask, is_causal: bool, scale: float | None, backend: int, device: str):
    if device == "cpu":
        return aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, is_causal, attn_mask=mask, scale=scale)
    if backend == FLASH:
        return aten._scaled_dot_product_flash_attention(q, k, v, 0.0, is_causal, False, scale=scale)[:2]
    if backend == CUDNN:
        return aten._scaled_dot_product_cudnn_attention(q, k, v, mask, True, 0.0, is_causal, False, scale=scale)[:2]
    bias = _efficient_bias(mask, q, k)
    return aten._scaled_dot_product_efficient_attention(q, k, v, bias, True, 0.0, is_causal, scale=scale)[:2]


def fused_backward(grad, q, k, v, mask, out, lse, is_causal: bool, scale: float | None, backend: int):
    """(dq, dk, dv) from the backward kernel of `backend`, given what fused_forward made."""
    if not _nonempty(q, k, v):  # no query or no key: no gradient flows (fused_forward)
        return torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    if grad.stride(-1) != 1:
        grad = grad.contiguous()
    if q.device.type == "cpu":
        return aten._scaled_dot_product_flash_attention_for_cpu_backward(
            grad, q, k, v, out, lse, 0.0, is_causal, attn_mask=mask, scale=scale
        )
    seed, offset = _no_random_state(q.device)
    L, S = q.size(2), k.size(2)
    if backend == FLASH:
        return aten._scaled_dot_product_flash_attention_backward(
            grad, q, k, v, out, lse, None, None, L, S, 0.0, is_causal, seed, offset, scale=scale
        )
    if backend == CUDNN:
        return aten._scaled_dot_product_cudnn_attention_backward(
            grad, q, k, v, out, lse, seed, offset, mask, None, None, L, S, 0.0, is_causal, scale=scale
        )
    bias = _efficient_bias(mask, q, k)
    dq, dk, dv, _ = aten._scaled_dot_product_efficient_attention_backward(
        grad, q, k, v, bias, out, lse, seed, offset, 0.0, [True, True, True, False], is_causal, scale=scale
    )
    return dq, dk, dv


_RANDOM_STATE: dict[torch.device, tuple[torch.Tensor, torch.Tensor]] = {}


def _no_random_state(device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """With no dropout the kernels read no random state: stand-ins for its seed and
    offset, made once per device (two allocations a call otherwise)."""
    state = _RANDOM_STATE.get(device)
    if state is None:
        state = _RANDOM_STATE[device] = tuple(torch.empty((), dtype=torch.int64, device=device) for _ in range(2))
    return state


def _flags(is_causal: bool, scale: float | None, backend: int) -> dict[str, Attribute]:
    props: dict[str, Attribute] = {"is_causal": IntegerAttr(int(is_causal), i1), "backend": IntegerAttr(backend, i64)}
    if scale is not None:
        props["scale"] = FloatAttr(scale, f64)
    return props


class _FusedAttention(TensorOp):
    """The flags both ops carry, and the check of q, k, v (and the mask) both make."""

    is_causal = prop_def(IntegerAttr)
    backend = prop_def(IntegerAttr)
    scale = opt_prop_def(FloatAttr)

    def flags(self) -> tuple[bool, float | None, int]:
        scale = self.scale.value.data if self.scale is not None else None
        return bool(self.is_causal.value.data), scale, self.backend.value.data

    def check_attention(self, q: SSAValue, k: SSAValue, v: SSAValue, mask: SSAValue | None) -> None:
        tq, tk, tv = (self.tensor(x) for x in (q, k, v))
        if (
            not (tq.rank == tk.rank == tv.rank == 4)
            or not (tq.dtype == tk.dtype == tv.dtype)
            or not same_dims(tq.dims[:2], tk.dims[:2])
            or not same_dims(tk.dims[:2], tv.dims[:2])
            or not same_dims([tq.dims[-1]], [tk.dims[-1]])
            or not same_dims([tk.dims[-2]], [tv.dims[-2]])
        ):
            raise VerifyException(f"{self.name}: no attention of q {tq}, k {tk}, v {tv}")
        if mask is not None and self.tensor(mask).rank > 4:
            raise VerifyException(f"{self.name}: the mask {mask.type} has more dims than q")
        if self.backend.value.data not in (FLASH, EFFICIENT, CUDNN):
            raise VerifyException(f"{self.name}: no fused attention kernel {self.backend.value.data}")


@irdl_op_definition
class SdpaForwardOp(_FusedAttention):
    """q, k, v (and an optional additive mask) → out and the log-sum-exp (f32)."""

    name = "prim.sdpa_forward"
    inputs = var_operand_def()  # q, k, v and the optional mask
    out = result_def()
    lse = result_def()

    def __init__(self, q, k, v, mask, lse_type: TensorType, is_causal: bool, scale: float | None, backend: int):
        out = q.type.with_dims([*q.type.dims[:-1], v.type.dims[-1]])
        super().__init__(
            operands=[[q, k, v] + ([mask] if mask is not None else [])],
            result_types=[out, lse_type],
            properties=_flags(is_causal, scale, backend),
        )

    def infer_type(self) -> Attribute:
        q, v = self.tensor(self.inputs[0]), self.tensor(self.inputs[2])
        return q.with_dims([*q.dims[:-1], v.dims[-1]])

    def verify_(self) -> None:
        if len(self.inputs) not in (3, 4):
            raise VerifyException(f"prim.sdpa_forward takes q, k, v and an optional mask, got {len(self.inputs)} operands")
        self.check_attention(*self.inputs[:3], self.inputs[3] if len(self.inputs) == 4 else None)
        lse = self.tensor(self.lse)
        if lse.dtype != "f32" or lse.rank not in (3, 4) or not same_dims(lse.dims[:1], self.tensor(self.inputs[0]).dims[:1]):
            raise VerifyException(f"prim.sdpa_forward: the log-sum-exp is {lse}, expected f32 [B, …]")
        check_result_types(self, [self.infer_type(), lse])

    def reference(self, *operands):
        return fused_attention_call(self)(*operands)


@irdl_op_definition
class SdpaBackwardOp(_FusedAttention):
    """The output's gradient, q, k, v, the optional mask, out and lse → dq, dk, dv."""

    name = "prim.sdpa_backward"
    inputs = var_operand_def()  # grad, q, k, v, out, lse and the optional mask
    grad_q = result_def()
    grad_k = result_def()
    grad_v = result_def()

    def __init__(self, grad, q, k, v, mask, out, lse, is_causal: bool, scale: float | None, backend: int):
        super().__init__(
            operands=[[grad, q, k, v, out, lse] + ([mask] if mask is not None else [])],
            result_types=[q.type, k.type, v.type],
            properties=_flags(is_causal, scale, backend),
        )

    def infer_type(self) -> Attribute:
        return self.tensor(self.inputs[1])

    def verify_(self) -> None:
        if len(self.inputs) not in (6, 7):
            raise VerifyException(f"prim.sdpa_backward takes grad, q, k, v, out, lse and an optional mask, got {len(self.inputs)} operands")
        grad, q, k, v, out = (self.tensor(x) for x in self.inputs[:5])
        self.check_attention(*self.inputs[1:4], self.inputs[6] if len(self.inputs) == 7 else None)
        if not same_dims(grad.dims, out.dims) or grad.dtype != q.dtype:
            raise VerifyException(f"prim.sdpa_backward: the output's gradient {grad} is not of out {out}")
        check_result_types(self, [q, k, v])

    def reference(self, *operands):
        return tuple(fused_attention_call(self)(*operands))


FUSED_ATTENTION_OPS = (SdpaForwardOp, SdpaBackwardOp)


def fused_attention_call(op: SdpaForwardOp | SdpaBackwardOp):
    """The op's reference with its flags read from the IR now, not on every call (the
    runtime's step)."""
    flags = op.flags()
    if isinstance(op, SdpaForwardOp):
        return lambda q, k, v, mask=None: fused_forward(q, k, v, mask, *flags)
    return lambda grad, q, k, v, out, lse, mask=None: fused_backward(grad, q, k, v, mask, out, lse, *flags)
