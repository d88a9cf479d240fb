"""2-d upsampling → gathers at computed source positions, and (anti-aliased) separable
weighted sums.

Source positions and weights follow ATen's CPU kernels (UpSample.h,
cpu/UpSampleKernel.cpp), each computed by prim ops over an iota of the output's
positions, in the arithmetic eager uses:
- nearest: src = min(floorf(dst · scale), in - 1) in f32, scale = 1/scale_factor or
  in/out (compute_scales_value<float>, nearest_idx);
- bilinear: src = scale · dst (align_corners) or max(scale · (dst + 0.5) - 0.5, 0),
  in the opmath dtype (f32 for f16/bf16), then i0 = min(floor(src), in - 1),
  i1 = i0 + (i0 < in - 1), λ1 = clamp(src - i0, 0, 1), λ0 = 1 - λ1
  (area_pixel_compute_source_index, guard_index_and_lambda);
- anti-aliased bilinear: per output position a triangle filter of half-width
  max(scale, 1) around center = scale · (dst + 0.5), normalized to sum 1
  (_compute_indices_min_size_weights_aa), applied as a dense [out, in] weight matrix
  along W, then along H.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from strata.dialects import prim
from strata.dialects.aten import AtenOp
from strata.dialects.prim_indexing import GatherOp
from strata.dialects.types import is_float
from strata.passes.decompositions.builder import Decline, PrimBuilder, accumulator, tensor_of
from strata.passes.decompositions.rules import decomposes


def _sizes(b: PrimBuilder) -> tuple[SSAValue, list[int], list[int], list[float | None]]:
    """The input, its spatial sizes, the output's, and the scale factors (or Nones)."""
    x = b.arg("input") if b.arg("input") is not None else b.arg("self")
    t, out = tensor_of(x), b.out()
    if t.rank != 4 or not all(isinstance(d, int) for d in (*t.dims[2:], *out.dims[2:])):
        raise Decline("2-d upsampling of [n, c, h, w] with static spatial sizes")
    factors = b.arg("scale_factors")
    if factors is not None:
        scales = [float(f) for f in factors]
    else:
        scales = [b.arg("scales_h"), b.arg("scales_w")]
        scales = [None if s is None else float(s) for s in scales]
    return x, list(t.dims[2:]), list(out.dims[2:]), scales


def _scale(b: PrimBuilder, size_in: int, size_out: int, factor: float | None, align: bool, dtype: str) -> SSAValue:
    """area_pixel_compute_scale in `dtype`, as a [size_out] tensor (a quotient of two
    sizes is taken in `dtype`, as ATen divides them)."""
    if align:
        if size_out <= 1:
            return b.full([size_out], 0.0, dtype)
        return b.ew("div", b.full([size_out], size_in - 1, dtype), b.full([size_out], size_out - 1, dtype))
    if factor is not None and factor > 0:
        return b.full([size_out], b.round_to(1.0 / factor, dtype), dtype)
    return b.ew("div", b.full([size_out], size_in, dtype), b.full([size_out], size_out, dtype))


def _positions(b: PrimBuilder, size_out: int, dtype: str) -> SSAValue:
    return b.convert(b.add(prim.IotaOp(size_out, 0, 1, "i64")), dtype)


def _gather_axis(b: PrimBuilder, x: SSAValue, index: SSAValue, axis: int) -> SSAValue:
    """x[..., index, ...] along `axis` (index is 1-d)."""
    t = tensor_of(x)
    dims = list(t.dims)
    dims[axis] = tensor_of(index).dims[0]
    return b.add(GatherOp(x, b.add(prim.BroadcastInDimOp(index, dims, [axis])), axis))


def _nearest_index(b: PrimBuilder, size_in: int, size_out: int, factor: float | None) -> SSAValue:
    scale = _scale(b, size_in, size_out, factor, False, "f32")
    src = b.ew("floor", b.ew("mul", _positions(b, size_out, "f32"), scale))
    return b.ew("minimum", b.convert(src, "i64"), b.full([size_out], size_in - 1, "i64"))


@decomposes("aten::upsample_nearest2d.vec", "aten::upsample_nearest2d")
def upsample_nearest2d(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x, sizes_in, sizes_out, scales = _sizes(b)
    dtype = tensor_of(x).dtype
    if 0 in sizes_in or not (is_float(dtype) or dtype == "u8"):
        raise Decline("nearest upsampling of a non-empty float or u8 input (eager's CPU kernel takes no other)")
    for axis, (n_in, n_out, factor) in enumerate(zip(sizes_in, sizes_out, scales)):
        x = _gather_axis(b, x, _nearest_index(b, n_in, n_out, factor), axis + 2)
    return x


def _linear_taps(b: PrimBuilder, size_in: int, size_out: int, factor, align: bool, dtype: str):
    """i0, i1 (i64) and λ0, λ1 (`dtype`) of each output position along one axis."""
    scale = _scale(b, size_in, size_out, factor, align, dtype)
    dst = _positions(b, size_out, dtype)
    if align:
        src = b.ew("mul", scale, dst)
    else:
        half = b.full([size_out], 0.5, dtype)
        src = b.ew("sub", b.ew("mul", scale, b.ew("add", dst, half)), half)
        src = b.ew("maximum", src, b.full([size_out], 0.0, dtype))
    last = b.full([size_out], size_in - 1, "i64")
    i0 = b.ew("minimum", b.convert(b.ew("floor", src), "i64"), last)
    i1 = b.ew("add", i0, b.convert(b.ew("lt", i0, last), "i64"))
    l1 = b.ew("sub", src, b.convert(i0, dtype))
    l1 = b.ew("minimum", b.ew("maximum", l1, b.full([size_out], 0.0, dtype)), b.full([size_out], 1.0, dtype))
    l0 = b.ew("sub", b.full([size_out], 1.0, dtype), l1)
    return i0, i1, l0, l1


@decomposes("aten::upsample_bilinear2d.vec", "aten::upsample_bilinear2d")
def upsample_bilinear2d(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x, sizes_in, sizes_out, scales = _sizes(b)
    t = tensor_of(x)
    if not is_float(t.dtype) or 0 in sizes_in:
        raise Decline("bilinear upsampling of a non-empty floating input")
    compute = accumulator(t.dtype)
    align = bool(b.arg("align_corners"))
    v = b.convert(x, compute)
    for axis, (n_in, n_out, factor) in enumerate(zip(sizes_in, sizes_out, scales)):
        i0, i1, l0, l1 = _linear_taps(b, n_in, n_out, factor, align, compute)
        lo, hi = _gather_axis(b, v, i0, axis + 2), _gather_axis(b, v, i1, axis + 2)
        dims = tensor_of(lo).dims
        w0 = b.add(prim.BroadcastInDimOp(l0, dims, [axis + 2]))
        w1 = b.add(prim.BroadcastInDimOp(l1, dims, [axis + 2]))
        v = b.ew("add", b.ew("mul", lo, w0), b.ew("mul", hi, w1))
    return b.convert(v, b.out().dtype)


def _aa_weights(b: PrimBuilder, size_in: int, size_out: int, factor, align: bool, dtype: str) -> tuple[SSAValue, SSAValue]:
    """The [size_out, size_in] matrix of an anti-aliased bilinear resize along one axis
    (ATen's _compute_indices_min_size_weights_aa with its triangle filter), and which
    of its entries lie in each output's window (only those are read, as in eager: a
    NaN or inf outside the window must not reach the output through a zero weight)."""
    scale = _scale(b, size_in, size_out, factor, align, dtype)  # [out]
    one = b.full([size_out], 1.0, dtype)
    at_least_one = b.ew("ge", scale, one)
    support = b.where(at_least_one, scale, one)  # (interp_size / 2) · scale, or 1
    invscale = b.where(at_least_one, b.ew("div", one, scale), one)
    half = b.full([size_out], 0.5, dtype)
    center = b.ew("mul", scale, b.ew("add", _positions(b, size_out, dtype), half))
    xmin = b.ew("maximum", b.convert(b.ew("trunc", b.ew("add", b.ew("sub", center, support), half)), "i64"), b.full([size_out], 0, "i64"))
    xend = b.ew("minimum", b.convert(b.ew("trunc", b.ew("add", b.ew("add", center, support), half)), "i64"), b.full([size_out], size_in, "i64"))
    # xsize is clipped to max_interp_size = ceil(support) · 2 + 1
    widest = b.convert(b.ew("add", b.ew("mul", b.ew("ceil", support), b.full([size_out], 2.0, dtype)), one), "i64")
    xend = b.ew("minimum", xend, b.ew("add", xmin, widest))
    grid = [size_out, size_in]
    i = b.add(prim.BroadcastInDimOp(b.add(prim.IotaOp(size_in, 0, 1, "i64")), grid, [1]))

    def per_out(v: SSAValue) -> SSAValue:
        return b.add(prim.BroadcastInDimOp(v, grid, [0]))

    inside = b.ew("logical_and", b.ew("ge", i, per_out(xmin)), b.ew("lt", i, per_out(xend)))
    # filter((j + xmin - center + 0.5) · invscale), j + xmin being the input position i
    arg = b.ew("mul", b.ew("add", b.ew("sub", b.convert(i, dtype), per_out(center)), b.full(grid, 0.5, dtype)), per_out(invscale))
    tri = b.ew("maximum", b.ew("sub", b.full(grid, 1.0, dtype), b.ew("abs", arg)), b.full(grid, 0.0, dtype))
    w = b.where(inside, tri, b.full(grid, 0.0, dtype))
    total = b.reduce("sum", w, [1])
    nonzero = b.ew("ne", total, b.full([size_out], 0.0, dtype))
    divisor = per_out(b.where(nonzero, total, one))
    return b.ew("div", w, divisor), inside


def _resize_axis(b: PrimBuilder, v: SSAValue, weights: tuple[SSAValue, SSAValue], axis: int) -> SSAValue:
    """Σ_i weights[o, i] · v[..., i, ...] along `axis`, over each window's i only."""
    weights, inside = weights
    t = tensor_of(v)
    n_out = tensor_of(weights).dims[0]
    wide = [*t.dims[:axis], n_out, *t.dims[axis:]]  # the output position before the input's
    keep = [d for d in range(len(wide)) if d != axis]
    prods = b.ew("mul", b.add(prim.BroadcastInDimOp(v, wide, keep)), b.add(prim.BroadcastInDimOp(weights, wide, [axis, axis + 1])))
    window = b.add(prim.BroadcastInDimOp(inside, wide, [axis, axis + 1]))
    prods = b.where(window, prods, b.full(wide, 0.0, t.dtype))
    return b.reduce("sum", prods, [axis + 1])


@decomposes("aten::_upsample_bilinear2d_aa")
def upsample_bilinear2d_aa(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x, sizes_in, sizes_out, scales = _sizes(b)
    t = tensor_of(x)
    if t.dtype not in ("f32", "f64") or 0 in sizes_in:
        raise Decline("anti-aliased upsampling of a non-empty f32/f64 input")
    align = bool(b.arg("align_corners"))
    v = x
    for axis in (3, 2):  # along W, then along H, as ATen's separable kernel
        k = axis - 2
        v = _resize_axis(b, v, _aa_weights(b, sizes_in[k], sizes_out[k], scales[k], align, t.dtype), axis)
    return v

