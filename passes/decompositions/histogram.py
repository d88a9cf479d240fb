"""histc onto prim ops: each element's bin, as ATen's CPU kernel computes it
(aten/src/ATen/native/cpu/HistogramKernel.cpp, LINEAR_INTERPOLATION), then a
scatter-add of ones into the bins.

The outer edges are histc_select_outer_bin_edges's (Histogram.cpp): (min, max), or
the data's amin and amax when min == max, widened by 1 on each side when still equal,
then held in the input's dtype (they are linspace's first and last values). An element
outside [lo, hi] or NaN is skipped; its bin is `(int64)((x - lo) * bins / (hi - lo))`
in the input's dtype (each step of an f16/bf16 one rounded, as c10::Half's operators
round), the last bin taking x == hi. Eager raises where the range is not finite or
min > max: such constants decline; a data range with inf or NaN has no eager result.

histogram: histogram_bins.py (its f64 bin_ct edges, fused multiply-adds, stay eager).
"""

from __future__ import annotations

import math

import torch
from xdsl.ir import SSAValue

from strata.dialects import prim
from strata.dialects.aten import AtenOp
from strata.dialects.prim_indexing import ScatterOp
from strata.dialects.types import DTYPES, is_float, numel
from strata.passes.decompositions.builder import Decline, PrimBuilder, tensor_of
from strata.passes.decompositions.rules import decomposes


def _in_dtype(value: float, dtype: str) -> float:
    return torch.tensor(value, dtype=DTYPES[dtype]).item()


@decomposes("aten::histc")
def histc(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x = b.arg("self")
    t = tensor_of(x)
    dtype = t.dtype
    if not is_float(dtype):
        raise Decline(f"eager's histc has no kernel for {dtype}")
    bins = int(b.arg("bins"))
    lo, hi = float(b.arg("min")), float(b.arg("max"))
    if bins <= 0:
        raise Decline("histc needs bins > 0 (eager raises)")
    n = numel(t.dims)
    flat = b.reshape(x, [n])
    # the computation type: f16/bf16 steps run in f32, each rounded back (`step`)
    work = "f32" if dtype in ("f16", "bf16") else dtype

    def step(v: SSAValue) -> SSAValue:
        return b.convert(b.convert(v, dtype), work) if work != dtype else v

    xs = b.convert(flat, work)
    if lo == hi and not (isinstance(n, int) and n == 0):
        if not isinstance(n, int):
            raise Decline("histc over the data's range needs a static element count")
        # aminmax of the data (exact in `work`), widened by 1 where it is one value
        mn = b.broadcast(b.convert(b.reduce("amin", flat, [0]), work), [n])
        mx = b.broadcast(b.convert(b.reduce("amax", flat, [0]), work), [n])
        same = b.ew("eq", mn, mx)
        one = b.constant_like(mn, 1.0)
        left = step(b.where(same, b.ew("sub", mn, one), mn))
        right = step(b.where(same, b.ew("add", mx, one), mx))
    else:
        if lo == hi:
            lo, hi = lo - 1, hi + 1
        if not (math.isfinite(lo) and math.isfinite(hi)) or not lo < hi:
            raise Decline(f"histc's range [{lo}, {hi}] is not finite and increasing (eager raises)")
        lo_t, hi_t = _in_dtype(lo, dtype), _in_dtype(hi, dtype)
        if not lo_t < hi_t:
            raise Decline(f"histc's range [{lo}, {hi}] is empty in {dtype}")
        left, right = b.full([n], lo_t, work), b.full([n], hi_t, work)
    inside = b.ew("logical_and", b.ew("ge", xs, left), b.ew("le", xs, right))
    offset = step(b.ew("sub", xs, left))
    scaled = step(b.ew("mul", offset, b.full([n], _in_dtype(float(bins), dtype), work)))
    ratio = step(b.ew("div", scaled, step(b.ew("sub", right, left))))
    zero = b.full([n], 0.0, work)
    pos = b.convert(b.where(inside, ratio, zero), "i64")
    last = b.full([n], bins, "i64")
    pos = b.where(b.ew("eq", pos, last), b.full([n], bins - 1, "i64"), pos)
    pos = b.where(inside, pos, b.full([n], 0, "i64"))
    ones = b.where(inside, b.full([n], 1.0, dtype), b.full([n], 0.0, dtype))
    return b.add(ScatterOp(b.full([bins], 0.0, dtype), pos, ones, 0, "sum"))
