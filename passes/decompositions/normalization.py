"""Softmax and layer norm → reductions and elementwise prim ops, computed in f32 for
f16/bf16 inputs as eager's kernels do; each result takes its declared dtype."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue

from strata.dialects import prim
from strata.dialects.aten import AtenOp
from strata.dialects.types import is_float, numel
from strata.passes.decompositions.builder import (
    Decline,
    PrimBuilder,
    accumulator,
    tensor_of,
    wrap_dim,
)
from strata.passes.decompositions.rules import decomposes


def _shifted(b: PrimBuilder) -> tuple[SSAValue, list[int]]:
    """x - max(x) along `dim`, in the accumulator dtype, and the reduced dims."""
    x = b.arg("self")
    t = tensor_of(x)
    if not is_float(t.dtype):
        raise Decline("softmax takes floating inputs")
    dims = [wrap_dim(b.arg("dim"), t.rank)] if t.rank else []
    v = b.convert(x, accumulator(b.out().dtype))
    peak = b.unreduce(b.reduce("amax", v, dims), t.dims, dims)
    return b.ew("sub", v, peak), dims


@decomposes("aten::_softmax")
def softmax(op: AtenOp, b: PrimBuilder) -> SSAValue:
    shifted, dims = _shifted(b)
    e = b.ew("exp", shifted)
    total = b.unreduce(b.reduce("sum", e, dims), b.out().dims, dims)
    return b.convert(b.ew("div", e, total), b.out().dtype)


@decomposes("aten::_log_softmax")
def log_softmax(op: AtenOp, b: PrimBuilder) -> SSAValue:
    shifted, dims = _shifted(b)
    total = b.reduce("sum", b.ew("exp", shifted), dims)
    log_total = b.unreduce(b.ew("log", total), b.out().dims, dims)
    return b.convert(b.ew("sub", shifted, log_total), b.out().dtype)


@decomposes("aten::native_layer_norm")
def layer_norm(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    x = b.arg("input")
    t = tensor_of(x)
    if not is_float(t.dtype):
        raise Decline("layer_norm takes floating inputs")
    dims = list(range(t.rank - len(b.arg("normalized_shape")), t.rank))
    v = b.convert(x, accumulator(t.dtype))
    total = b.reduce("sum", v, dims)
    n = b.constant_like(total, numel(t.dims[d] for d in dims))
    mean = b.ew("div", total, n)
    diff = b.ew("sub", v, b.unreduce(mean, t.dims, dims))
    variance = b.ew("div", b.reduce("sum", b.ew("mul", diff, diff), dims), n)
    rstd = b.ew("rsqrt", b.ew("add", variance, b.constant_like(variance, b.arg("eps"))))
    y = b.ew("mul", diff, b.unreduce(rstd, t.dims, dims))
    weight, bias = b.arg("weight"), b.arg("bias")
    if weight is not None:
        y = b.ew("mul", y, b.broadcast(b.convert(weight, tensor_of(y).dtype), t.dims))
    if bias is not None:
        y = b.ew("add", y, b.broadcast(b.convert(bias, tensor_of(y).dtype), t.dims))
    # mean and rstd keep the normalized dims as 1s.
    return [
        b.convert(y, b.out(0).dtype),
        b.reshape(b.convert(mean, b.out(1).dtype), b.out(1).dims),
        b.reshape(b.convert(rstd, b.out(2).dtype), b.out(2).dims),
    ]


@decomposes("aten::native_group_norm")
def group_norm(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    """Layer norm over each group of C/G channels (all their positions), then the
    per-channel weight and bias; mean and rstd are [N, G]."""
    x = b.arg("input")
    t = tensor_of(x)
    groups = b.arg("group")
    if not is_float(t.dtype) or t.rank < 2 or not isinstance(groups, int) or not isinstance(t.dims[1], int):
        raise Decline("group_norm of this input")
    n, c = t.dims[0], t.dims[1]
    if c % groups or numel(t.dims) == 0:
        raise Decline("group_norm with channels not divisible by groups, or no elements")
    per_group = numel([c // groups, *t.dims[2:]])
    v = b.reshape(b.convert(x, accumulator(t.dtype)), [n, groups, per_group])
    total = b.reduce("sum", v, [2])
    count = b.constant_like(total, per_group)
    mean = b.ew("div", total, count)
    diff = b.ew("sub", v, b.unreduce(mean, [n, groups, per_group], [2]))
    variance = b.ew("div", b.reduce("sum", b.ew("mul", diff, diff), [2]), count)
    rstd = b.ew("rsqrt", b.ew("add", variance, b.constant_like(variance, b.arg("eps"))))
    y = b.reshape(b.ew("mul", diff, b.unreduce(rstd, [n, groups, per_group], [2])), t.dims)
    for name, combine in (("weight", "mul"), ("bias", "add")):
        p = b.arg(name)
        if p is not None:
            channel = b.add(prim.BroadcastInDimOp(b.convert(p, tensor_of(y).dtype), t.dims, [1]))
            y = b.ew(combine, y, channel)
    return [
        b.convert(y, b.out(0).dtype),
        b.reshape(b.convert(mean, b.out(1).dtype), b.out(1).dims),
        b.reshape(b.convert(rstd, b.out(2).dtype), b.out(2).dims),
    ]
