"""Convolutions, plain and transposed → prim.convolution (a library call), the bias of
an f32/f64 one as an elementwise add that fuses into the next kernel; batch norm in inference → a per-channel scale and
shift, computed as eager's CPU kernel does, which fuses with what surrounds it."""

from __future__ import annotations

from collections.abc import Sequence

import sympy
from xdsl.ir import SSAValue

from strata.dialects import prim
from strata.dialects.aten import AtenOp
from strata.dialects.types import is_float
from strata.passes.decompositions.builder import Decline, PrimBuilder, accumulator, tensor_of
from strata.passes.decompositions.rules import decomposes


def _ints(values, what: str) -> list[int]:
    out = []
    for v in values:
        if isinstance(v, sympy.Expr):
            if not v.is_Integer:
                raise Decline(f"a symbolic convolution {what}")
            v = int(v)
        out.append(int(v))
    return out


def _per_channel(b: PrimBuilder, v: SSAValue, dims: Sequence, dtype: str) -> SSAValue:
    """A [c] tensor broadcast along dim 1 of `dims` (n, c, *spatial)."""
    return b.add(prim.BroadcastInDimOp(b.convert(v, dtype), dims, [1]))


@decomposes("aten::convolution")
def convolution(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x, w, bias = b.arg("input"), b.arg("weight"), b.arg("bias")
    t = tensor_of(x)
    if t.dtype not in ("f32", "f64", "f16", "bf16", "i64") or t.rank < 3:
        raise Decline("a convolution of f32, f64, f16, bf16 or i64 (as eager's CPU kernels), [n, c, *spatial]")
    if tensor_of(w).dtype != t.dtype or (bias is not None and tensor_of(bias).dtype != t.dtype):
        raise Decline("a convolution of operands of different dtypes")
    stride, padding, dilation, output_padding = (
        _ints(b.arg(n), n) for n in ("stride", "padding", "dilation", "output_padding")
    )
    groups = _ints([b.arg("groups")], "groups")[0]
    transposed = bool(b.arg("transposed"))
    # f32 and f64: the bias as an add that fuses into the next kernel (the sum rounds
    # once either way). f16/bf16: eager adds it before rounding the result, so it is
    # an operand of the call (a product rounded to f16 and then added to rounds twice).
    inside = bias is not None and t.dtype not in ("f32", "f64")
    out = b.add(prim.ConvolutionOp(
        x, w, stride, padding, dilation, groups,
        bias=bias if inside else None, transposed=transposed, output_padding=output_padding,
    ))
    if bias is not None and not inside:
        out = b.ew("add", out, _per_channel(b, bias, b.out().dims, t.dtype))
    return out


@decomposes("aten::_native_batch_norm_legit_no_training")
def batch_norm_inference(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    """y = x·α + β per channel, α = weight / sqrt(var + eps), β = bias - mean·α, as
    ATen's batch_norm_cpu_collect_linear_and_constant_terms computes it; the saved
    mean and invstd of inference are empty. f16 and bf16 inputs (autocast leaves the
    statistics in f32) are computed in f32 and rounded once, as eager's kernels do."""
    x = b.arg("input")
    t = tensor_of(x)
    if not is_float(t.dtype) or t.rank < 2:
        raise Decline("batch norm of floats, [n, c, …]")
    compute = accumulator(t.dtype)
    mean, var = b.convert(b.arg("running_mean"), compute), b.convert(b.arg("running_var"), compute)
    weight, bias = b.arg("weight"), b.arg("bias")
    invstd = b.ew("div", b.constant_like(var, 1.0), b.ew("sqrt", b.ew("add", var, b.constant_like(var, b.arg("eps")))))
    alpha = b.ew("mul", b.convert(weight, compute), invstd) if weight is not None else invstd
    shift = b.ew("mul", mean, alpha)
    beta = b.ew("sub", b.convert(bias, compute), shift) if bias is not None else b.ew("neg", shift)
    v = b.convert(x, compute)
    y = b.ew("add", b.ew("mul", v, _per_channel(b, alpha, t.dims, compute)), _per_channel(b, beta, t.dims, compute))
    saved = []
    for i, value in ((1, mean), (2, invstd)):
        out = b.out(i)  # empty on CPU; CUDA's kernel returns the statistics it read
        saved.append(b.full(out.dims, 0, out.dtype) if out.dims == (0,) else b.convert(value, out.dtype))
    return [b.convert(y, b.out(0).dtype), *saved]
