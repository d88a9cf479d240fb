"""prim's linear solvers and factorizations: LAPACK routines as library calls.

Like dialects/prim_linalg.py, each op's reference IS torch's routine (so pivots, signs
and the info codes are eager's), over batches of matrices in the last two dims, real
dtypes (f32, f64; matrix_exp also f16, bf16), with shape rules over sympy dims. The
operands' batch dims broadcast as torch broadcasts them (`broadcast_batch`). Pivots
and info are i32, as LAPACK returns them. Flags are i64 properties (0 or 1);
`check_errors` makes the routine raise where eager's would (a singular matrix, one
that is not positive-definite).

- `prim.lu_factor`: LU and pivots of A [*, m, n], with info: linalg_lu_factor_ex.
- `prim.lu`: P, L, U of A [*, m, n] (P empty without `pivot`): linalg_lu.
- `prim.lu_unpack`: P, L, U from LU factors and pivots: lu_unpack.
- `prim.lu_solve`: X from LU factors, pivots and B: linalg_lu_solve.
- `prim.inv`: the inverse of square matrices, with info: linalg_inv_ex.
- `prim.solve`: X of A X = B (or X A = B), with A's LU, pivots and info:
  _linalg_solve_ex (B may be a batch of vectors).
- `prim.cholesky`: L (or U with `upper`) and info: linalg_cholesky_ex.
- `prim.cholesky_inverse`, `prim.cholesky_solve`: from a Cholesky factor.
- `prim.ldl_factor`, `prim.ldl_solve`: Bunch-Kaufman LDLᵀ (sytrf, sytrs).
- `prim.solve_triangular`, `prim.triangular_solve`: triangular systems (the second
  also returns A broadcast to the batch, as the legacy op does).
- `prim.matrix_exp`: the matrix exponential: linalg_matrix_exp.
- `prim.linalg_check_errors`: raises as eager's _linalg_check_errors does for an
  info tensor, and passes its first operand (an effect token) through.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from strata.dialects.lazy_torch import torch
from xdsl.dialects.builtin import IntegerAttr, StringAttr, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from strata.dialects.prim import TensorOp, same_dims
from strata.dialects.prim_linalg import LAPACK_DTYPES, check_result_types, dim_min
from strata.dialects.types import Dim, TensorType, sym

HALF_DTYPES = ("f16", "bf16")


def broadcast_batch(name: str, *batches: Sequence[Dim]) -> list[Dim]:
    """The batch dims that `batches` broadcast to (trailing dims line up; 1 stretches)."""
    rank = max((len(b) for b in batches), default=0)
    out: list[Dim] = []
    for i in range(rank):
        picked: Dim | None = None
        for b in batches:
            j = len(b) - rank + i
            if j < 0 or sym(b[j]) == 1:
                continue
            if picked is None:
                picked = b[j]
            elif not same_dims([picked], [b[j]]):
                raise VerifyException(f"{name}: batch dims {[list(b) for b in batches]} do not broadcast")
        out.append(1 if picked is None else picked)
    return out


class SolverOp(TensorOp):
    """A library call whose result types come from `types_for` (which also checks
    the operands); flags are the i64 properties named in FLAGS."""

    FLAGS: ClassVar[tuple[str, ...]] = ()
    DTYPES: ClassVar[tuple[str, ...]] = LAPACK_DTYPES

    def __init__(self, *operands: SSAValue, **flags: bool):
        props: dict[str, Attribute] = {k: IntegerAttr(int(bool(flags[k])), i64) for k in self.FLAGS}
        types = self.types_for([o.type for o in operands], {k: bool(flags[k]) for k in self.FLAGS})
        super().__init__(operands=list(operands), result_types=types, properties=props)

    def flag(self, name: str) -> bool:
        return bool(getattr(self, name).value.data)

    def flags(self) -> dict[str, bool]:
        return {k: self.flag(k) for k in self.FLAGS}

    @classmethod
    def matrix(cls, t: Attribute, what: str = "A", square: bool = False) -> TensorType:
        """Operand `what`: a batch of matrices of one of DTYPES (square if asked)."""
        if not isinstance(t, TensorType) or t.rank < 2 or t.dtype not in cls.DTYPES:
            raise VerifyException(f"{cls.name}: {what} is a batch of {'/'.join(cls.DTYPES)} matrices, got {t}")
        if square and not same_dims([t.dims[-2]], [t.dims[-1]]):
            raise VerifyException(f"{cls.name}: {what} is a batch of square matrices, got {t}")
        return t

    @classmethod
    def like(cls, t: Attribute, a: TensorType, what: str) -> TensorType:
        """Operand `what`: a batch of matrices of A's dtype."""
        t = cls.matrix(t, what)
        if t.dtype != a.dtype:
            raise VerifyException(f"{cls.name}: {what} has dtype {t.dtype}, A has {a.dtype}")
        return t

    @classmethod
    def pivots(cls, t: Attribute, dims: Sequence[Dim]) -> TensorType:
        """Operand pivots: i32 of the given dims."""
        if not isinstance(t, TensorType) or t.dtype != "i32" or not same_dims(t.dims, dims):
            raise VerifyException(f"{cls.name}: pivots are i32 of dims {list(dims)}, got {t}")
        return t

    @classmethod
    def types_for(cls, types: Sequence[Attribute], flags: dict[str, bool]) -> list[TensorType]:
        raise NotImplementedError(f"{cls.name} does not define its result types")

    def expected_types(self) -> list[TensorType]:
        return self.types_for([v.type for v in self.operands], self.flags())

    def infer_type(self) -> Attribute:
        return self.expected_types()[0]

    def verify_(self) -> None:
        if len(self.operands) != len(self.get_irdl_definition().operands):
            raise VerifyException(f"{self.name}: {len(self.operands)} operands")
        check_result_types(self, self.expected_types())


def _info(a: TensorType) -> TensorType:
    """One i32 per matrix of the batch."""
    return TensorType(a.dims[:-2], "i32")


def _batched(batch: Sequence[Dim], t: TensorType) -> TensorType:
    """t's matrices over `batch`."""
    return t.with_dims([*batch, *t.dims[-2:]])


def _empty(a: TensorType) -> TensorType:
    return a.with_dims([0])


@irdl_op_definition
class LuFactorOp(SolverOp):
    """LU factors [*, m, n] (L below the diagonal, unit diagonal implied), i32 pivots
    [*, min(m, n)] (1-based, LAPACK's) and info [*]: torch's linalg_lu_factor_ex."""

    name = "prim.lu_factor"
    a = operand_def()
    lu = result_def()
    pivots_ = result_def()
    info = result_def()
    pivot = prop_def(IntegerAttr)
    check_errors = prop_def(IntegerAttr)
    FLAGS: ClassVar[tuple[str, ...]] = ("pivot", "check_errors")

    @classmethod
    def types_for(cls, types, flags):
        a = cls.matrix(types[0])
        *batch, m, n = a.dims
        return [a, TensorType([*batch, dim_min(m, n)], "i32"), _info(a)]

    def reference(self, a):
        return torch.ops.aten.linalg_lu_factor_ex(a, **self.flags())


def _plu_types(a: TensorType, pivot: bool, data: bool = True) -> list[TensorType]:
    """P [*, m, m] (empty without pivots), L [*, m, k], U [*, k, n] (empty without data)."""
    *batch, m, n = a.dims
    k = dim_min(m, n)
    p = a.with_dims([*batch, m, m]) if pivot else _empty(a)
    if not data:
        return [p, _empty(a), _empty(a)]
    return [p, a.with_dims([*batch, m, k]), a.with_dims([*batch, k, n])]


@irdl_op_definition
class LuOp(SolverOp):
    """A = P L U: P [*, m, m] (empty without `pivot`), L [*, m, k], U [*, k, n]:
    torch's linalg_lu."""

    name = "prim.lu"
    a = operand_def()
    p = result_def()
    l = result_def()  # noqa: E741
    u = result_def()
    pivot = prop_def(IntegerAttr)
    FLAGS: ClassVar[tuple[str, ...]] = ("pivot",)

    @classmethod
    def types_for(cls, types, flags):
        return _plu_types(cls.matrix(types[0]), flags["pivot"])

    def reference(self, a):
        return torch.ops.aten.linalg_lu(a, pivot=self.flag("pivot"))


@irdl_op_definition
class LuUnpackOp(SolverOp):
    """P, L, U from LU factors [*, m, n] and i32 pivots [*, min(m, n)]; P is empty
    without `unpack_pivots`, L and U without `unpack_data`: torch's lu_unpack."""

    name = "prim.lu_unpack"
    lu = operand_def()
    pivots_ = operand_def()
    p = result_def()
    l = result_def()  # noqa: E741
    u = result_def()
    unpack_data = prop_def(IntegerAttr)
    unpack_pivots = prop_def(IntegerAttr)
    FLAGS: ClassVar[tuple[str, ...]] = ("unpack_data", "unpack_pivots")

    @classmethod
    def types_for(cls, types, flags):
        a = cls.matrix(types[0], "LU")
        *batch, m, n = a.dims
        cls.pivots(types[1], [*batch, dim_min(m, n)])
        return _plu_types(a, flags["unpack_pivots"], flags["unpack_data"])

    def reference(self, lu, pivots):
        return torch.ops.aten.lu_unpack(lu, pivots, self.flag("unpack_data"), self.flag("unpack_pivots"))


@irdl_op_definition
class LuSolveOp(SolverOp):
    """X of A X = B (`left`) or X A = B, A given by its LU factors [*, n, n] and i32
    pivots [*, n], Aᴴ with `adjoint`; B [*, n, k] or [*, k, n]: torch's linalg_lu_solve."""

    name = "prim.lu_solve"
    lu = operand_def()
    pivots_ = operand_def()
    b = operand_def()
    x = result_def()
    left = prop_def(IntegerAttr)
    adjoint = prop_def(IntegerAttr)
    FLAGS: ClassVar[tuple[str, ...]] = ("left", "adjoint")

    @classmethod
    def types_for(cls, types, flags):
        lu = cls.matrix(types[0], "LU", square=True)
        cls.pivots(types[1], lu.dims[:-1])
        b = cls.like(types[2], lu, "B")
        if not same_dims([lu.dims[-1]], [b.dims[-2] if flags["left"] else b.dims[-1]]):
            raise VerifyException(f"{cls.name}: B {b} does not fit LU {lu}")
        return [_batched(broadcast_batch(cls.name, lu.dims[:-2], b.dims[:-2]), b)]

    def reference(self, lu, pivots, b):
        return torch.ops.aten.linalg_lu_solve(lu, pivots, b, **self.flags())


@irdl_op_definition
class InvOp(SolverOp):
    """The inverse [*, n, n] of square matrices and info [*]: torch's linalg_inv_ex."""

    name = "prim.inv"
    a = operand_def()
    inverse = result_def()
    info = result_def()
    check_errors = prop_def(IntegerAttr)
    FLAGS: ClassVar[tuple[str, ...]] = ("check_errors",)

    @classmethod
    def types_for(cls, types, flags):
        a = cls.matrix(types[0], square=True)
        return [a, _info(a)]

    def reference(self, a):
        return torch.ops.aten.linalg_inv_ex(a, **self.flags())


def is_vector_rhs(a: TensorType, b: TensorType) -> bool:
    """torch's linalg_solve_is_vector_rhs: B [n] or B of A's dims without the last."""
    return b.rank == 1 or (b.rank == a.rank - 1 and same_dims(b.dims, a.dims[:-1]))


@irdl_op_definition
class SolveOp(SolverOp):
    """X of A X = B (`left`) or X A = B for square A [*, n, n]; B [*, n, k], [*, k, n]
    or, with `left`, a batch of vectors [*, n]. Also A's LU factors, i32 pivots and
    info, over A's own batch: torch's _linalg_solve_ex."""

    name = "prim.solve"
    a = operand_def()
    b = operand_def()
    result = result_def()
    lu = result_def()
    pivots_ = result_def()
    info = result_def()
    left = prop_def(IntegerAttr)
    check_errors = prop_def(IntegerAttr)
    FLAGS: ClassVar[tuple[str, ...]] = ("left", "check_errors")

    @classmethod
    def types_for(cls, types, flags):
        a = cls.matrix(types[0], square=True)
        b = types[1]
        if not isinstance(b, TensorType) or b.rank < 1 or b.dtype != a.dtype:
            raise VerifyException(f"{cls.name}: B is a tensor of A's dtype {a.dtype}, got {b}")
        vector = is_vector_rhs(a, b)
        if vector and not flags["left"]:
            raise VerifyException(f"{cls.name}: a vector B needs `left`")
        b_matrix = b.with_dims([*b.dims, 1]) if vector else cls.matrix(b, "B")
        n = a.dims[-1]
        if not same_dims([n], [b_matrix.dims[-2] if flags["left"] else b_matrix.dims[-1]]):
            raise VerifyException(f"{cls.name}: B {b} does not fit A {a}")
        result = _batched(broadcast_batch(cls.name, a.dims[:-2], b_matrix.dims[:-2]), b_matrix)
        if vector:
            result = result.with_dims(result.dims[:-1])
        return [result, a, TensorType(a.dims[:-1], "i32"), _info(a)]

    def reference(self, a, b):
        return torch.ops.aten._linalg_solve_ex(a, b, **self.flags())


@irdl_op_definition
class CholeskyOp(SolverOp):
    """The Cholesky factor [*, n, n] of symmetric positive-definite matrices (lower,
    or upper with `upper`) and info [*]: torch's linalg_cholesky_ex."""

    name = "prim.cholesky"
    a = operand_def()
    l = result_def()  # noqa: E741
    info = result_def()
    upper = prop_def(IntegerAttr)
    check_errors = prop_def(IntegerAttr)
    FLAGS: ClassVar[tuple[str, ...]] = ("upper", "check_errors")

    @classmethod
    def types_for(cls, types, flags):
        a = cls.matrix(types[0], square=True)
        return [a, _info(a)]

    def reference(self, a):
        return torch.ops.aten.linalg_cholesky_ex(a, **self.flags())


@irdl_op_definition
class CholeskyInverseOp(SolverOp):
    """The inverse [*, n, n] of A = L Lᴴ (or Uᴴ U with `upper`) from its Cholesky
    factor; raises on a singular factor, as eager does: torch's cholesky_inverse."""

    name = "prim.cholesky_inverse"
    l = operand_def()  # noqa: E741
    inverse = result_def()
    upper = prop_def(IntegerAttr)
    FLAGS: ClassVar[tuple[str, ...]] = ("upper",)

    @classmethod
    def types_for(cls, types, flags):
        return [cls.matrix(types[0], "L", square=True)]

    def reference(self, l):  # noqa: E741
        return torch.ops.aten.cholesky_inverse(l, self.flag("upper"))


@irdl_op_definition
class CholeskySolveOp(SolverOp):
    """X of A X = B, A given by its Cholesky factor L [*, n, n] (U with `upper`),
    B [*, n, k]: torch's cholesky_solve."""

    name = "prim.cholesky_solve"
    b = operand_def()
    l = operand_def()  # noqa: E741
    x = result_def()
    upper = prop_def(IntegerAttr)
    FLAGS: ClassVar[tuple[str, ...]] = ("upper",)

    @classmethod
    def types_for(cls, types, flags):
        l = cls.matrix(types[1], "L", square=True)  # noqa: E741
        b = cls.like(types[0], l, "B")
        if not same_dims([l.dims[-1]], [b.dims[-2]]):
            raise VerifyException(f"{cls.name}: B {b} does not fit L {l}")
        return [_batched(broadcast_batch(cls.name, l.dims[:-2], b.dims[:-2]), b)]

    def reference(self, b, l):  # noqa: E741
        return torch.ops.aten.cholesky_solve(b, l, self.flag("upper"))


@irdl_op_definition
class LdlFactorOp(SolverOp):
    """The LDLᵀ factors [*, n, n] of symmetric matrices (Bunch-Kaufman), i32 pivots
    [*, n] and info [*]: torch's linalg_ldl_factor_ex."""

    name = "prim.ldl_factor"
    a = operand_def()
    ld = result_def()
    pivots_ = result_def()
    info = result_def()
    hermitian = prop_def(IntegerAttr)
    check_errors = prop_def(IntegerAttr)
    FLAGS: ClassVar[tuple[str, ...]] = ("hermitian", "check_errors")

    @classmethod
    def types_for(cls, types, flags):
        a = cls.matrix(types[0], square=True)
        return [a, TensorType(a.dims[:-1], "i32"), _info(a)]

    def reference(self, a):
        return torch.ops.aten.linalg_ldl_factor_ex(a, **self.flags())


@irdl_op_definition
class LdlSolveOp(SolverOp):
    """X of A X = B, A given by its LDLᵀ factors [*, n, n] and i32 pivots [*, n],
    B [*, n, k]: torch's linalg_ldl_solve."""

    name = "prim.ldl_solve"
    ld = operand_def()
    pivots_ = operand_def()
    b = operand_def()
    x = result_def()
    hermitian = prop_def(IntegerAttr)
    FLAGS: ClassVar[tuple[str, ...]] = ("hermitian",)

    @classmethod
    def types_for(cls, types, flags):
        ld = cls.matrix(types[0], "LD", square=True)
        cls.pivots(types[1], ld.dims[:-1])
        b = cls.like(types[2], ld, "B")
        if not same_dims([ld.dims[-1]], [b.dims[-2]]):
            raise VerifyException(f"{cls.name}: B {b} does not fit LD {ld}")
        return [_batched(broadcast_batch(cls.name, ld.dims[:-2], b.dims[:-2]), b)]

    def reference(self, ld, pivots, b):
        return torch.ops.aten.linalg_ldl_solve(ld, pivots, b, **self.flags())


@irdl_op_definition
class SolveTriangularOp(SolverOp):
    """X of A X = B (`left`) or X A = B for triangular A [*, n, n] (`upper`, and a unit
    diagonal taken as given with `unitriangular`): torch's linalg_solve_triangular."""

    name = "prim.solve_triangular"
    a = operand_def()
    b = operand_def()
    x = result_def()
    upper = prop_def(IntegerAttr)
    left = prop_def(IntegerAttr)
    unitriangular = prop_def(IntegerAttr)
    FLAGS: ClassVar[tuple[str, ...]] = ("upper", "left", "unitriangular")

    @classmethod
    def types_for(cls, types, flags):
        a = cls.matrix(types[0], square=True)
        b = cls.like(types[1], a, "B")
        if not same_dims([a.dims[-1]], [b.dims[-2] if flags["left"] else b.dims[-1]]):
            raise VerifyException(f"{cls.name}: B {b} does not fit A {a}")
        return [_batched(broadcast_batch(cls.name, a.dims[:-2], b.dims[:-2]), b)]

    def reference(self, a, b):
        return torch.ops.aten.linalg_solve_triangular(a, b, **self.flags())


@irdl_op_definition
class TriangularSolveOp(SolverOp):
    """The legacy form: X of op(A) X = B for triangular A [*, n, n] (`upper`,
    `transpose`, `unitriangular`), B [*, n, k]; returns X and A, both over the
    broadcast batch: torch's triangular_solve."""

    name = "prim.triangular_solve"
    b = operand_def()
    a = operand_def()
    solution = result_def()
    coefficient = result_def()
    upper = prop_def(IntegerAttr)
    transpose = prop_def(IntegerAttr)
    unitriangular = prop_def(IntegerAttr)
    FLAGS: ClassVar[tuple[str, ...]] = ("upper", "transpose", "unitriangular")

    @classmethod
    def types_for(cls, types, flags):
        a = cls.matrix(types[1], square=True)
        b = cls.like(types[0], a, "B")
        if not same_dims([a.dims[-1]], [b.dims[-2]]):
            raise VerifyException(f"{cls.name}: B {b} does not fit A {a}")
        batch = broadcast_batch(cls.name, a.dims[:-2], b.dims[:-2])
        return [_batched(batch, b), _batched(batch, a)]

    def reference(self, b, a):
        f = self.flags()
        return torch.ops.aten.triangular_solve(b, a, f["upper"], f["transpose"], f["unitriangular"])


@irdl_op_definition
class MatrixExpOp(SolverOp):
    """exp(A) of square matrices [*, n, n] (f16 and bf16 too, as eager's CPU kernel
    takes them): torch's linalg_matrix_exp."""

    name = "prim.matrix_exp"
    a = operand_def()
    result = result_def()
    DTYPES: ClassVar[tuple[str, ...]] = (*LAPACK_DTYPES, *HALF_DTYPES)

    @classmethod
    def types_for(cls, types, flags):
        return [cls.matrix(types[0], square=True)]

    def reference(self, a):
        return torch.ops.aten.linalg_matrix_exp(a)


@irdl_op_definition
class LinalgCheckErrorsOp(TensorOp):
    """Raises eager's error where an info tensor (i32) is nonzero, naming `api_name`
    (`is_matrix`: info is of one matrix, not a batch), and passes `token` (the effect
    token AOTAutograd threads through side effects) through: torch's
    _linalg_check_errors, which a graph calls after linalg.inv, solve, cholesky."""

    name = "prim.linalg_check_errors"
    token = operand_def()
    info = operand_def()
    result = result_def()
    api_name = prop_def(StringAttr)
    is_matrix = prop_def(IntegerAttr)

    def __init__(self, token: SSAValue, info: SSAValue, api_name: str, is_matrix: bool):
        super().__init__(operands=[token, info], result_types=[token.type],
                         properties={"api_name": StringAttr(api_name), "is_matrix": IntegerAttr(int(is_matrix), i64)})

    def infer_type(self) -> Attribute:
        info = self.tensor(self.info)
        if info.dtype != "i32":
            raise VerifyException(f"{self.name}: info is i32, got {info}")
        return self.tensor(self.token)

    def reference(self, token, info):
        torch.ops.aten._linalg_check_errors(info, self.api_name.data, is_matrix=bool(self.is_matrix.value.data))
        return token


SOLVE_OPS = (
    LuFactorOp,
    LuOp,
    LuUnpackOp,
    LuSolveOp,
    InvOp,
    SolveOp,
    CholeskyOp,
    CholeskyInverseOp,
    CholeskySolveOp,
    LdlFactorOp,
    LdlSolveOp,
    SolveTriangularOp,
    TriangularSolveOp,
    MatrixExpOp,
    LinalgCheckErrorsOp,
)
