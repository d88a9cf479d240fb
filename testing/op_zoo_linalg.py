"""The zoo's solvers, Householder routines and distances (dialects/prim_linalg_solve.py,
prim_linalg_householder.py, prim_distance.py): one op of a class with random
dims (symbolic ones included), dtypes and flags, for testing/op_zoo.py."""

from __future__ import annotations

from hypothesis import strategies as st
from xdsl.ir import Operation

from strata.dialects import prim_distance as pd
from strata.dialects import prim_linalg_eig as pe
from strata.dialects import prim_linalg_householder as ph
from strata.dialects import prim_linalg_solve as ps
from strata.dialects.prim_linalg import LAPACK_DTYPES, dim_min
from strata.dialects.types import TensorType

ZOO_LINALG_OPS = (*ps.SOLVE_OPS, *ph.HOUSEHOLDER_OPS, *pe.EIG_OPS, *pd.DISTANCE_OPS)


def zoo_linalg_op(draw, cls, arg, dims) -> Operation:
    """`dims`: the zoo's strategy for one dim."""
    dtype = draw(st.sampled_from(ps.MatrixExpOp.DTYPES if cls is ps.MatrixExpOp else LAPACK_DTYPES))
    batch = draw(st.lists(dims(), max_size=1))
    m, n, k = draw(dims()), draw(dims()), draw(dims())
    square = arg(TensorType([*batch, n, n], dtype))
    rect = arg(TensorType([*batch, m, n], dtype))
    rhs = arg(TensorType([*batch, n, k], dtype))
    pivots = arg(TensorType([*batch, n], "i32"))
    flags = {f: draw(st.booleans()) for f in getattr(cls, "FLAGS", ())}
    if cls in (ps.LuFactorOp, ps.LuOp, ph.GeqrfOp):
        return cls(rect, **flags)
    if cls is ps.LuUnpackOp:
        return cls(rect, arg(TensorType([*batch, dim_min(m, n)], "i32")), **flags)
    if cls in (ps.LuSolveOp, ps.LdlSolveOp):
        b = rhs if flags.get("left", True) else arg(TensorType([*batch, k, n], dtype))
        return cls(square, pivots, b, **flags)
    if cls is ps.SolveOp:
        flags["left"] = True
        b = draw(st.sampled_from([rhs, arg(TensorType([*batch, n], dtype))]))
        return cls(square, b, **flags)
    if cls is ps.SolveTriangularOp:
        b = rhs if flags["left"] else arg(TensorType([*batch, k, n], dtype))
        return cls(square, b, **flags)
    if cls in (ps.CholeskySolveOp, ps.TriangularSolveOp):
        return cls(rhs, square, **flags)
    if cls is ps.LinalgCheckErrorsOp:
        return cls(arg(TensorType([0], "f32")), arg(TensorType(batch, "i32")), "linalg.inv", not batch)
    if cls is ph.OrmqrOp:
        c = arg(TensorType([*batch, m, k] if flags["left"] else [*batch, k, m], dtype))
        return cls(rect, arg(TensorType([*batch, dim_min(m, n)], dtype)), c, **flags)
    if cls is ph.HouseholderProductOp:
        return cls(rect, arg(TensorType([*batch, dim_min(m, n)], dtype)))
    if cls is pd.CdistOp:
        x2 = arg(TensorType([*batch, k, n], dtype))
        return cls(rect, x2, draw(st.sampled_from([0.0, 1.0, 2.0, float("inf")])), draw(st.sampled_from([None, 1, 2])))
    if cls is pd.PdistOp:
        return cls(arg(TensorType([m, n], dtype)), draw(st.sampled_from([0.0, 2.0, 0.5])))
    return cls(square, **flags)  # inv, cholesky, cholesky_inverse, ldl_factor, matrix_exp, eig
