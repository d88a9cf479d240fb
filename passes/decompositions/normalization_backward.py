"""The backward of layer norm and group norm → reductions and elementwise prim ops.

The formulas are those of torch/_decomp/decompositions.py (native_layer_norm_backward,
native_group_norm_backward), computed in f32 for f16/bf16 operands and each gradient
rounded once to its declared dtype (eager's CPU kernels round some partial sums to the
input's dtype on the way: these results are the closer to the exact ones). A gradient that
output_mask does not ask for (or whose parameter is None) is a placeholder of no
elements, the type frontend/capture/importer.py gives eager's None.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue

from strata.dialects import prim
from strata.dialects.aten import AtenOp
from strata.dialects.types import is_float, numel
from strata.passes.decompositions.builder import Decline, PrimBuilder, accumulator, tensor_of
from strata.passes.decompositions.rules import decomposes


def _placeholder(b: PrimBuilder, i: int) -> SSAValue:
    out = b.out(i)
    return b.full(out.dims, 0, out.dtype)


def _float_operands(b: PrimBuilder, *names: str) -> list[SSAValue | None]:
    """The named tensor arguments in the accumulator dtype of the input's (None stays)."""
    dtype = tensor_of(b.arg("input")).dtype
    if not is_float(dtype):
        raise Decline("normalization backward of a non-floating input")
    compute = accumulator(dtype)
    return [None if b.arg(n) is None else b.convert(b.arg(n), compute) for n in names]


@decomposes("aten::native_layer_norm_backward")
def layer_norm_backward(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    grad, x, mean, rstd, weight = _float_operands(b, "grad_out", "input", "mean", "rstd", "weight")
    t = tensor_of(x)
    axis = t.rank - len(b.arg("normalized_shape"))
    inner, outer = list(range(axis, t.rank)), list(range(axis))
    n = numel(t.dims[d] for d in inner)
    wanted = list(b.arg("output_mask"))
    # mean and rstd are [*outer, 1, …, 1]: broadcast them over the normalized dims
    mean_b = b.broadcast(mean, t.dims)
    rstd_b = b.broadcast(rstd, t.dims)
    x_hat = b.ew("mul", b.ew("sub", x, mean_b), rstd_b)
    results: list[SSAValue] = []
    if wanted[0]:
        g = b.ew("mul", grad, b.broadcast(weight, t.dims)) if weight is not None else grad
        a = b.ew("mul", g, b.full(t.dims, n, t.dtype))
        sum_g = b.unreduce(b.reduce("sum", g, inner), t.dims, inner)
        sum_gx = b.unreduce(b.reduce("sum", b.ew("mul", g, x_hat), inner), t.dims, inner)
        total = b.ew("sub", b.ew("sub", a, sum_g), b.ew("mul", x_hat, sum_gx))
        scale = b.ew("div", rstd_b, b.full(t.dims, n, t.dtype))
        results.append(b.convert(b.ew("mul", scale, total), b.out(0).dtype))
    else:
        results.append(_placeholder(b, 0))
    if wanted[1] and weight is not None:
        results.append(b.convert(b.reduce("sum", b.ew("mul", grad, x_hat), outer), b.out(1).dtype))
    else:
        results.append(_placeholder(b, 1))
    if wanted[2] and b.arg("bias") is not None:
        results.append(b.convert(b.reduce("sum", grad, outer), b.out(2).dtype))
    else:
        results.append(_placeholder(b, 2))
    return results


@decomposes("aten::native_group_norm_backward")
def group_norm_backward(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    grad, x, mean, rstd, gamma = _float_operands(b, "grad_out", "input", "mean", "rstd", "weight")
    t = tensor_of(x)
    groups = b.arg("group")
    if t.rank < 2 or not isinstance(groups, int) or not isinstance(t.dims[1], int):
        raise Decline("group norm backward with a symbolic channel or group count")
    n, c, hw = t.dims[0], t.dims[1], numel(t.dims[2:])
    if groups <= 0 or c % groups or not isinstance(hw, int):
        raise Decline("group norm backward with channels not divisible by groups, or symbolic sizes")
    cpg = c // groups
    flat = [n, c, hw]
    grad3, x3 = b.reshape(grad, flat), b.reshape(x, flat)
    ds = b.reduce("sum", b.ew("mul", grad3, x3), [2])  # [N, C]
    db = b.reduce("sum", grad3, [2])
    wanted = list(b.arg("output_mask"))
    grouped = [n, groups, cpg]
    mean3 = b.add(prim.BroadcastInDimOp(mean, grouped, [0, 1]))
    rstd3 = b.add(prim.BroadcastInDimOp(rstd, grouped, [0, 1]))
    results: list[SSAValue] = []
    if wanted[0]:
        s = 1.0 / (hw * cpg) if hw * cpg else 0.0
        if gamma is not None:
            gamma_nc = b.add(prim.BroadcastInDimOp(gamma, [n, c], [1]))
            ds_val = b.reduce("sum", b.reshape(b.ew("mul", ds, gamma_nc), grouped), [2])
            db_val = b.reduce("sum", b.reshape(b.ew("mul", db, gamma_nc), grouped), [2])
            c1 = b.ew("mul", rstd3, b.add(prim.BroadcastInDimOp(b.reshape(gamma, [groups, cpg]), grouped, [1, 2])))
        else:
            ds_val = b.reduce("sum", b.reshape(ds, grouped), [2])
            db_val = b.reduce("sum", b.reshape(db, grouped), [2])
            c1 = rstd3
        r3 = b.ew("mul", b.ew("mul", rstd, rstd), rstd)
        c2 = b.ew("mul", b.ew("mul", b.ew("sub", b.ew("mul", db_val, mean), ds_val), r3), b.constant_like(r3, s))
        c3 = b.ew("sub", b.ew("neg", b.ew("mul", c2, mean)), b.ew("mul", b.ew("mul", db_val, rstd), b.constant_like(rstd, s)))
        shape4 = [n, groups, cpg, hw]
        c1 = b.add(prim.BroadcastInDimOp(c1, shape4, [0, 1, 2]))
        c2 = b.add(prim.BroadcastInDimOp(c2, shape4, [0, 1]))
        c3 = b.add(prim.BroadcastInDimOp(c3, shape4, [0, 1]))
        dx = b.ew("add", b.ew("add", b.ew("mul", b.reshape(grad, shape4), c1), b.ew("mul", b.reshape(x, shape4), c2)), c3)
        results.append(b.convert(b.reshape(dx, t.dims), b.out(0).dtype))
    else:
        results.append(_placeholder(b, 0))
    if wanted[1]:
        centred = b.ew("sub", b.reshape(ds, grouped), b.ew("mul", b.reshape(db, grouped), mean3))
        dgamma = b.reduce("sum", b.ew("mul", centred, rstd3), [0])
        results.append(b.convert(b.reshape(dgamma, [c]), b.out(1).dtype))
    else:
        results.append(_placeholder(b, 1))
    if wanted[2]:
        results.append(b.convert(b.reduce("sum", db, [0]), b.out(2).dtype))
    else:
        results.append(_placeholder(b, 2))
    return results
