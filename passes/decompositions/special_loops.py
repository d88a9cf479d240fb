"""Special functions whose kernels loop per element: Hurwitz zeta, polygamma of order
n >= 2 (through zeta), and the orthogonal polynomials of torch.special, each onto its
prim op of dialects/prim_special_loops.py.

Operands promote int-to-float as eager's binary kernels do (int and bool give the
default float dtype), and the degree n is cast to the common dtype first, as
TensorIterator casts it. Eager's CPU kernels for zeta and the polynomials exist for f32
and f64 only: half-precision results decline (eager raises).
"""

from __future__ import annotations

import math

import torch
from xdsl.ir import SSAValue

from strata.dialects.aten import AtenOp
from strata.dialects.prim_special_loops import POLYNOMIALS
from strata.dialects.types import DTYPES
from strata.passes.decompositions.builder import Decline, PrimBuilder, promote, tensor_of
from strata.passes.decompositions.rules import decomposes

HALF = ("f16", "bf16")


def _binary(prim_name: str, first: str, second: str):
    def rule(op: AtenOp, b: PrimBuilder) -> SSAValue:
        args = [b.arg(first), b.arg(second)]
        if promote("INT_TO_FLOAT", *args)[1] in HALF:
            raise Decline(f"eager has no {prim_name} kernel for half-precision types")
        return b.pointwise("INT_TO_FLOAT", args, lambda x, y: b.ew(prim_name, x, y))

    return rule


decomposes("aten::special_zeta", "aten::special_zeta.self_scalar", "aten::special_zeta.other_scalar")(
    _binary("zeta", "self", "other")
)
for _name in POLYNOMIALS:
    decomposes(f"aten::special_{_name}", f"aten::special_{_name}.x_scalar", f"aten::special_{_name}.n_scalar")(
        _binary(_name, "x", "n")
    )


def polygamma_from_zeta(op: AtenOp, b: PrimBuilder, n: int) -> SSAValue:
    """polygamma(n, x) for n >= 2 (special.py's polygamma rule, which has orders 0
    and 1, calls this), as ATen's calc_polygamma: (-1)^(n+1) n! zeta(n + 1, x),
    n! rounded to the computation dtype (exp(lgamma(n + 1)) there: infinite once it
    overflows) and zeta rounded to the result dtype before the product, as eager's
    half-precision kernel returns it from zeta<Half>."""
    x = b.arg("self")
    result = promote("INT_TO_FLOAT", x)[1]

    def body(v: SSAValue) -> SSAValue:
        compute = tensor_of(v).dtype
        factorial = float(math.factorial(n)) if n < 171 else math.inf
        if factorial > torch.finfo(DTYPES[compute]).max:
            factorial = math.inf
        z = b.ew("zeta", b.constant_like(v, n + 1), v)
        if result != compute:
            z = b.convert(b.convert(z, result), compute)
        return b.ew("mul", b.constant_like(v, factorial if n % 2 else -factorial), z)

    return b.pointwise("INT_TO_FLOAT", [x], body)
