"""Random tensors → prim's philox ops (dialects/prim_random.py).

Each random aten op draws its own seed (`prim.random_seed`, one fresh 64-bit seed per
run of the graph) and reads a philox stream of it: element i of the result uses
counter i. `uniform` and `normal` are what the rules here and dropout's (dropout.py)
build on. Values follow torch.manual_seed but are not eager's bits: eager draws
from its own generator kernels; the option `fallback_random` keeps every random op
aten, run by the eager kernel (passes/decompose.py), for results equal to eager's.

Uniforms are f32 with 31 random bits: f64 results get no more, and f16/bf16 results
are kept below 1 after rounding (a float just below 1 rounds up to 1 there).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from xdsl.ir import SSAValue

from strata.dialects.aten import AtenOp
from strata.dialects.prim_random import PhiloxNormalOp, PhiloxUniformOp, RandomSeedOp
from strata.dialects.types import DTYPES, Dim, is_float
from strata.passes.decompositions.builder import Decline, PrimBuilder, tensor_of
from strata.passes.decompositions.rules import decomposes


def uniform(b: PrimBuilder, dims: Sequence[Dim]) -> SSAValue:
    """An f32 tensor of `dims`, uniform in [0, 1), from a seed of its own."""
    return b.add(PhiloxUniformOp(b.add(RandomSeedOp()), dims))


def normal(b: PrimBuilder, dims: Sequence[Dim]) -> SSAValue:
    """An f32 tensor of `dims`, standard normal, from a seed of its own."""
    return b.add(PhiloxNormalOp(b.add(RandomSeedOp()), dims))


def _check_arguments(b: PrimBuilder) -> None:
    """What these rules leave to eager: a generator of the user's own (its state is
    eager's business) and layouts other than strided."""
    if b.arg("generator") is not None:
        raise Decline("a generator argument: its draws belong to that generator")
    layout = b.arg("layout")
    if layout is not None and str(layout) != "torch.strided":
        raise Decline(f"layout {layout}")


def _float_result(b: PrimBuilder) -> str:
    dtype = b.out().dtype
    if not is_float(dtype):
        raise Decline(f"random values of dtype {dtype}")
    return dtype


def below_one(b: PrimBuilder, u: SSAValue) -> SSAValue:
    """Uniforms converted to their dtype, with the values that round up to 1 there
    (f16, bf16) moved to the largest float below 1."""
    dtype = tensor_of(u).dtype
    if dtype not in ("f16", "bf16"):
        return u
    largest = 1.0 - torch.finfo(DTYPES[dtype]).eps / 2
    return b.ew("minimum", u, b.constant_like(u, largest))


@decomposes("aten::rand", "aten::rand_like")
def rand(op: AtenOp, b: PrimBuilder) -> SSAValue:
    _check_arguments(b)
    dtype = _float_result(b)
    return below_one(b, b.convert(uniform(b, b.out().dims), dtype))


@decomposes("aten::randn", "aten::randn_like")
def randn(op: AtenOp, b: PrimBuilder) -> SSAValue:
    _check_arguments(b)
    dtype = _float_result(b)
    return b.convert(normal(b, b.out().dims), dtype)


@decomposes("aten::bernoulli.p")
def bernoulli(op: AtenOp, b: PrimBuilder) -> SSAValue:
    """1 with probability p, else 0, in self's shape and dtype."""
    _check_arguments(b)
    p, out = b.arg("p"), b.out()
    if not isinstance(p, int | float) or not 0 <= p <= 1:
        raise Decline(f"probability {p}")
    u = uniform(b, out.dims)
    return b.convert(b.ew("lt", u, b.constant_like(u, float(p))), out.dtype)
