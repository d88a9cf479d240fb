"""Matrix products → prim.mm / prim.bmm / prim.addmm (library calls); a scaled addmm's
scaling and bias as elementwise ops around the product."""

from __future__ import annotations

from xdsl.ir import SSAValue

from strata.dialects import prim
from strata.dialects.aten import AtenOp
from strata.dialects.types import is_float
from strata.passes.decompositions.builder import Decline, PrimBuilder, accumulator, tensor_of
from strata.passes.decompositions.rules import decomposes


def _product(b: PrimBuilder, a: SSAValue, c: SSAValue) -> SSAValue:
    if tensor_of(a).dtype != tensor_of(c).dtype:
        raise Decline("a product of two dtypes is an error in eager")
    if tensor_of(a).rank == 3:
        return b.add(prim.BmmOp(a, c))
    return b.add(prim.MmOp(a, c))


@decomposes("aten::mm")
def mm(op: AtenOp, b: PrimBuilder) -> SSAValue:
    return _product(b, b.arg("self"), b.arg("mat2"))


@decomposes("aten::bmm")
def bmm(op: AtenOp, b: PrimBuilder) -> SSAValue:
    return _product(b, b.arg("self"), b.arg("mat2"))


@decomposes("aten::addmm")
def addmm(op: AtenOp, b: PrimBuilder) -> SSAValue:
    """self + mat1 @ mat2 (a linear layer) is prim.addmm, one library call that adds the
    bias before rounding, as eager does. Otherwise beta * self + alpha * (mat1 @ mat2)
    around a product; with beta = 0 self is not read at all (its NaNs do not
    propagate), as in eager."""
    out = b.out()
    beta, alpha = b.arg("beta"), b.arg("alpha")
    bias, mat1, mat2 = b.arg("self"), b.arg("mat1"), b.arg("mat2")
    same = {tensor_of(v).dtype for v in (bias, mat1, mat2)} == {out.dtype}
    if beta == 1 and alpha == 1 and same and is_float(out.dtype) and tensor_of(bias).rank <= 2:
        return b.add(prim.AddmmOp(bias, mat1, mat2))
    acc = accumulator(out.dtype)
    p = b.convert(_product(b, b.arg("mat1"), b.arg("mat2")), acc)
    if alpha != 1:
        p = b.ew("mul", p, b.constant_like(p, alpha))
    if beta != 0:
        bias = b.broadcast(b.convert(b.arg("self"), acc), out.dims)
        if beta != 1:
            bias = b.ew("mul", bias, b.constant_like(bias, beta))
        p = b.ew("add", p, bias)
    return b.convert(p, out.dtype)
