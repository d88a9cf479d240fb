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

from xdsl.ir import SSAValue

from strata.dialects import prim
from strata.dialects.aten import AtenOp
from strata.dialects.types import is_float, numel
from strata.passes.decompositions.builder import Decline, PrimBuilder, accumulator, tensor_of
from strata.passes.decompositions.convolution import _per_channel
from strata.passes.decompositions.rules import decomposes


def _blend(b: PrimBuilder, momentum: float, batch: SSAValue, running: SSAValue) -> SSAValue:
    """momentum · batch + (1 - momentum) · running, in running's dtype."""
    dtype = tensor_of(running).dtype
    compute = accumulator(dtype)
    batch = b.convert(batch, compute)
    new = b.ew("mul", batch, b.constant_like(batch, momentum))
    old = b.convert(running, compute)
    return b.convert(b.ew("add", new, b.ew("mul", old, b.constant_like(old, 1.0 - momentum))), dtype)


@decomposes("aten::_native_batch_norm_legit_functional")
def batch_norm(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    x, weight, bias = b.arg("input"), b.arg("weight"), b.arg("bias")
    running_mean, running_var = b.arg("running_mean"), b.arg("running_var")
    momentum, eps = b.arg("momentum"), b.arg("eps")
    t = tensor_of(x)
    if not is_float(t.dtype) or t.rank < 2:
        raise Decline("batch norm of floats, [n, c, …]")
    compute = accumulator(t.dtype)
    v = b.convert(x, compute)
    dims = [0, *range(2, t.rank)]
    if b.arg("training"):
        count = b.full([t.dims[1]], numel(t.dims[d] for d in dims), compute)
        mean = b.ew("div", b.reduce("sum", v, dims), count)
        diff = b.ew("sub", v, _per_channel(b, mean, t.dims, compute))
        squares = b.reduce("sum", b.ew("mul", diff, diff), dims)
        variance = b.ew("div", squares, count)
        unbiased = b.ew("div", squares, b.ew("sub", count, b.constant_like(count, 1.0)))
        new_mean = _blend(b, momentum, mean, running_mean)
        new_var = _blend(b, momentum, unbiased, running_var)
    else:
        mean, variance = b.convert(running_mean, compute), b.convert(running_var, compute)
        diff = b.ew("sub", v, _per_channel(b, mean, t.dims, compute))
        new_mean, new_var = running_mean, running_var
    rstd = b.ew("rsqrt", b.ew("add", variance, b.constant_like(variance, eps)))
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
