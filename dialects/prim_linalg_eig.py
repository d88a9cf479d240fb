"""prim.eig: the eigen-decomposition of general (non-symmetric) real matrices, a
LAPACK library call (geev) like dialects/prim_linalg.py's, whose complex results
are (real, imag) pairs (dialects/prim_complex.py's representation).

- `prim.eig`: A [..., n, n] (f32, f64) → eigenvalues [..., n, 2] and eigenvectors
  [..., n, n, 2], pairs of A's dtype: torch's linalg_eig, so that the order of the
  eigenvalues and the scaling of the eigenvectors are eager's.
"""

from __future__ import annotations

from typing import ClassVar

from strata.dialects.lazy_torch import torch
from xdsl.ir import SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, result_def

from strata.dialects.prim_linalg import LapackOp
from strata.dialects.types import TensorType


@irdl_op_definition
class EigOp(LapackOp):
    """Eigenvalues [..., n, 2] and eigenvectors (columns) [..., n, n, 2] of square
    real matrices, as pairs: torch's linalg_eig."""

    name = "prim.eig"
    a = operand_def()
    eigenvalues = result_def()
    eigenvectors = result_def()
    SQUARE: ClassVar[bool] = True

    def __init__(self, a: SSAValue):
        super().__init__(operands=[a], result_types=_eig_types(a.type))

    def expected_types(self) -> list[TensorType]:
        return _eig_types(self.matrix())

    def reference(self, a):
        values, vectors = torch.linalg.eig(a)
        return torch.view_as_real(values), torch.view_as_real(vectors)


def _eig_types(t: TensorType) -> list[TensorType]:
    return [t.with_dims([*t.dims[:-1], 2]), t.with_dims([*t.dims, 2])]


EIG_OPS = (EigOp,)
