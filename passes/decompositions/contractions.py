"""Products with a bias or over more than two operands → prim.mm / prim.bmm, with
scaling and bias as elementwise ops around them, as linalg.py's addmm:

- addmv: mat @ vec as an [n, k] × [k, 1] product;
- addbmm: the sum of batch1[i] @ batch2[i] over i is one [n, B·k] × [B·k, p] product;
- _trilinear (nn.functional.bilinear): two pairwise contractions, each one bmm over
  the dims the pair shares (batch), has alone (kept) and sums (contracted).

With beta = 0 the bias is not read (its NaNs do not propagate); where the product
sums over nothing, eager returns beta · self without alpha, and so do we.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from xdsl.ir import SSAValue

from strata.dialects import prim
from strata.dialects.aten import AtenOp
from strata.dialects.types import Dim, is_float, numel, sym
from strata.passes.decompositions.builder import Decline, PrimBuilder, accumulator, tensor_of, wrap_dim
from strata.passes.decompositions.rules import decomposes


def _check_scalars(b: PrimBuilder, dtype: str) -> tuple:
    """(beta, alpha) as eager's kernels read them: integer operands truncate float
    factors toward zero (eager's Scalar.to<int64_t>())."""
    beta, alpha = b.arg("beta"), b.arg("alpha")
    if dtype == "i1":
        raise Decline("products of bools")
    factors = []
    for v in (beta, alpha):
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise Decline(f"a scaling factor {v}")
        if not is_float(dtype) and isinstance(v, float):
            if not math.isfinite(v) or abs(v) >= 2**31:
                raise Decline(f"a float scaling factor {v} with {dtype} operands")
            v = math.trunc(v)
        factors.append(v)
    return factors[0], factors[1]


def _scaled_sum(b: PrimBuilder, product: SSAValue | None, self_: SSAValue, beta, alpha) -> SSAValue:
    """beta · self + alpha · product in the accumulator dtype, converted to the
    result's; `product` None is a product over nothing (eager: beta · self)."""
    out = b.out()
    acc = accumulator(out.dtype)
    if product is None:
        if not is_float(out.dtype) and isinstance(b.arg("beta"), float) and op_is(b, "aten::addbmm"):
            raise Decline("addbmm over no batches scales integers by a float: an error in eager")
        if beta == 0:
            return b.full(out.dims, 0, out.dtype)
        bias = b.broadcast(b.convert(self_, acc), out.dims)
        if beta != 1:
            bias = b.ew("mul", bias, b.constant_like(bias, b.round_to(beta, out.dtype)))
        return b.convert(bias, out.dtype)
    p = b.convert(product, acc)
    if alpha != 1:
        p = b.ew("mul", p, b.constant_like(p, alpha))
    if beta != 0:
        bias = b.broadcast(b.convert(self_, acc), out.dims)
        if beta != 1:
            bias = b.ew("mul", bias, b.constant_like(bias, beta))
        p = b.ew("add", p, bias)
    return b.convert(p, out.dtype)


def op_is(b: PrimBuilder, name: str) -> bool:
    return b.op.overload_name == name


def _same_dtype(*xs: SSAValue) -> str:
    dtypes = {tensor_of(x).dtype for x in xs}
    if len(dtypes) != 1:
        raise Decline("a product of two dtypes is an error in eager")
    return dtypes.pop()


@decomposes("aten::addmv")
def addmv(op: AtenOp, b: PrimBuilder) -> SSAValue:
    self_, mat, vec = b.arg("self"), b.arg("mat"), b.arg("vec")
    dtype = _same_dtype(self_, mat, vec)
    beta, alpha = _check_scalars(b, dtype)
    mt = tensor_of(mat)
    if mt.rank != 2 or tensor_of(vec).rank != 1:
        raise Decline("addmv of a mat that is not 2-d or a vec that is not 1-d")
    n, k = mt.dims
    if sym(k) == 0:
        return _scaled_sum(b, None, self_, beta, alpha)
    product = b.reshape(b.add(prim.MmOp(mat, b.reshape(vec, [k, 1]))), [n])
    return _scaled_sum(b, product, self_, beta, alpha)


@decomposes("aten::addbmm")
def addbmm(op: AtenOp, b: PrimBuilder) -> SSAValue:
    self_, b1, b2 = b.arg("self"), b.arg("batch1"), b.arg("batch2")
    dtype = _same_dtype(self_, b1, b2)
    beta, alpha = _check_scalars(b, dtype)
    t1, t2 = tensor_of(b1), tensor_of(b2)
    if t1.rank != 3 or t2.rank != 3:
        raise Decline("addbmm of batches that are not 3-d")
    batches, n, k = t1.dims
    p = t2.dims[2]
    inner = numel([batches, k])
    if sym(inner) == 0:
        return _scaled_sum(b, None, self_, beta, alpha)
    left = b.reshape(b.permute(b1, [1, 0, 2]), [n, inner])
    right = b.reshape(b2, [inner, p])
    return _scaled_sum(b, b.add(prim.MmOp(left, right)), self_, beta, alpha)


# ---------------------------------------------------------------- _trilinear
def _unsqueezed(b: PrimBuilder, x: SSAValue, expand: set[int], rank: int) -> SSAValue:
    t = tensor_of(x)
    if t.rank + len(expand) != rank:
        raise Decline("_trilinear inputs of mismatched ranks")
    it = iter(t.dims)
    return b.reshape(x, [1 if d in expand else next(it) for d in range(rank)])


def _sum_kept(b: PrimBuilder, x: SSAValue, dims: Sequence[int]) -> SSAValue:
    """x summed over `dims`, which stay as size 1 (in the accumulator dtype)."""
    if not dims:
        return x
    t = tensor_of(x)
    s = b.reduce("sum", b.convert(x, accumulator(t.dtype)), dims)
    kept = [1 if d in dims else n for d, n in enumerate(t.dims)]
    return b.reshape(b.convert(s, t.dtype), kept)


def _contract(b: PrimBuilder, x: SSAValue, y: SSAValue, summed: set[int]) -> SSAValue:
    """sum over `summed` of x · y, for x and y of one rank whose dims are equal or 1
    in one of them; the result has that rank, size 1 where summed (keepdim)."""
    xt, yt = tensor_of(x), tensor_of(y)
    rank = xt.rank
    one = lambda n: sym(n) == 1  # noqa: E731
    for d in range(rank):
        if not (one(xt.dims[d]) or one(yt.dims[d]) or sym(xt.dims[d]) == sym(yt.dims[d])):
            raise Decline(f"_trilinear operands of sizes {xt.dims[d]} and {yt.dims[d]} in one dim")
    # A summed dim only one side has: sum it there first.
    x = _sum_kept(b, x, [d for d in sorted(summed) if not one(xt.dims[d]) and one(yt.dims[d])])
    y = _sum_kept(b, y, [d for d in sorted(summed) if one(xt.dims[d]) and not one(yt.dims[d])])
    xt, yt = tensor_of(x), tensor_of(y)
    both = [d for d in range(rank) if not one(xt.dims[d]) and not one(yt.dims[d])]
    batch = [d for d in both if d not in summed]
    contracted = [d for d in both if d in summed]
    left = [d for d in range(rank) if not one(xt.dims[d]) and one(yt.dims[d])]
    right = [d for d in range(rank) if one(xt.dims[d]) and not one(yt.dims[d])]
    size = lambda t, ds: numel([t.dims[d] for d in ds])  # noqa: E731
    order_x = batch + left + contracted
    order_y = batch + contracted + right
    rest_x = [d for d in range(rank) if d not in order_x]
    rest_y = [d for d in range(rank) if d not in order_y]
    xm = b.reshape(b.permute(x, order_x + rest_x), [size(xt, batch), size(xt, left), size(xt, contracted)])
    ym = b.reshape(b.permute(y, order_y + rest_y), [size(yt, batch), size(yt, contracted), size(yt, right)])
    z = b.add(prim.BmmOp(xm, ym))
    dims_out: list[Dim] = [xt.dims[d] for d in batch + left] + [yt.dims[d] for d in right]
    z = b.reshape(z, dims_out)
    placed = batch + left + right
    ones = [d for d in range(rank) if d not in placed]
    z = b.reshape(z, dims_out + [1] * len(ones))
    perm = placed + ones
    return b.permute(z, [perm.index(d) for d in range(rank)])


@decomposes("aten::_trilinear")
def trilinear(op: AtenOp, b: PrimBuilder) -> SSAValue:
    """sum over sumdim of i1 · i2 · i3, each unsqueezed at its expand dims: i1 with i2
    over the summed dims i3 lacks, then with i3 over the rest (as eager pairs them)."""
    i1, i2, i3 = b.arg("i1"), b.arg("i2"), b.arg("i3")
    out = b.out()
    dtype = _same_dtype(i1, i2, i3)
    if dtype == "i1" or out.dtype != dtype:
        raise Decline(f"_trilinear of {dtype}")
    rank = tensor_of(i1).rank + len(b.arg("expand1"))
    expands = [{wrap_dim(d, rank) for d in b.arg(n)} for n in ("expand1", "expand2", "expand3")]
    sumdim = {wrap_dim(d, rank) for d in b.arg("sumdim")}
    if any(sym(n) == 0 for x in (i1, i2, i3) for n in tensor_of(x).dims):
        return b.full(out.dims, 0, out.dtype)
    x1, x2, x3 = (_unsqueezed(b, x, e, rank) for x, e in zip((i1, i2, i3), expands))
    first = _contract(b, x1, x2, {d for d in sumdim if d in expands[2]})
    result = _contract(b, first, x3, {d for d in sumdim if d not in expands[2]})
    # Summed dims where all three had size 1 are still there, as size 1.
    return b.reshape(result, out.dims)
