"""prim's dense linear algebra: LAPACK routines as library calls.

Each op runs torch's own routine through its reference (the path prim.mm takes), on
batches of matrices in the last two dims, real dtypes (f32, f64), with shape rules
over sympy dims (k = min(m, n), a sympy Min where m or n is symbolic). An output
torch leaves empty ([0], e.g. U and Vh without `compute_uv`) is [0] here too.

- `prim.svd`: U, S, Vh of torch's _linalg_svd (`full_matrices`, `compute_uv`).
- `prim.eigh`: eigenvalues (ascending) and eigenvectors of a symmetric matrix, from
  its lower or upper triangle (`upper`): _linalg_eigh.
- `prim.det`: det, LU factors and i32 pivots: _linalg_det.
- `prim.slogdet`: sign, log|det|, LU factors and i32 pivots: _linalg_slogdet.
- `prim.qr`: Q and R of linalg_qr (`mode`: reduced, complete, r).
- `prim.pinv`: the pseudo-inverse, with optional tensor tolerances (`has_atol`,
  `has_rtol` say which operands follow A): linalg_pinv.atol_rtol_tensor.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import sympy
from strata.dialects.lazy_torch import torch
from xdsl.dialects.builtin import IntegerAttr, StringAttr, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, var_operand_def
from xdsl.utils.exceptions import VerifyException

from strata.dialects.prim import TensorOp, types_match
from strata.dialects.types import Dim, TensorType, sym

LAPACK_DTYPES = ("f32", "f64")


def dim_min(a: Dim, b: Dim) -> Dim:
    """min(a, b) as a dim: an int where both are, else sympy's Min."""
    if isinstance(a, int) and isinstance(b, int):
        return min(a, b)
    m = sympy.Min(sym(a), sym(b))
    return int(m) if m.is_Integer else m


class LapackOp(TensorOp):
    """Results from `expected_types` (one per result); the operand A is a batch of
    matrices of a real floating dtype."""

    SQUARE: ClassVar[bool] = False

    def matrix(self) -> TensorType:
        a = self.tensor(self.operands[0])
        if a.rank < 2 or a.dtype not in LAPACK_DTYPES:
            raise VerifyException(f"{self.name}: takes a batch of {'/'.join(LAPACK_DTYPES)} matrices, got {a}")
        if self.SQUARE and not types_match(TensorType([a.dims[-2]], "f32"), TensorType([a.dims[-1]], "f32")):
            raise VerifyException(f"{self.name}: takes square matrices, got {a}")
        return a

    def expected_types(self) -> list[TensorType]:
        raise NotImplementedError(f"{self.name} does not define its result types")

    def infer_type(self) -> Attribute:
        return self.expected_types()[0]

    def verify_(self) -> None:
        check_result_types(self, self.expected_types())


def check_result_types(op: TensorOp, expected: Sequence[TensorType]) -> None:
    """A library op's results have the types its shape rule gives, one for one."""
    if len(expected) != len(op.results):
        raise VerifyException(f"{op.name}: {len(op.results)} results, expected {len(expected)}")
    for r, t in zip(op.results, expected):
        if not types_match(r.type, t):
            raise VerifyException(f"{op.name}: result type {r.type} does not match the inferred {t}")


def _flag(v: bool) -> IntegerAttr:
    return IntegerAttr(int(v), i64)


@irdl_op_definition
class SvdOp(LapackOp):
    """A = U·diag(S)·Vh: U [..., m, m or k], S [..., k], Vh [..., n or k, n] (full or
    reduced); without `compute_uv`, U and Vh are empty ([0]). torch's _linalg_svd."""

    name = "prim.svd"
    a = operand_def()
    u = result_def()
    s = result_def()
    vh = result_def()
    full_matrices = prop_def(IntegerAttr)
    compute_uv = prop_def(IntegerAttr)

    def __init__(self, a: SSAValue, full_matrices: bool, compute_uv: bool):
        t = a.type
        super().__init__(operands=[a], result_types=_svd_types(t, full_matrices, compute_uv),
                         properties={"full_matrices": _flag(full_matrices), "compute_uv": _flag(compute_uv)})

    def expected_types(self) -> list[TensorType]:
        return _svd_types(self.matrix(), bool(self.full_matrices.value.data), bool(self.compute_uv.value.data))

    def reference(self, a):
        return torch.ops.aten._linalg_svd(a, bool(self.full_matrices.value.data), bool(self.compute_uv.value.data))


def _svd_types(t: TensorType, full: bool, uv: bool) -> list[TensorType]:
    *batch, m, n = t.dims
    k = dim_min(m, n)
    s = t.with_dims([*batch, k])
    if not uv:
        empty = t.with_dims([0])
        return [empty, s, empty]
    return [t.with_dims([*batch, m, m if full else k]), s, t.with_dims([*batch, n if full else k, n])]


@irdl_op_definition
class EighOp(LapackOp):
    """Eigenvalues [..., n] (ascending) and eigenvectors [..., n, n] (columns; [0]
    without `compute_v`) of symmetric matrices, read from the lower triangle or the
    upper (`upper`): torch's _linalg_eigh."""

    name = "prim.eigh"
    a = operand_def()
    eigenvalues = result_def()
    eigenvectors = result_def()
    upper = prop_def(IntegerAttr)
    compute_v = prop_def(IntegerAttr)
    SQUARE: ClassVar[bool] = True

    def __init__(self, a: SSAValue, upper: bool, compute_v: bool):
        super().__init__(operands=[a], result_types=_eigh_types(a.type, compute_v),
                         properties={"upper": _flag(upper), "compute_v": _flag(compute_v)})

    def expected_types(self) -> list[TensorType]:
        return _eigh_types(self.matrix(), bool(self.compute_v.value.data))

    def reference(self, a):
        return torch.ops.aten._linalg_eigh(a, "U" if self.upper.value.data else "L", bool(self.compute_v.value.data))


def _eigh_types(t: TensorType, compute_v: bool) -> list[TensorType]:
    return [t.with_dims(t.dims[:-1]), t if compute_v else t.with_dims([0])]


def _lu_types(t: TensorType) -> list[TensorType]:
    """The LU factors and i32 pivots of a square batch."""
    return [t, t.with_dims(t.dims[:-1]).with_dtype("i32")]


@irdl_op_definition
class DetOp(LapackOp):
    """Determinants [...] of square matrices, with the LU factors and i32 pivots they
    came from: torch's _linalg_det."""

    name = "prim.det"
    a = operand_def()
    det = result_def()
    lu = result_def()
    pivots = result_def()
    SQUARE: ClassVar[bool] = True

    def __init__(self, a: SSAValue):
        t = a.type
        super().__init__(operands=[a], result_types=[t.with_dims(t.dims[:-2]), *_lu_types(t)])

    def expected_types(self) -> list[TensorType]:
        t = self.matrix()
        return [t.with_dims(t.dims[:-2]), *_lu_types(t)]

    def reference(self, a):
        return torch.ops.aten._linalg_det(a)


@irdl_op_definition
class SlogdetOp(LapackOp):
    """Sign and log of the absolute determinant [...] of square matrices, with the LU
    factors and i32 pivots: torch's _linalg_slogdet."""

    name = "prim.slogdet"
    a = operand_def()
    sign = result_def()
    logabsdet = result_def()
    lu = result_def()
    pivots = result_def()
    SQUARE: ClassVar[bool] = True

    def __init__(self, a: SSAValue):
        t = a.type
        d = t.with_dims(t.dims[:-2])
        super().__init__(operands=[a], result_types=[d, d, *_lu_types(t)])

    def expected_types(self) -> list[TensorType]:
        t = self.matrix()
        d = t.with_dims(t.dims[:-2])
        return [d, d, *_lu_types(t)]

    def reference(self, a):
        return torch.ops.aten._linalg_slogdet(a)


QR_MODES = ("reduced", "complete", "r")


@irdl_op_definition
class QrOp(LapackOp):
    """A = Q·R: reduced Q [..., m, k], R [..., k, n]; complete Q [..., m, m],
    R [..., m, n]; mode "r": Q empty ([0]), R reduced. torch's linalg_qr."""

    name = "prim.qr"
    a = operand_def()
    q = result_def()
    r = result_def()
    mode = prop_def(StringAttr)

    def __init__(self, a: SSAValue, mode: str):
        super().__init__(operands=[a], result_types=_qr_types(a.type, mode), properties={"mode": StringAttr(mode)})

    def expected_types(self) -> list[TensorType]:
        if self.mode.data not in QR_MODES:
            raise VerifyException(f"prim.qr: mode is one of {QR_MODES}, got {self.mode.data}")
        return _qr_types(self.matrix(), self.mode.data)

    def reference(self, a):
        return torch.linalg.qr(a, self.mode.data)


def _qr_types(t: TensorType, mode: str) -> list[TensorType]:
    *batch, m, n = t.dims
    k = m if mode == "complete" else dim_min(m, n)
    q = t.with_dims([0]) if mode == "r" else t.with_dims([*batch, m, k])
    return [q, t.with_dims([*batch, k, n])]


@irdl_op_definition
class PinvOp(LapackOp):
    """The pseudo-inverse [..., n, m] of A [..., m, n], singular values below
    max(atol, rtol · the largest) set to zero: torch's linalg_pinv (atol_rtol_tensor;
    `hermitian` takes eigh's path). The tolerances, where given (`has_atol`,
    `has_rtol`), follow A as floating operands that broadcast to its batch."""

    name = "prim.pinv"
    a = operand_def()
    tolerances = var_operand_def()
    result = result_def()
    has_atol = prop_def(IntegerAttr)
    has_rtol = prop_def(IntegerAttr)
    hermitian = prop_def(IntegerAttr)

    def __init__(self, a: SSAValue, atol: SSAValue | None, rtol: SSAValue | None, hermitian: bool):
        t = a.type
        super().__init__(
            operands=[a, [v for v in (atol, rtol) if v is not None]],
            result_types=[_pinv_type(t)],
            properties={"has_atol": _flag(atol is not None), "has_rtol": _flag(rtol is not None), "hermitian": _flag(hermitian)},
        )

    def expected_types(self) -> list[TensorType]:
        t = self.matrix()
        tols = [self.tensor(v) for v in self.tolerances]
        if len(tols) != self.has_atol.value.data + self.has_rtol.value.data:
            raise VerifyException("prim.pinv: one operand for each tolerance given")
        for tol in tols:
            if tol.dtype not in (*LAPACK_DTYPES, "f16", "bf16") or tol.rank > t.rank - 2 or any(
                d != 1 and not types_match(TensorType([d], "f32"), TensorType([e], "f32"))
                for d, e in zip(reversed(tol.dims), reversed(t.dims[:-2]))
            ):
                raise VerifyException(f"prim.pinv: a tolerance {tol} must broadcast to the batch of {t}")
        return [_pinv_type(t)]

    def reference(self, a, *tols):
        tols = list(tols)
        atol = tols.pop(0) if self.has_atol.value.data else None
        rtol = tols.pop(0) if self.has_rtol.value.data else None
        return torch.ops.aten.linalg_pinv.atol_rtol_tensor(a, atol=atol, rtol=rtol, hermitian=bool(self.hermitian.value.data))


def _pinv_type(t: TensorType) -> TensorType:
    return t.with_dims([*t.dims[:-2], t.dims[-1], t.dims[-2]])


LINALG_OPS = (SvdOp, EighOp, DetOp, SlogdetOp, QrOp, PinvOp)
