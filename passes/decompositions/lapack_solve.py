"""Linear solvers, factorizations and pairwise distances → library calls
(dialects/prim_linalg_solve.py, prim_linalg_householder.py, prim_distance.py): each
aten op becomes the prim op that runs the same torch routine, so that factors,
pivots, info codes and errors are eager's. An op whose operands the prim op refuses
(an integer or complex dtype, a batch that does not broadcast) or whose declared
results differ from the prim op's declines and runs eagerly."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue
from xdsl.utils.exceptions import VerifyException

from strata.dialects.aten import AtenOp
from strata.dialects.prim import types_match
from strata.dialects.prim_distance import CdistOp, PdistOp
from strata.dialects.prim_linalg_householder import GeqrfOp, HouseholderProductOp, OrmqrOp
from strata.dialects.prim_linalg_solve import (
    CholeskyInverseOp,
    CholeskyOp,
    CholeskySolveOp,
    InvOp,
    LdlFactorOp,
    LdlSolveOp,
    LuFactorOp,
    LuOp,
    LuSolveOp,
    LuUnpackOp,
    MatrixExpOp,
    SolveOp,
    SolveTriangularOp,
    TriangularSolveOp,
)
from strata.passes.decompositions.builder import Decline, PrimBuilder
from strata.passes.decompositions.rules import decomposes


def _flag(b: PrimBuilder, name: str, default: bool) -> bool:
    v = b.arg(name)
    return default if v is None else bool(v)


def _call(b: PrimBuilder, cls, operands: Sequence[str], results: int | None = None, **flags: bool) -> list[SSAValue]:
    """cls over the named operands, its results checked against the aten op's (the
    first `results` of them, where the aten op declares fewer)."""
    try:
        op = cls(*(b.arg(n) for n in operands), **flags)
        op.verify()
    except VerifyException as e:
        raise Decline(str(e)) from None
    out = list(op.results)[:results]
    for i, r in enumerate(out):
        if not types_match(r.type, b.out(i)):
            raise Decline(f"{op.name} gives {r.type} where the aten op declares {b.out(i)}")
    b.add(op)
    return out


@decomposes("aten::linalg_lu_factor_ex")
def lu_factor_ex(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return _call(b, LuFactorOp, ["A"], pivot=_flag(b, "pivot", True), check_errors=_flag(b, "check_errors", False))


@decomposes("aten::linalg_lu")
def lu(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return _call(b, LuOp, ["A"], pivot=_flag(b, "pivot", True))


@decomposes("aten::lu_unpack")
def lu_unpack(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return _call(b, LuUnpackOp, ["LU_data", "LU_pivots"], unpack_data=_flag(b, "unpack_data", True),
                 unpack_pivots=_flag(b, "unpack_pivots", True))


@decomposes("aten::linalg_lu_solve")
def lu_solve(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return _call(b, LuSolveOp, ["LU", "pivots", "B"], left=_flag(b, "left", True), adjoint=_flag(b, "adjoint", False))


@decomposes("aten::linalg_inv_ex")
def inv_ex(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return _call(b, InvOp, ["A"], check_errors=_flag(b, "check_errors", False))


@decomposes("aten::_linalg_solve_ex")
def solve_ex(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return _call(b, SolveOp, ["A", "B"], left=_flag(b, "left", True), check_errors=_flag(b, "check_errors", False))


@decomposes("aten::linalg_cholesky_ex")
def cholesky_ex(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return _call(b, CholeskyOp, ["self"], upper=_flag(b, "upper", False), check_errors=_flag(b, "check_errors", False))


@decomposes("aten::cholesky")
def cholesky(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    """The legacy op: the same factor, raising where the matrix is not positive-definite
    (its message names linalg.cholesky where eager's names cholesky)."""
    return _call(b, CholeskyOp, ["self"], 1, upper=_flag(b, "upper", False), check_errors=True)


@decomposes("aten::cholesky_inverse")
def cholesky_inverse(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return _call(b, CholeskyInverseOp, ["self"], upper=_flag(b, "upper", False))


@decomposes("aten::cholesky_solve")
def cholesky_solve(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return _call(b, CholeskySolveOp, ["self", "input2"], upper=_flag(b, "upper", False))


@decomposes("aten::linalg_ldl_factor_ex")
def ldl_factor_ex(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return _call(b, LdlFactorOp, ["self"], hermitian=_flag(b, "hermitian", False), check_errors=_flag(b, "check_errors", False))


@decomposes("aten::linalg_ldl_solve")
def ldl_solve(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return _call(b, LdlSolveOp, ["LD", "pivots", "B"], hermitian=_flag(b, "hermitian", False))


@decomposes("aten::linalg_solve_triangular")
def solve_triangular(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return _call(b, SolveTriangularOp, ["self", "B"], upper=_flag(b, "upper", False), left=_flag(b, "left", True),
                 unitriangular=_flag(b, "unitriangular", False))


@decomposes("aten::triangular_solve")
def triangular_solve(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return _call(b, TriangularSolveOp, ["self", "A"], upper=_flag(b, "upper", True), transpose=_flag(b, "transpose", False),
                 unitriangular=_flag(b, "unitriangular", False))


@decomposes("aten::linalg_matrix_exp")
def matrix_exp(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return _call(b, MatrixExpOp, ["self"])


@decomposes("aten::geqrf")
def geqrf(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return _call(b, GeqrfOp, ["self"])


@decomposes("aten::ormqr")
def ormqr(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return _call(b, OrmqrOp, ["self", "input2", "input3"], left=_flag(b, "left", True), transpose=_flag(b, "transpose", False))


@decomposes("aten::linalg_householder_product")
def householder_product(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return _call(b, HouseholderProductOp, ["input", "tau"])


@decomposes("aten::_cdist_forward")
def cdist(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    p, mode = b.arg("p"), b.arg("compute_mode")
    if not isinstance(p, int | float) or isinstance(mode, bool) or not (mode is None or isinstance(mode, int)):
        raise Decline(f"cdist with p={p!r}, compute_mode={mode!r}")
    try:
        c = CdistOp(b.arg("x1"), b.arg("x2"), p, mode)
        c.verify()
    except VerifyException as e:
        raise Decline(str(e)) from None
    return _checked(b, c)


@decomposes("aten::_pdist_forward")
def pdist(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    p = b.arg("p")
    p = 2.0 if p is None else p
    if not isinstance(p, int | float):
        raise Decline(f"pdist with p={p!r}")
    try:
        c = PdistOp(b.arg("self"), p)
        c.verify()
    except VerifyException as e:
        raise Decline(str(e)) from None
    return _checked(b, c)


def _checked(b: PrimBuilder, op) -> list[SSAValue]:
    if not types_match(op.results[0].type, b.out()):
        raise Decline(f"{op.name} gives {op.results[0].type} where the aten op declares {b.out()}")
    b.add(op)
    return [op.results[0]]
