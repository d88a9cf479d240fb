"""prim's Householder-reflector routines (LAPACK geqrf, ormqr, orgqr) as library calls,
with the design of dialects/prim_linalg_solve.py: torch's routine is the reference,
real f32/f64 batches of matrices, shape rules over sympy dims.

- `prim.geqrf`: A [*, m, n] → reflectors below the diagonal with R above, and the
  scalar factors tau [*, min(m, n)]: torch's geqrf.
- `prim.ormqr`: C [*, m, n] multiplied by the Q those reflectors give (from the left
  or the right, transposed or not): torch's ormqr.
- `prim.householder_product`: the first n columns of that Q: torch's
  linalg_householder_product.
"""

from __future__ import annotations

from typing import ClassVar

from strata.dialects.lazy_torch import torch
from xdsl.dialects.builtin import IntegerAttr
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from strata.dialects.prim import same_dims
from strata.dialects.prim_linalg import dim_min
from strata.dialects.prim_linalg_solve import SolverOp
from strata.dialects.types import TensorType


def _tau(cls: type[SolverOp], t, a: TensorType, k_max) -> TensorType:
    """Operand tau: A's dtype, A's batch, at most `k_max` factors."""
    if not isinstance(t, TensorType) or t.dtype != a.dtype or not same_dims(t.dims[:-1], a.dims[:-2]):
        raise VerifyException(f"{cls.name}: tau is {a.dtype} over the batch of {a}, got {t}")
    k = t.dims[-1]
    if isinstance(k, int) and isinstance(k_max, int) and k > k_max:
        raise VerifyException(f"{cls.name}: tau has {k} factors, more than {k_max}")
    return t


@irdl_op_definition
class GeqrfOp(SolverOp):
    """A = QR by Householder reflectors: the reflectors' vectors below the diagonal
    of a [*, m, n] with R on and above it, and tau [*, min(m, n)]: torch's geqrf."""

    name = "prim.geqrf"
    a = operand_def()
    qr = result_def()
    tau = result_def()

    @classmethod
    def types_for(cls, types, flags):
        a = cls.matrix(types[0])
        *batch, m, n = a.dims
        return [a, a.with_dims([*batch, dim_min(m, n)])]

    def reference(self, a):
        return torch.ops.aten.geqrf(a)


@irdl_op_definition
class OrmqrOp(SolverOp):
    """Q C (`left`) or C Q, with Qᵀ for `transpose`, where Q is the product of the
    reflectors in A [*, m or n, k] and tau [*, k]; C [*, m, n]: torch's ormqr."""

    name = "prim.ormqr"
    a = operand_def()
    tau = operand_def()
    c = operand_def()
    result = result_def()
    left = prop_def(IntegerAttr)
    transpose = prop_def(IntegerAttr)
    FLAGS: ClassVar[tuple[str, ...]] = ("left", "transpose")

    @classmethod
    def types_for(cls, types, flags):
        a = cls.matrix(types[0])
        c = cls.like(types[2], a, "C")
        if not same_dims(a.dims[:-2], c.dims[:-2]):
            raise VerifyException(f"{cls.name}: A {a} and C {c} have different batches")
        side = c.dims[-2] if flags["left"] else c.dims[-1]
        if not same_dims([a.dims[-2]], [side]):
            raise VerifyException(f"{cls.name}: A {a} does not fit C {c}")
        _tau(cls, types[1], a, a.dims[-1])
        return [c]

    def reference(self, a, tau, c):
        return torch.ops.aten.ormqr(a, tau, c, self.flag("left"), self.flag("transpose"))


@irdl_op_definition
class HouseholderProductOp(SolverOp):
    """The first n columns [*, m, n] of the product of the reflectors in A [*, m, n]
    (m ≥ n) with tau [*, k] (k ≤ n): torch's linalg_householder_product (orgqr)."""

    name = "prim.householder_product"
    a = operand_def()
    tau = operand_def()
    result = result_def()

    @classmethod
    def types_for(cls, types, flags):
        a = cls.matrix(types[0])
        _tau(cls, types[1], a, a.dims[-1])
        return [a]

    def reference(self, a, tau):
        return torch.ops.aten.linalg_householder_product(a, tau)


HOUSEHOLDER_OPS = (GeqrfOp, OrmqrOp, HouseholderProductOp)
