"""Dense linear algebra → LAPACK library calls (dialects/prim_linalg.py): torch's own
routines, so that factors (their signs, their order) are eager's. Real f32/f64 only;
an op whose declared results do not have the library op's types declines."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Operation, SSAValue

from strata.dialects.aten import AtenOp
from strata.dialects.prim_linalg import LAPACK_DTYPES, DetOp, EighOp, PinvOp, QrOp, SlogdetOp, SvdOp
from strata.passes.decompositions.builder import Decline, PrimBuilder, tensor_of
from strata.passes.decompositions.rules import decomposes


def _matrix(b: PrimBuilder, name: str = "A") -> SSAValue:
    a = b.arg(name)
    t = tensor_of(a)
    if t.dtype not in LAPACK_DTYPES or t.rank < 2:
        raise Decline(f"linear algebra on {t} (f32, f64 batches of matrices only)")
    return a


def _call(b: PrimBuilder, op: Operation) -> Sequence[SSAValue]:
    return b.add_checked(op)


@decomposes("aten::_linalg_svd")
def svd(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    if b.arg("driver") is not None:
        raise Decline("an svd driver (CUDA only)")
    full = b.arg("full_matrices")
    uv = b.arg("compute_uv")
    return _call(b, SvdOp(_matrix(b), bool(full), True if uv is None else bool(uv)))


@decomposes("aten::_linalg_eigh")
def eigh(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    uplo = b.arg("UPLO") or "L"
    if uplo not in ("L", "U"):
        raise Decline(f"UPLO={uplo!r}")
    v = b.arg("compute_v")
    return _call(b, EighOp(_matrix(b), uplo == "U", True if v is None else bool(v)))


@decomposes("aten::_linalg_det")
def det(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return _call(b, DetOp(_matrix(b)))


@decomposes("aten::_linalg_slogdet")
def slogdet(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return _call(b, SlogdetOp(_matrix(b)))


@decomposes("aten::linalg_qr")
def qr(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    mode = b.arg("mode") or "reduced"
    if mode not in ("reduced", "complete", "r"):
        raise Decline(f"qr mode {mode!r}")
    return _call(b, QrOp(_matrix(b), mode))


@decomposes("aten::linalg_pinv.atol_rtol_tensor")
def pinv(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    a = _matrix(b, "self")
    atol, rtol = b.arg("atol"), b.arg("rtol")
    p = PinvOp(a, atol, rtol, bool(b.arg("hermitian")))
    try:
        p.verify()
    except Exception as e:  # a tolerance that widens the batch
        raise Decline(str(e)) from None
    return _call(b, p)
