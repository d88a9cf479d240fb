"""Linear solvers, factorizations and distances (dialects/prim_linalg_solve.py,
prim_linalg_householder.py, prim_distance.py; passes/decompositions/lapack_solve.py,
distance.py; frontend/capture/effects.py): compiled with no eager fallback allowed, equal to
eager bit for bit where the op is torch's own routine, raising eager's errors, and
the shape rules and verifiers on symbolic and wrong inputs."""

from __future__ import annotations

import math
import warnings

import pytest
import sympy
import torch
from xdsl.ir import Block
from xdsl.utils.exceptions import VerifyException

from strata.testing.no_fallback import compiled as _compiled
from strata.testing.no_fallback import same as _same
from strata.dialects import prim_distance as pd
from strata.dialects import prim_linalg_householder as ph
from strata.dialects import prim_linalg_solve as ps
from strata.dialects.types import TensorType, sym

INF, NAN = math.inf, math.nan
LAPACK = [torch.float32, torch.float64]


def _eager(fn, *args):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*is deprecated.*")
        return fn(*args)


@pytest.fixture(autouse=True)
def _interpreted(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def _spd(*shape, dtype=torch.float64):
    a = torch.randn(*shape, dtype=dtype)
    return a @ a.mT + shape[-1] * torch.eye(shape[-1], dtype=dtype)


# ---------------------------------------------------------------- library calls
SQUARE = {
    "lu_factor": lambda a: torch.linalg.lu_factor(a),
    "lu_factor_ex": lambda a: torch.linalg.lu_factor_ex(a),
    "lu_legacy": lambda a: torch.lu(a, get_infos=True),
    "lu": lambda a: torch.linalg.lu(a),
    "lu_unpack": lambda a: torch.lu_unpack(*torch.linalg.lu_factor(a)),
    "lu_solve": lambda a: torch.linalg.lu_solve(*torch.linalg.lu_factor(a), a[..., :2]),
    "lu_solve_adjoint_right": lambda a: torch.linalg.lu_solve(*torch.linalg.lu_factor(a), a[..., :2, :], left=False, adjoint=True),
    "inv": lambda a: torch.linalg.inv(a),
    "inv_ex": lambda a: torch.linalg.inv_ex(a),
    "solve": lambda a: torch.linalg.solve(a, a[..., :3]),
    "solve_vector": lambda a: torch.linalg.solve(a, a[..., 0]),
    "solve_right": lambda a: torch.linalg.solve(a, a[..., :2, :], left=False),
    "solve_ex": lambda a: torch.linalg.solve_ex(a, a[..., :1]),
    "cholesky": lambda a: torch.linalg.cholesky(a),
    "cholesky_upper_ex": lambda a: torch.linalg.cholesky_ex(a, upper=True),
    "cholesky_legacy": lambda a: torch.cholesky(a),
    "cholesky_inverse": lambda a: torch.cholesky_inverse(a.tril()),
    "cholesky_solve_upper": lambda a: torch.cholesky_solve(a[..., :2], a.triu(), upper=True),
    "ldl_factor": lambda a: torch.linalg.ldl_factor(a),
    "ldl_factor_ex": lambda a: torch.linalg.ldl_factor_ex(a),
    "ldl_solve": lambda a: torch.linalg.ldl_solve(*torch.linalg.ldl_factor(a), a[..., :2]),
    "solve_triangular": lambda a: torch.linalg.solve_triangular(a, a[..., :2], upper=True),
    "solve_triangular_right_unit": lambda a: torch.linalg.solve_triangular(a, a[..., :2, :], upper=False, left=False, unitriangular=True),
    "triangular_solve": lambda a: torch.triangular_solve(a[..., :2], a, transpose=True),
    "matrix_exp": lambda a: torch.linalg.matrix_exp(a),
    "geqrf": lambda a: torch.geqrf(a),
    "householder_product": lambda a: torch.linalg.householder_product(*torch.geqrf(a)),
    "ormqr": lambda a: torch.ormqr(*torch.geqrf(a), a[..., :2], transpose=True),
    "ormqr_right": lambda a: torch.ormqr(*torch.geqrf(a), a[..., :2, :], left=False),
}


@pytest.mark.parametrize("name", SQUARE)
@pytest.mark.parametrize("dtype", LAPACK)
def test_library_calls_are_torchs_routines(name, dtype):
    torch.manual_seed(0)
    a = _spd(2, 4, 4, dtype=dtype)
    fn = SQUARE[name]
    _same(_compiled(fn, a), _eager(fn, a))


@pytest.mark.parametrize("name", ["lu_factor", "lu", "lu_unpack", "geqrf", "householder_product"])
def test_rectangular_and_empty_batches(name):
    fn = SQUARE[name]
    for shape in [(3, 5, 2), (2, 5), (0, 3, 3), (2, 0, 0)]:
        if name == "householder_product" and shape[-2] < shape[-1]:
            continue  # eager refuses a wide matrix
        a = torch.randn(*shape, dtype=torch.float64)
        _same(_compiled(fn, a), _eager(fn, a))


def test_lu_unpack_flags_and_broadcast_solves():
    a, b = torch.randn(2, 1, 3, 3), torch.randn(4, 3, 2)
    for data, piv in [(False, True), (True, False)]:
        fn = lambda a, data=data, piv=piv: torch.lu_unpack(*torch.linalg.lu_factor(a), data, piv)  # noqa: E731
        _same(_compiled(fn, a), fn(a))
    fns = [
        lambda a, b: torch.linalg.solve(a, b),
        lambda a, b: torch.linalg.solve_triangular(a, b, upper=False),
        lambda a, b: torch.linalg.lu_solve(*torch.linalg.lu_factor(a), b),
        lambda a, b: torch.cholesky_solve(b, a.tril()),
        lambda a, b: _eager(torch.triangular_solve, b, a),
    ]
    for fn in fns:
        _same(_compiled(fn, a, b), _eager(fn, a, b))


def test_matrix_exp_half_precision_and_edge_values():
    torch.manual_seed(0)
    for dtype in [torch.float16, torch.bfloat16]:
        a = torch.randn(3, 3, 3).to(dtype)
        _same(_compiled(torch.linalg.matrix_exp, a), torch.linalg.matrix_exp(a))
    a = torch.tensor([[[0.0, 1.0], [-1.0, 0.0]], [[NAN, 0.0], [0.0, 1.0]], [[INF, 0.0], [0.0, -INF]], [[1e3, 0.0], [0.0, -1e3]]])
    _same(_compiled(torch.linalg.matrix_exp, a), torch.linalg.matrix_exp(a))
    t = torch.tensor([[[2.0, NAN], [0.0, INF]], [[-3.0, 1.0], [0.0, 0.0]]])
    fn = lambda t, b: torch.linalg.solve_triangular(t, b, upper=True)  # noqa: E731
    b = torch.tensor([[[1.0], [0.0]], [[-1.0], [2.0]]])
    _same(_compiled(fn, t, b), fn(t, b))


@pytest.mark.parametrize("name", ["inv", "solve", "cholesky", "cholesky_legacy", "lu_factor", "ldl_factor", "cholesky_inverse"])
def test_errors_are_eagers(name):
    fn = SQUARE[name]
    a = torch.zeros(2, 4, 4)
    with pytest.raises(Exception) as want:
        _eager(fn, a)
    if name == "ldl_factor":  # sytrf factors a zero matrix: no error, as in eager
        return
    with pytest.raises(type(want.value)):
        _compiled(fn, a)


def test_an_error_checked_op_without_error_returns_its_result():
    # info arguments from a graph, checked, and the effect token passed on.
    a = _spd(3, 3)
    fn = lambda a: (torch.linalg.inv(a), torch.linalg.cholesky(a) * 2)  # noqa: E731
    _same(_compiled(fn, a), fn(a))


def test_symbolic_shapes():
    torch.manual_seed(0)
    fn = lambda a, b: (torch.linalg.solve(a, b), torch.linalg.inv(a), torch.linalg.lu_factor(a))  # noqa: E731
    for n in (3, 5):
        a, b = _spd(2, n, n), torch.randn(2, n, 2, dtype=torch.float64)
        _same(_compiled(fn, a, b, dynamic=True), fn(a, b))
    fn = lambda x, y: (torch.nn.functional.pdist(x), torch.cdist(x, y, 1.0))  # noqa: E731
    for n in (4, 6):
        x, y = torch.randn(n, 3), torch.randn(2, n + 1, 3)
        _same(_compiled(fn, x, y, dynamic=True), fn(x, y))


# ---------------------------------------------------------------- shape rules, verifiers
def _args(*types):
    return Block(arg_types=[TensorType(d, t) for d, t in types]).args


def test_shape_rules_over_symbols():
    a, b, piv = _args((["s1", "s0", "s0"], "f64"), ([4, 1, "s0", 2], "f64"), (["s1", "s0"], "i32"))
    op = ps.SolveOp(a, b, left=True, check_errors=False)
    assert [r.type for r in op.results] == [
        TensorType([4, "s1", "s0", 2], "f64"), a.type, TensorType(["s1", "s0"], "i32"), TensorType(["s1"], "i32")]
    assert ps.LuSolveOp(a, piv, b, left=True, adjoint=False).results[0].type == TensorType([4, "s1", "s0", 2], "f64")
    (rect,) = _args((["s1", 5, "s0"], "f32"))
    p, l, u = (r.type for r in ps.LuOp(rect, pivot=True).results)
    assert p == TensorType(["s1", 5, 5], "f32") and l.dims[-1] == u.dims[-2] and str(l.dims[-1]) == "Min(5, s0)"
    (x,) = _args((["s0", 3], "f64"))
    s0 = sym("s0")
    (pairs,) = pd.PdistOp(x, 2.0).results[0].type.dims
    assert pairs == sympy.floor(s0 * (s0 - 1) / 2)  # as torch writes (n * (n - 1)) // 2
    x1, x2 = _args(([2, 1, 5, 3], "f32"), ([4, 6, 3], "f32"))
    assert pd.CdistOp(x1, x2, 1.0, None).results[0].type == TensorType([2, 4, 5, 6], "f32")
    (q,) = _args(([2, 5, 3], "f64"))
    assert ph.GeqrfOp(q).results[1].type == TensorType([2, 3], "f64")


@pytest.mark.parametrize("build, message", [
    (lambda: ps.InvOp(*_args(([3, 3], "i64")), check_errors=False), "f32/f64 matrices"),
    (lambda: ps.InvOp(*_args(([3, 4], "f32")), check_errors=False), "square"),
    (lambda: ps.InvOp(*_args(([3], "f32")), check_errors=False), "batch of"),
    (lambda: ps.MatrixExpOp(*_args(([2, 2], "i32"))), "f32/f64/f16/bf16"),
    (lambda: ps.SolveOp(*_args(([3, 3], "f32"), ([3, 2], "f64")), left=True, check_errors=False), "dtype"),
    (lambda: ps.SolveOp(*_args(([2, 3, 3], "f32"), ([5, 3, 2], "f32")), left=True, check_errors=False), "broadcast"),
    (lambda: ps.LuSolveOp(*_args(([3, 3], "f32"), ([3], "i64"), ([3, 1], "f32")), left=True, adjoint=False), "pivots are i32"),
    (lambda: ps.CholeskySolveOp(*_args(([4, 2], "f32"), ([3, 3], "f32")), upper=False), "does not fit"),
    (lambda: ph.OrmqrOp(*_args(([5, 3], "f32"), ([2, 3], "f32"), ([5, 2], "f32")), left=True, transpose=False), "tau"),
    (lambda: ps.LinalgCheckErrorsOp(*_args(([0], "f32"), ([], "i64")), "inv", True).verify(), "info is i32"),
    (lambda: pd.CdistOp(*_args(([4, 3], "f32"), ([5, 2], "f32")), 2.0, None).verify(), "one space"),
    (lambda: pd.PdistOp(*_args(([2, 4, 3], "f32")), 2.0).verify(), "one point set"),
])
def test_verifiers_reject_bad_operands(build, message):
    with pytest.raises(VerifyException, match=message):
        build()


# ---------------------------------------------------------------- distances
def _points(dtype, *shape):
    x = torch.randn(*shape, dtype=torch.float64)
    x.view(-1)[:6] = torch.tensor([0.0, -0.0, 1e30, -1e-30, 7.0, -3.0], dtype=torch.float64)[: x.numel()]
    return x.to(dtype)


ORDERS = [2, 0, 1, 3, 0.5, -1.5, INF, -INF]


@pytest.mark.parametrize("codegen", ["llvm", "triton"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
def test_dist_orders_broadcasts_and_edges(codegen, dtype):
    torch.manual_seed(0)
    fn = lambda x, y: [torch.dist(x, y, p) for p in ORDERS]  # noqa: E731
    x, y = torch.randn(4, 1, 5).to(dtype), torch.randn(3, 5).to(dtype)
    _same(_compiled(fn, x, y, codegen=codegen), fn(x, y), exact=False)
    edges = torch.tensor([0.0, -2.0, INF, 1e4, 3.5, NAN], dtype=torch.float64).to(dtype)
    zeros = torch.zeros(6, dtype=dtype)
    for a, b in [(edges, zeros), (edges[:5], edges[:5]), (edges[2:3], zeros[:1]), (edges[1], edges[3])]:
        _same(_compiled(fn, a, b, codegen=codegen), fn(a, b), exact=False)
    finite = lambda x, y: [torch.dist(x, y, p) for p in [2, 0, 1, 3]]  # noqa: E731  (inf of nothing: an error)
    _same(_compiled(finite, edges[:0], zeros[:0], codegen=codegen), finite(edges[:0], zeros[:0]))


def test_dist_promotes_mixed_dtypes():
    x, y = torch.randn(3, 4), torch.randn(4, dtype=torch.float64)
    _same(_compiled(torch.dist, x, y), torch.dist(x, y), exact=False)


MODES = ["use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist"]


@pytest.mark.parametrize("dtype", LAPACK)
def test_cdist_every_mode_and_pdist(dtype):
    torch.manual_seed(0)
    x1, x2 = _points(dtype, 2, 30, 4), _points(dtype, 1, 27, 4)
    # p = 2 through a matrix product is torch's own decomposition (_euclidean_dist),
    # compiled op by op: equal within tolerance. Every other case is prim.cdist.
    mm = lambda a, b: [torch.cdist(a, b, 2.0, compute_mode=m) for m in MODES[:2]]  # noqa: E731
    _same(_compiled(mm, x1, x2), mm(x1, x2), exact=False)
    fn = lambda a, b: [torch.cdist(a, b, p, compute_mode=m) for p in [0.0, 1.0, 3.0, 0.5, INF] for m in MODES] + [  # noqa: E731
        torch.cdist(a, b, 2.0, compute_mode=MODES[2]), torch.cdist(a[:, :5], b[:, :4], 2.0)]
    _same(_compiled(fn, x1, x2), fn(x1, x2))
    fn = lambda a: [torch.nn.functional.pdist(a, p) for p in [0.0, 1.0, 2.0, 3.0, 0.5, INF]]  # noqa: E731
    _same(_compiled(fn, x1[0]), fn(x1[0]))
    empty = torch.randn(0, 4, dtype=dtype)
    _same(_compiled(torch.cdist, empty, x2[0]), torch.cdist(empty, x2[0]))
    _same(_compiled(torch.nn.functional.pdist, x1[0, :1]), torch.nn.functional.pdist(x1[0, :1]))
