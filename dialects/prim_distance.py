"""prim's pairwise distances as library calls: torch's own kernels are the reference.

Eager's cdist picks its formula by size (`compute_mode`): for p = 2 and more than 25
rows (or when asked) it computes |x|² - 2 x·y + |y|² through a matrix product, which
rounds differently from the direct sum over coordinates; pdist walks the pairs i < j
of one set in its own order. Calling the kernels keeps eager's numbers in every mode.

- `prim.cdist`: x1 [*, r1, m], x2 [*, r2, m] → [*, r1, r2], the batch broadcast:
  torch's _cdist_forward (`compute_mode` -1 stands for None).
- `prim.pdist`: x [n, m] → [n (n - 1) / 2], the upper triangle of the distance
  matrix, row by row: torch's _pdist_forward.
"""

from __future__ import annotations

import sympy
from strata.dialects.lazy_torch import torch
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, f64, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from strata.dialects.prim import TensorOp, same_dims
from strata.dialects.prim_linalg import LAPACK_DTYPES
from strata.dialects.prim_linalg_solve import broadcast_batch
from strata.dialects.types import TensorType, sym

COMPUTE_MODES = (-1, 0, 1, 2)  # None, mm if necessary, always mm, never mm


def _points(op: TensorOp, v: SSAValue, what: str) -> TensorType:
    t = op.tensor(v)
    if t.rank < 2 or t.dtype not in LAPACK_DTYPES:
        raise VerifyException(f"{op.name}: {what} is a batch of {'/'.join(LAPACK_DTYPES)} point sets [*, r, m], got {t}")
    return t


def _order(op: TensorOp) -> float:
    p = op.p.value.data
    if not p >= 0:
        raise VerifyException(f"{op.name}: p is a non-negative number, got {p}")
    return p


@irdl_op_definition
class CdistOp(TensorOp):
    """The p-norm distances [*, r1, r2] between the rows of x1 [*, r1, m] and those of
    x2 [*, r2, m]: torch's _cdist_forward."""

    name = "prim.cdist"
    x1 = operand_def()
    x2 = operand_def()
    result = result_def()
    p = prop_def(FloatAttr)
    compute_mode = prop_def(IntegerAttr)

    def __init__(self, x1: SSAValue, x2: SSAValue, p: float, compute_mode: int | None):
        super().__init__(
            operands=[x1, x2],
            result_types=[_cdist_type(x1.type, x2.type)],
            properties={"p": FloatAttr(float(p), f64), "compute_mode": IntegerAttr(-1 if compute_mode is None else compute_mode, i64)},
        )

    def infer_type(self) -> Attribute:
        a, b = _points(self, self.x1, "x1"), _points(self, self.x2, "x2")
        _order(self)
        if self.compute_mode.value.data not in COMPUTE_MODES:
            raise VerifyException(f"{self.name}: compute_mode is one of {COMPUTE_MODES}, got {self.compute_mode.value.data}")
        if a.dtype != b.dtype or not same_dims([a.dims[-1]], [b.dims[-1]]):
            raise VerifyException(f"{self.name}: x1 {a} and x2 {b} are not points of one space and dtype")
        return _cdist_type(a, b)

    def reference(self, x1, x2):
        mode = self.compute_mode.value.data
        return torch.ops.aten._cdist_forward(x1, x2, self.p.value.data, None if mode < 0 else mode)


def _cdist_type(a: TensorType, b: TensorType) -> TensorType:
    batch = broadcast_batch("prim.cdist", a.dims[:-2], b.dims[:-2])
    return a.with_dims([*batch, a.dims[-2], b.dims[-2]])


@irdl_op_definition
class PdistOp(TensorOp):
    """The p-norm distances between rows i < j of x [n, m], in row-major order of the
    pairs: [n (n - 1) / 2]: torch's _pdist_forward."""

    name = "prim.pdist"
    x = operand_def()
    result = result_def()
    p = prop_def(FloatAttr)

    def __init__(self, x: SSAValue, p: float):
        super().__init__(operands=[x], result_types=[_pdist_type(x.type)], properties={"p": FloatAttr(float(p), f64)})

    def infer_type(self) -> Attribute:
        t = _points(self, self.x, "x")
        _order(self)
        if t.rank != 2:
            raise VerifyException(f"{self.name}: x is one point set [n, m], got {t}")
        return _pdist_type(t)

    def reference(self, x):
        return torch.ops.aten._pdist_forward(x, self.p.value.data)


def _pdist_type(t: TensorType) -> TensorType:
    n = sym(t.dims[0])
    pairs = sympy.floor(n * (n - 1) / 2)  # the form torch gives, (n * (n - 1)) // 2
    return t.with_dims([int(pairs) if pairs.is_Integer else pairs])


DISTANCE_OPS = (CdistOp, PdistOp)
