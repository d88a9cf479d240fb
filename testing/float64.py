"""A program computed in float64, the yardstick for results that miss their dtype's
tolerance (testing/checks.py).

A pass or a code generator may round less often than the level above it does: a
fused kernel computes f16 values in f32 where eager rounds after every op, and eager's
vectorized kernels have their own ways (gelu(+inf) is NaN in eager's f32 vector path).
Where such a difference is amplified (log near 1, a chain of logs) a result can miss
the tolerance while being as accurate as the reference's. So the checks run the
reference level's program once more with every floating dtype made f64, on the same
input values, and accept a result whose error against it is at most the reference's
error plus the tolerance (the rule of the OpInfo sweep, tools/opinfo.py), or, where
that error is itself many tolerances (an ill-conditioned program), at most 1.25× it.
"""

from __future__ import annotations

import math

import torch
from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    DictionaryAttr,
    Float16Type,
    Float32Type,
    Float64Type,
    StringAttr,
)
from xdsl.ir import Attribute, Operation, ParametrizedAttribute

from strata.runtime.interpreters.kernel import flat_storage

NARROW_FLOATS = ("f16", "bf16", "f32")


def in_float64(op: Operation) -> Operation:
    """A clone of `op` (a module or a kernel.func) in which every floating dtype is
    f64: tensor, buffer and scalar types, float constants, dtype properties."""
    clone = op.clone()
    for o in clone.walk():
        for v in (*o.results, *(a for r in o.regions for b in r.blocks for a in b.args)):
            v._type = _widened(v.type)  # xDSL has no setter: a value's type is fixed at creation
        for name, attr in list(o.properties.items()):
            o.properties[name] = _widened(attr)
        for name, attr in list(o.attributes.items()):
            o.attributes[name] = _widened(attr)
    return clone


def _widened(attr: Attribute) -> Attribute:
    if isinstance(attr, Float16Type | BFloat16Type | Float32Type):
        return Float64Type()
    if isinstance(attr, StringAttr):
        return StringAttr("f64") if attr.data in NARROW_FLOATS else attr
    if isinstance(attr, ArrayAttr):
        return ArrayAttr([_widened(a) for a in attr.data])
    if isinstance(attr, DictionaryAttr):
        return DictionaryAttr({k: _widened(a) for k, a in attr.data.items()})
    if isinstance(attr, ParametrizedAttribute) and attr.parameters:
        # tensor and buffer types, function types, typed float constants
        return type(attr).new(tuple(_widened(p) for p in attr.parameters))
    return attr


def as_float64(x):
    """x with floating values in f64, in the same layout (kernels read the storage)."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        return x
    return torch.as_strided(flat_storage(x).double(), x.shape, x.stride())


ILL_CONDITIONED = 10
RELATIVE_SLACK = 1.25


def as_accurate(got: torch.Tensor, want: torch.Tensor, exact: torch.Tensor, tol: float) -> bool:
    """Whether every element of `got` is as close to `exact` (the float64 program's) as
    `want` (the reference level's) is, within tolerance: err(got) <= err(want) + tol."""
    g, w, r = got.double(), want.double(), exact.double().reshape(want.shape)
    slack = torch.where(r.isfinite(), tol + tol * r.abs(), 0.0)
    err_w = _error(w, r)
    # Where the reference itself is off by more than ILL_CONDITIONED slacks, the program
    # is ill-conditioned there: sin(exp(10.9)), whose argument 54800 has an f32 ulp of
    # 0.004, turns half an ulp of exp into 0.002. A result within RELATIVE_SLACK of the
    # reference's error is as accurate as it.
    allowed = torch.where(err_w > ILL_CONDITIONED * slack, err_w * RELATIVE_SLACK, err_w) + slack
    return bool(((_error(g, r) <= allowed) | (g == w) | (g.isnan() & w.isnan())).all())


def worst_error(x: torch.Tensor, exact: torch.Tensor) -> float:
    """The largest error of x against `exact` (see `_error`)."""
    if x.numel() == 0:
        return 0.0
    return float(_error(x.double(), exact.double().reshape(x.shape)).max())


def _error(x: torch.Tensor, exact: torch.Tensor) -> torch.Tensor:
    """|x - exact|: 0 where they are equal (infinities, and NaN with NaN), infinite
    where one is NaN or they are infinities of another sign."""
    err = torch.where((x == exact) | (x.isnan() & exact.isnan()), 0.0, (x - exact).abs())
    return torch.where(err.isnan(), math.inf, err)
