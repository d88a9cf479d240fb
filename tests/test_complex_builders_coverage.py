"""complex / polar (pairs built from two real tensors), linalg_eig / eigvals (prim.eig,
LAPACK's geev on pairs), and the CUDA-only forms of abs on bool and of grid sampling
(cudnn_grid_sampler): compiled with no eager fallback and compared with eager,
through the LLVM code generator and Triton's interpreter; the CUDA-only rules are
checked on a graph marked as a CUDA one, run by the prim interpreter."""

from __future__ import annotations

import math

import pytest
import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Region

import strata
from strata.testing.no_fallback import compiled
from strata.dialects import aten
from strata.dialects.aten import AtenOp
from strata.frontend.capture.importer import tensor_type_of
from strata.passes.decompose import decompose
from strata.runtime.interpreters import interpret
from strata.testing.checks import mismatch

NAN, INF = math.nan, math.inf
BACKENDS = {"llvm": {}, "triton": {"codegen": "triton"}}
EDGES = [0.0, -0.0, 1.5, -2.25, 1e30, -1e-30, INF, -INF, NAN]


def _compiled(fn, *args, options=None):
    return compiled(fn, *args, options=options)


def _check(got, want):
    got, want = (list(v) if isinstance(v, tuple | list) else [v] for v in (got, want))
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape
    # complex results as their pairs: the checker's comparison treats a complex NaN as unequal to itself
    pairs = lambda vs: [torch.view_as_real(v) if v.is_complex() else v for v in vs]  # noqa: E731
    problem = mismatch(pairs(want), pairs(got), None)
    assert problem is None, problem


def _grid(dtype):
    x = torch.tensor(EDGES, dtype=dtype)
    return x[:, None].expand(len(EDGES), len(EDGES)).contiguous(), x[None, :].expand(len(EDGES), len(EDGES)).contiguous()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_complex_and_polar_on_edge_values(backend, dtype):
    a, b = _grid(dtype)
    for fn in (torch.complex, torch.polar):
        _check(_compiled(fn, a, b, options=BACKENDS[backend]), fn(a, b))


@pytest.mark.parametrize("backend", BACKENDS)
def test_complex_and_polar_broadcast_and_feed_complex_math(backend):
    r, theta = torch.rand(3, 1) * 4, torch.randn(5, dtype=torch.float32) * 3
    fn = lambda r, t: (torch.polar(r, t) * torch.complex(t, r.mean()) + 1).abs()  # noqa: E731
    _check(_compiled(fn, r, theta, options=BACKENDS[backend]), fn(r, theta))
    for fn in (torch.complex, torch.polar):  # 0-d and empty operands
        x, y = torch.tensor(2.0, dtype=torch.float64), torch.tensor([0.5, -1.0], dtype=torch.float64)
        _check(_compiled(fn, x, y, options=BACKENDS[backend]), fn(x, y))
        e = torch.empty(0, 3)
        _check(_compiled(fn, e, e, options=BACKENDS[backend]), fn(e, e))


def test_complex_of_mixed_dtypes_stays_eager():
    # eager raises on f32 with f64; the rule declines rather than promote
    from strata.testing.single_op import single_op_module

    module = single_op_module("aten::complex", [torch.rand(2), torch.rand(2)])
    (op,) = [o for o in module.walk() if isinstance(o, AtenOp)]
    assert decompose(op) is None
    with pytest.raises(RuntimeError):
        torch.complex(torch.rand(2), torch.rand(2, dtype=torch.float64))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_eig_and_eigvals(dtype):
    torch.manual_seed(0)
    a = torch.randn(2, 5, 5, dtype=dtype)
    rot = torch.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=dtype)  # eigenvalues ±i
    for x in (a, rot, torch.eye(3, dtype=dtype), torch.empty(0, 0, dtype=dtype)):
        _check(_compiled(torch.linalg.eig, x), torch.linalg.eig(x))
        _check(_compiled(torch.linalg.eigvals, x), torch.linalg.eigvals(x))
    fn = lambda x: torch.linalg.eigvals(x).abs().sum(-1)  # noqa: E731  (feeds complex math)
    _check(_compiled(fn, a), fn(a))


def _cuda_graph(overload: str, inputs, result, **constants) -> tuple[ModuleOp, AtenOp]:
    """One aten op in a graph marked as a CUDA one (eager's CPU kernel may not exist)."""
    block = Block(arg_types=[tensor_type_of(t) for t in inputs])
    sig = aten.signature_of(aten.torch_overload(overload)._schema)
    values = dict(constants)
    args = iter(block.args)
    for a in sig.args:
        if a.kind == "Tensor":
            values[a.name] = next(args)
    op = aten.build(overload, values, [tensor_type_of(result)])
    block.add_ops([op, func.ReturnOp(*op.results)])
    fn = func.FuncOp("graph", ([a.type for a in block.args], [r.type for r in op.results]), Region(block))
    fn.attributes["strata.device"] = StringAttr("cuda")
    return ModuleOp([fn]), op


def test_abs_of_bool_on_cuda_is_itself_and_declines_on_cpu():
    x = torch.tensor([True, False, True])
    module, op = _cuda_graph("aten::abs", [x], x)
    assert decompose(op) is None
    (got,) = interpret(module, [x])
    assert torch.equal(got, x)
    module, op = _cuda_graph("aten::abs", [x], x)
    module.ops.first.attributes["strata.device"] = StringAttr("cpu")
    assert "no bool kernel" in decompose(op)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
def test_cudnn_grid_sampler_is_bilinear_zeros_align_corners(dtype):
    torch.manual_seed(0)
    x = torch.randn(2, 3, 5, 7, dtype=dtype)
    grid = (torch.rand(2, 4, 6, 2) * 2.6 - 1.3).to(dtype)
    if dtype != torch.float16:  # (grid_sampler_2d's f16 rule reads 0 at a NaN coordinate, eager NaN)
        grid[0, 0, 0] = torch.tensor([NAN, 0.5])
    grid[1, 0, 0] = torch.tensor([1.0, -1.0])
    want = torch.grid_sampler_2d(x, grid, 0, 0, True)
    module, op = _cuda_graph("aten::cudnn_grid_sampler", [x, grid], want)
    assert decompose(op) is None
    (got,) = interpret(module, [x, grid])
    _check(got, want)
