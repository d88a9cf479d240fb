"""Library calls (matrix products, convolutions, attention, cat, views) as torch calls
with every argument worked out when the graph is compiled (runtime/compiled_graph.py
makes them steps of its runner)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from strata.dialects import prim
from strata.dialects.prim import PrimOp
from strata.dialects.prim_attention import ScaledDotProductAttentionOp
from strata.dialects.types import Dim, sym
from strata.runtime.allocation import as_sequence_major
from strata.runtime.decode_attention_choice import decode_attention_takes
from strata.runtime.layouts import sequence_major


def static_dims(dims: Sequence[Dim]) -> list[int] | None:
    """dims as ints, or None if one of them names a shape symbol."""
    exprs = [sym(d) for d in dims]
    return [int(e) for e in exprs] if all(e.is_Integer for e in exprs) else None


def static_library_call(
    op: PrimOp, memory_format: torch.memory_format, views_only: bool = False, device: torch.device | None = None
) -> Callable[..., torch.Tensor] | None:
    """A torch call with every argument worked out now, for ops whose result does not
    depend on shape symbols (None otherwise: the op's reference runs). `views_only`:
    no kernel reads the result, only library calls through views of it
    (_only_viewed_by_library_calls) or, for a convolution, the graph's return: it keeps
    the layout the library gives it."""
    if isinstance(op, prim.MmOp):
        return torch.mm
    if isinstance(op, prim.BmmOp):
        return torch.bmm
    if isinstance(op, prim.AddmmOp):
        return torch.addmm
    if isinstance(op, prim.ConvolutionOp):
        stride, padding, dilation, transposed, output_padding, groups = op.params()
        if memory_format == torch.channels_last:
            # NHWC in and out (passes/fusion/layouts.py): the weight is converted on each
            # call (a parameter may change between calls), and so is an input no kernel
            # made (a graph argument): oneDNN's NHWC convolution gains more than that costs.
            def nhwc(x, w, bias=None):
                x = x.contiguous(memory_format=memory_format)
                w = w.contiguous(memory_format=memory_format)
                out = torch.convolution(x, w, bias, stride, padding, dilation, transposed, output_padding, groups)
                return out.contiguous(memory_format=memory_format)

            return nhwc

        def convolution(x, w, bias=None):
            return torch.convolution(x, w, bias, stride, padding, dilation, transposed, output_padding, groups)

        return convolution if views_only else lambda x, w, bias=None: convolution(x, w, bias).contiguous()
    if isinstance(op, ScaledDotProductAttentionOp):
        scale = op.scale.value.data if op.scale is not None else None
        causal = bool(op.is_causal.value.data)
        sdpa = torch.nn.functional.scaled_dot_product_attention

        def attention(q, k, v, mask=None):
            return sdpa(q, k, v, attn_mask=mask, is_causal=causal, scale=scale).contiguous()

        def attention_as_made(q, k, v, mask=None):
            return sdpa(q, k, v, attn_mask=mask, is_causal=causal, scale=scale)

        # torch's fused kernels write (batch, sequence, heads, dim) in memory: the
        # transpose back to the model's layout, and the reshape to the projection's
        # rows, are then views; made contiguous first, they were two copies a layer.
        laid_out = sequence_major(op)  # kernels read it as torch's fused kernels write it

        def attention_laid_out(q, k, v, mask=None):
            return as_sequence_major(sdpa(q, k, v, attn_mask=mask, is_causal=causal, scale=scale))

        torch_call = attention_laid_out if laid_out else attention_as_made if views_only else attention

        if device is not None and decode_attention_takes(op, device):
            from strata.runtime import decode_attention

            def split_keys(q, k, v, mask=None):
                out = decode_attention.decode_attention(q, k, v, mask, scale, sequence_major=laid_out)
                return out if out is not None else torch_call(q, k, v, mask)

            return split_keys
        return torch_call
    if isinstance(op, prim.CatOp) and memory_format == torch.contiguous_format:
        dim = op.dim.value.data

        def cat(*xs: torch.Tensor) -> torch.Tensor:
            # torch.cat of strided operands may follow their layout; kernels read it dense
            out = torch.cat(xs, dim)
            return out if out.is_contiguous() else out.contiguous()

        return cat
    if isinstance(op, prim.PermuteOp):
        dims = prim.ints_of(op.dims)
        return lambda x: x.permute(dims)
    if isinstance(op, prim.ReshapeOp):
        shape = static_dims(prim.dims_of(op.shape))
        return None if shape is None else (lambda x: x.reshape(shape))
    if isinstance(op, prim.SliceOp):
        start, limit = static_dims(prim.dims_of(op.start)), static_dims(prim.dims_of(op.limit))
        if start is None or limit is None:
            return None
        index = tuple(slice(a, b, s) for a, b, s in zip(start, limit, prim.ints_of(op.step)))
        return lambda x: x[index]
    if isinstance(op, prim.BroadcastInDimOp):
        shape = static_dims(prim.dims_of(op.shape))
        if shape is None:
            return None
        kept = prim.ints_of(op.broadcast_dimensions)

        def broadcast(x: torch.Tensor) -> torch.Tensor:
            view = [1] * len(shape)
            for i, d in enumerate(kept):
                view[d] = x.shape[i]
            return x.reshape(view).expand(shape)

        return broadcast
    return None
