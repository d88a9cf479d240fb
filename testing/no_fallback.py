"""For coverage tests: compile with every eager fallback an error, and compare with
eager's results leaf by leaf."""

from __future__ import annotations

import warnings

import torch

import strata


def compiled(fn, *args, codegen: str = "llvm", dynamic: bool = False, options: dict | None = None):
    """fn(*args) compiled by strata (fresh Dynamo state) with `options` (their codegen
    wins); an eager fallback, a graph run eagerly or a kernel left to the interpreter
    raises."""
    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*no lowering covers.*")
        warnings.filterwarnings("error", message=".*runs eagerly.*")
        warnings.filterwarnings("error", message=".*kernel interpreter.*")
        warnings.filterwarnings("ignore", message=".*is deprecated.*")
        return strata.compile(fn, dynamic=dynamic, options={"codegen": codegen, **(options or {})})(*args)


def same(got, want, exact: bool = True) -> None:
    """Same dtypes and shapes, equal values (NaN equal to NaN): bit for bit when
    `exact`, else within torch's default tolerances."""
    if isinstance(want, torch.Tensor):
        assert got.dtype == want.dtype and got.shape == want.shape
        tol = dict(rtol=0, atol=0) if exact else {}
        torch.testing.assert_close(got, want, equal_nan=True, **tol)
        return
    assert len(got) == len(want)
    for g, w in zip(got, want):
        same(g, w, exact)
