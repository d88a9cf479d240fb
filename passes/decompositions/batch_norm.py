"""Batch norm in training → per-channel reductions and elementwise prim ops.

`_native_batch_norm_legit_functional` is what AOTAutograd leaves of `nn.BatchNorm*d` in
training mode: the batch's mean and biased variance over every dim but the channels
(dim 1), the normalized output (scaled and shifted by weight and bias), the saved
mean and 1/std that the backward reads, and the new running statistics, which
AOTAutograd copies into the module's buffers: momentum · batch + (1 - momentum) ·
running, with the variance made unbiased (· n / (n - 1)). As torch's reference
decomposition and eager's CPU kernel do, statistics are computed in f32 for f16 and
bf16 inputs. With training false it is eval mode, which reads the running statistics.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from xdsl.ir import SSAValue

from strata.dialects.aten import AtenOp
from strata.dialects.types import DTYPES, is_float, numel
from strata.passes.decompositions.builder import Decline, PrimBuilder, accumulator, tensor_of
from strata.passes.decompositions.convolution import _per_channel
from strata.passes.decompositions.rules import decomposes


def _blend(b: PrimBuilder, momentum: float, batch: SSAValue, running: SSAValue, dtype: str) -> SSAValue:
    """momentum · batch + (1 - momentum) · running, computed in f32 at least (eager's
    opmath) and rounded once to `dtype`, the declared result's (AOTAutograd copies it
    into the running buffer, which rounds it to the buffer's dtype: still once)."""
    compute = accumulator(tensor_of(running).dtype)
    batch = b.convert(batch, compute)
    new = b.ew("mul", batch, b.constant_like(batch, momentum))
    old = b.convert(running, compute)
    return b.convert(b.ew("add", new, b.ew("mul", old, b.constant_like(old, 1.0 - momentum))), dtype)


@decomposes("aten::_native_batch_norm_legit_functional")
def batch_norm(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return _batch_norm(b, bool(b.arg("training")))


@decomposes("aten::_batch_norm_with_update_functional")
def batch_norm_with_update(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    """Training-mode batch norm, as the functional _native_batch_norm_legit, with a
    fourth result: the reserve buffer cuDNN would fill, empty elsewhere."""
    reserve = b.out(3)
    if reserve.dims != (0,):
        raise Decline("a batch norm whose reserve buffer is not empty")
    y, mean, rstd, new_mean, new_var = _batch_norm(b, True, running=(4, 5))
    return [y, mean, rstd, b.full(reserve.dims, 0, reserve.dtype), new_mean, new_var]


def _batch_norm(b: PrimBuilder, training: bool, running: tuple[int, int] = (3, 4)) -> list[SSAValue]:
    """The output, saved mean and 1/std (results 1 and 2) and the new running mean and
    variance (results `running`), each in its declared dtype."""
    x, weight, bias = b.arg("input"), b.arg("weight"), b.arg("bias")
    running_mean, running_var = b.arg("running_mean"), b.arg("running_var")
    momentum, eps = b.arg("momentum"), b.arg("eps")
    t = tensor_of(x)
    if not is_float(t.dtype) or t.rank < 2:
        raise Decline("batch norm of floats, [n, c, …]")
    params = (weight, bias, running_mean, running_var)
    # An f16/bf16 input with f32 parameters (autocast): eager's kernel saves f32
    # statistics where torch's fake kernel, and so the graph, declares the input's
    # dtype; the graph's declared types win (the backward was traced with them).
    compute = accumulator(t.dtype)
    half = compute != t.dtype
    v = b.convert(x, compute)
    dims = [0, *range(2, t.rank)]
    mean_dtype, var_dtype = b.out(running[0]).dtype, b.out(running[1]).dtype
    if training:
        n = numel(t.dims[d] for d in dims)
        count = b.full([t.dims[1]], n, compute)
        mean = b.ew("div", b.reduce("sum", v, dims), count)
        diff = b.ew("sub", v, _per_channel(b, mean, t.dims, compute))
        squares = b.reduce("sum", b.ew("mul", diff, diff), dims)
        same = half and b.out(1).dtype == t.dtype and all(p is None or tensor_of(p).dtype == t.dtype for p in params)
        if same and t.dtype == "bf16":
            mean, rstd, new_mean, new_var = _bf16_statistics(b, mean, squares, n, momentum, eps, running_mean, running_var)
            new_mean, new_var = b.convert(new_mean, mean_dtype), b.convert(new_var, var_dtype)
        else:
            rstd = _invstd(b, b.ew("div", squares, count), eps)
            unbiased = b.ew("div", squares, b.ew("sub", count, b.constant_like(count, 1.0)))
            new_mean = _blend(b, momentum, mean, running_mean, mean_dtype)
            new_var = _blend(b, momentum, unbiased, running_var, var_dtype)
            if same:  # the output reads the statistics back from the saved f16 tensors
                mean = b.convert(b.convert(mean, t.dtype), compute)
                rstd = b.convert(b.convert(rstd, t.dtype), compute)
    else:
        mean, variance = b.convert(running_mean, compute), b.convert(running_var, compute)
        diff = b.ew("sub", v, _per_channel(b, mean, t.dims, compute))
        shifted = b.ew("add", variance, b.constant_like(variance, eps))
        # eager's CPU kernel: 1 / sqrt(var + eps) in f32 for f16/bf16 inputs
        rstd = b.ew("div", b.constant_like(shifted, 1.0), b.ew("sqrt", shifted)) if half else b.ew("rsqrt", shifted)
        new_mean, new_var = b.convert(running_mean, mean_dtype), b.convert(running_var, var_dtype)
    if half:
        y = _half_output(b, v, mean, rstd, weight, bias)
    else:
        y = b.ew("mul", diff, _per_channel(b, rstd, t.dims, compute))
        if weight is not None:
            y = b.ew("mul", y, _per_channel(b, weight, t.dims, compute))
        if bias is not None:
            y = b.ew("add", y, _per_channel(b, bias, t.dims, compute))
    saved = []
    for i, value in ((1, mean), (2, rstd)):
        out = b.out(i)
        # eval mode saves nothing on CPU (empty results), the statistics elsewhere
        saved.append(b.full(out.dims, 0, out.dtype) if out.dims == (0,) else b.convert(value, out.dtype))
    return [b.convert(y, b.out(0).dtype), *saved, new_mean, new_var]


def _invstd(b: PrimBuilder, variance: SSAValue, eps: float) -> SSAValue:
    """1 / sqrt(var + eps), and 0 where var and eps are both 0 (ATen's InvStd)."""
    rstd = b.ew("rsqrt", b.ew("add", variance, b.constant_like(variance, eps)))
    if eps != 0:
        return rstd
    return b.where(b.ew("eq", variance, b.constant_like(variance, 0.0)), b.constant_like(rstd, 0.0), rstd)


def _rounded(value: float, dtype: str) -> float:
    """A host constant as a value of `dtype` (c10::Half / c10::BFloat16) reads."""
    return torch.tensor(float(value), dtype=DTYPES[dtype]).item()


def _bf16_statistics(
    b: PrimBuilder, mean: SSAValue, squares: SSAValue, n, momentum: float, eps: float,
    running_mean: SSAValue, running_var: SSAValue,
) -> tuple[SSAValue, SSAValue, SSAValue, SSAValue]:
    """Saved mean and 1/std and new running statistics (in f32) of a bf16 batch norm
    whose parameters are bf16 too, as eager's CPU kernel computes them
    (batch_norm_cpu_update_stats_template with param_t = c10::BFloat16): the mean and
    the sum of squares (each summed in f32) are stored in bf16, and every arithmetic
    op of two bf16 values rounds its result to bf16, as c10's operators do. (Its f16
    kernel keeps these in f32, as the other path of _batch_norm computes them: both
    measured against torch 2.13.)"""
    if not isinstance(n, int):
        raise Decline("a bf16 batch norm over a symbolic number of elements")
    p = "bf16"

    def rnd(v: SSAValue) -> SSAValue:
        return b.convert(b.convert(v, p), "f32")

    def const(v: SSAValue, value: float) -> SSAValue:
        return b.constant_like(v, _rounded(value, p))

    mean_p, var_sum = rnd(mean), rnd(squares)
    # save_invstd = InvStd<float>(var_sum / n, eps): a bf16 quotient (n itself a bf16 value)
    rstd = rnd(_invstd(b, rnd(b.ew("div", var_sum, const(var_sum, n))), eps))
    mom = _rounded(momentum, p)
    keep = _rounded(1 - mom, p)  # 1 - momentum_: an int minus a bf16 value, a bf16 value
    rm, rv = b.convert(running_mean, "f32"), b.convert(running_var, "f32")
    # momentum_ · mean + (1 - momentum_) · running_mean: three bf16 operations
    new_mean = rnd(b.ew("add", rnd(b.ew("mul", mean_p, const(mean_p, mom))), rnd(b.ew("mul", rm, const(rm, keep)))))
    # unbiased_var (f32) = var_sum / (n - 1), a bf16 quotient; bf16 · float is a float
    unbiased = rnd(b.ew("div", var_sum, const(var_sum, n - 1)))
    new_var = rnd(b.ew("add", b.ew("mul", unbiased, const(unbiased, mom)), rnd(b.ew("mul", rv, const(rv, keep)))))
    return mean_p, rstd, new_mean, new_var


def _half_output(b: PrimBuilder, v: SSAValue, mean: SSAValue, rstd: SSAValue, weight, bias) -> SSAValue:
    """An f16/bf16 batch norm's output (in f32) as eager's CPU kernel computes it
    (batch_norm_cpu_collect_linear_and_constant_terms): x·α + β per channel with
    α = invstd·weight and β = bias - mean·α in f32 (in training, mean and invstd
    as the saved statistics hold them)."""
    t = tensor_of(v)
    alpha = b.ew("mul", rstd, b.convert(weight, t.dtype)) if weight is not None else rstd
    shift = b.ew("mul", mean, alpha)
    beta = b.ew("sub", b.convert(bias, t.dtype), shift) if bias is not None else b.ew("neg", shift)
    return b.ew("add", b.ew("mul", v, _per_channel(b, alpha, t.dims, t.dtype)), _per_channel(b, beta, t.dims, t.dtype))
