"""histogram (its two overloads) onto prim ops, as ATen's CPU kernel computes it
(aten/src/ATen/native/Histogram.cpp, native/cpu/HistogramKernel.cpp). Eager has no
CUDA kernel: a CUDA graph declines.

Each element's bin is found among the bin edges by an upper bound (prim.searchsorted,
right=True, whose binary search probes as std::upper_bound does, so even unsorted
edges agree): BINARY_SEARCH for explicit edges, and LINEAR_INTERPOLATION_WITH_LOCAL_
SEARCH for bin_ct, whose estimate the local search corrects to the same upper bound.
An element outside [first edge, last edge] or NaN is skipped; one on the last edge
counts in the last bin. The bins get weight (or 1) by a scatter-add; with `density`
they are divided by their sum, then by their widths.

bin_ct's edges are linspace(lo, hi, bins + 1) in the input's dtype, lo and hi from
`range` or the data's aminmax (0 and 1 when empty), widened by 0.5 each way when
equal (select_outer_bin_edges). For f32 the CPU kernel's values are those of
`start + step * i` (and `end - step * (steps - 1 - i)` past halfway) computed in f64
from f32 start and step and rounded once to f32 (checked against eager on 3000
random ranges). For f64 they are a fused multiply-add, which prim cannot round once:
f64 bin_ct declines.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from xdsl.ir import SSAValue

from strata.dialects import prim
from strata.dialects.aten import AtenOp
from strata.dialects.prim_indexing import ScatterOp
from strata.dialects.prim_scan import SearchsortedOp
from strata.dialects.types import DTYPES, numel
from strata.passes.decompositions.builder import Decline, PrimBuilder, tensor_of
from strata.dialects.attributes import graph_device
from strata.passes.decompositions.rules import decomposes


def _input(op: AtenOp, b: PrimBuilder) -> SSAValue:
    if graph_device(op) == "cuda":
        raise Decline("eager has no CUDA kernel for histogram")
    x = b.arg("self")
    if tensor_of(x).dtype not in ("f32", "f64"):
        raise Decline(f"eager's histogram has no kernel for {tensor_of(x).dtype}")
    return x


def _counts(b: PrimBuilder, x: SSAValue, edges: SSAValue, weight, density: bool) -> SSAValue:
    """The histogram of x's elements over 1-d `edges` (at least 2)."""
    t = tensor_of(x)
    dtype, n = t.dtype, numel(t.dims)
    nedges = tensor_of(edges).dims[0]
    bins = nedges - 1
    flat = b.reshape(x, [n])
    first = b.reshape(b.add(prim.SliceOp(edges, [0], [1], [1])), [])
    last = b.reshape(b.add(prim.SliceOp(edges, [bins], [nedges], [1])), [])
    inside = b.ew("logical_and", b.ew("ge", flat, b.broadcast(first, [n])), b.ew("le", flat, b.broadcast(last, [n])))
    pos = b.ew("sub", b.add(SearchsortedOp(edges, flat, True, False)), b.full([n], 1, "i64"))
    top = b.full([n], bins, "i64")
    pos = b.where(b.ew("eq", pos, top), b.ew("sub", top, b.full([n], 1, "i64")), pos)
    pos = b.where(inside, pos, b.full([n], 0, "i64"))
    if weight is None:
        add = b.full([n], 1.0, dtype)
    else:
        w = tensor_of(weight)
        if w.dtype != dtype or numel(w.dims) != n:
            raise Decline(f"a weight {w} for an input {t} (eager raises)")
        add = b.reshape(weight, [n])
    add = b.where(inside, add, b.full([n], 0.0, dtype))
    hist = b.add(ScatterOp(b.full([bins], 0.0, dtype), pos, add, 0, "sum"))
    if density:
        total = b.broadcast(b.reduce("sum", hist, [0]), [bins])
        hist = b.ew("div", hist, total)
        lows = b.add(prim.SliceOp(edges, [0], [bins], [1]))
        highs = b.add(prim.SliceOp(edges, [1], [nedges], [1]))
        hist = b.ew("div", hist, b.ew("sub", highs, lows))
    return hist


@decomposes("aten::histogram.bins_tensor")
def histogram_bins_tensor(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    x = _input(op, b)
    edges = b.arg("bins")
    e = tensor_of(edges)
    if e.rank != 1 or e.dtype != tensor_of(x).dtype or not isinstance(e.dims[0], int) or e.dims[0] < 2:
        raise Decline(f"bin edges {e}: 1-d, of the input's dtype, with at least 2 edges (static)")
    return [_counts(b, x, edges, b.arg("weight"), bool(b.arg("density"))), edges]


@decomposes("aten::histogram.bin_ct")
def histogram_bin_ct(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    x = _input(op, b)
    t = tensor_of(x)
    if t.dtype != "f32":
        raise Decline("f64 linspace edges are fused multiply-adds, which prim cannot round once")
    bins = b.arg("bins")
    bins = 100 if bins is None else bins
    if not isinstance(bins, int) or bins <= 0:
        raise Decline(f"bins={bins} (eager raises unless a positive int)")
    edges = _linspace_edges(b, _outer_edges(b, x, b.arg("range")), bins)
    return [_counts(b, x, edges, b.arg("weight"), bool(b.arg("density"))), edges]


def _in_f32(v: float) -> float:
    return torch.tensor(v, dtype=DTYPES["f32"]).item()


def _outer_edges(b: PrimBuilder, x: SSAValue, range_) -> tuple[SSAValue, SSAValue]:
    """linspace's start and end as f32 scalars [] (select_outer_bin_edges, then
    linspace's conversion of the two doubles to f32)."""
    t = tensor_of(x)
    n = numel(t.dims)
    if range_ is not None:
        lo, hi = (float(v) for v in range_)
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo > hi:
            raise Decline(f"histogram range [{lo}, {hi}] is not finite and ordered (eager raises)")
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        return b.full([], _in_f32(lo), "f32"), b.full([], _in_f32(hi), "f32")
    if isinstance(n, int) and n == 0:
        return b.full([], 0.0, "f32"), b.full([], 1.0, "f32")
    flat = b.reshape(x, [n])
    # the data's aminmax, held in double, widened by 0.5 where equal, back to f32
    lo = b.convert(b.reduce("amin", flat, [0]), "f64")
    hi = b.convert(b.reduce("amax", flat, [0]), "f64")
    same = b.ew("eq", lo, hi)
    half = b.full([], 0.5, "f64")
    lo = b.where(same, b.ew("sub", lo, half), lo)
    hi = b.where(same, b.ew("add", hi, half), hi)
    return b.convert(lo, "f32"), b.convert(hi, "f32")


def _linspace_edges(b: PrimBuilder, ends: tuple[SSAValue, SSAValue], bins: int) -> SSAValue:
    """linspace(start, end, bins + 1) in f32 as eager's CPU kernel gives it (see the
    module's docstring): f32 step, each value computed in f64 and rounded once."""
    steps = bins + 1
    start, end = ends
    step = b.ew("div", b.ew("sub", end, start), b.full([], float(bins), "f32"))
    wide = lambda v: b.broadcast(b.convert(v, "f64"), [steps])  # noqa: E731
    i = b.add(prim.IotaOp(steps, 0, 1, "i64"))
    below = b.ew("lt", i, b.full([steps], steps // 2, "i64"))
    up = b.ew("add", wide(start), b.ew("mul", wide(step), b.convert(i, "f64")))
    down_count = b.convert(b.ew("sub", b.full([steps], steps - 1, "i64"), i), "f64")
    down = b.ew("sub", wide(end), b.ew("mul", wide(step), down_count))
    return b.convert(b.where(below, up, down), "f32")
