"""grid_sampler_2d / grid_sampler_3d → prim gathers at computed positions, combined
with elementwise weights.

Each output position (n, *out) reads the input at the point the grid gives there (the
last grid dim holds x, y(, z), each in [-1, 1] across the input), unnormalized to pixel
coordinates, moved inside the input by the padding mode (zeros: none, the taps outside
read 0; border: clipped; reflection: mirrored at the borders, then clipped), and
interpolated: bilinear from the 2^n surrounding pixels, nearest (rounding half to
even), or bicubic (2-d only, 4 × 4 taps, cubic convolution with A = -0.75).

The formulas are ATen's CPU kernels': for f32/f64 in 2-d the vectorized kernel of
GridSamplerKernel.cpp (unnormalize as (g + 1)·scale - offset, NaN clipped to 0,
weights from the distances to the floor), otherwise (3-d, and f16/bf16 in 2-d) the
scalar one of GridSampler.cpp and GridSampler.h (NaN clipped to size - 1, a
non-finite coordinate replaced by -100 before interpolation, so it reads nothing).
f16/bf16 are computed in f32 and rounded once, where eager rounds every step.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from xdsl.ir import SSAValue

from strata.dialects import prim
from strata.dialects.aten import AtenOp
from strata.dialects.types import is_float, numel, sym
from strata.passes.decompositions.builder import Decline, PrimBuilder, accumulator, tensor_of
from strata.passes.decompositions.indexing import read_at
from strata.passes.decompositions.rules import decomposes

BILINEAR, NEAREST, BICUBIC = 0, 1, 2
ZEROS, BORDER, REFLECTION = 0, 1, 2
A = -0.75  # the cubic convolution's constant, as ATen's UpSampleBicubic2d.h


class _Coordinates:
    """Elementwise coordinate arithmetic on f32/f64 tensors of one shape."""

    def __init__(self, b: PrimBuilder, like: SSAValue):
        self.b = b
        self.like = like

    def c(self, value: float) -> SSAValue:
        return self.b.constant_like(self.like, value)

    def __call__(self, name: str, *xs) -> SSAValue:
        args = [x if isinstance(x, SSAValue) else self.c(x) for x in xs]
        return self.b.ew(name, *args)


def _unnormalize(f: _Coordinates, g: SSAValue, size: int, align: bool, vectorized: bool) -> SSAValue:
    if vectorized:  # ComputeLocationBase::unnormalize
        if align:
            return f("mul", f("add", g, 1.0), (size - 1) / 2)
        return f("sub", f("mul", f("add", g, 1.0), size / 2), 0.5)
    if align:  # grid_sampler_unnormalize
        return f("mul", f("div", f("add", g, 1.0), 2.0), float(size - 1))
    return f("div", f("sub", f("mul", f("add", g, 1.0), float(size)), 1.0), 2.0)


def _clip(f: _Coordinates, x: SSAValue, size: int, vectorized: bool) -> SSAValue:
    """Into [0, size - 1]; NaN goes to 0 in the vectorized kernel (max(0, NaN) is 0
    there) and to size - 1 in the scalar one (std::min(size - 1, std::max(NaN, 0)))."""
    clipped = f("minimum", f("maximum", x, 0.0), float(size - 1))
    return f.b.where(f("isnan", x), f.c(0.0 if vectorized else float(size - 1)), clipped)


def _reflect(f: _Coordinates, x: SSAValue, size: int, align: bool, vectorized: bool) -> SSAValue:
    """Mirrored at [low, high] = [0, size - 1] (align) or [-0.5, size - 0.5]."""
    low = 0.0 if align else -0.5
    span = float(size - 1) if align else float(size)
    if span == 0:
        return f.c(0.0)
    d = f("abs", f("sub", x, low))
    if vectorized:  # extra = |x - low| mod 2·span; min(extra, 2·span - extra) + low
        twice = 2 * span
        extra = f("sub", d, f("mul", f("trunc", f("div", d, twice)), twice))
        return f("add", f("minimum", extra, f("sub", twice, extra)), low)
    extra = f("fmod", d, span)  # reflect_coordinates: an even number of flips keeps extra
    flips = f("floor", f("div", d, span))
    even = f("eq", f("fmod", flips, 2.0), f.c(0.0))
    return f("add", f.b.where(even, extra, f("sub", span, extra)), low)


def _pad(f: _Coordinates, x: SSAValue, size: int, padding: int, align: bool, vectorized: bool) -> SSAValue:
    """compute_coordinates: the padding mode applied to pixel coordinate x."""
    if padding == BORDER:
        x = _clip(f, x, size, vectorized)
    elif padding == REFLECTION:
        x = _clip(f, _reflect(f, x, size, align, vectorized), size, vectorized)
    if not vectorized:  # safe_downgrade_to_int_range
        bad = f("logical_or", f("isnan", x), f("isinf", x))
        bad = f("logical_or", bad, f("logical_or", f("gt", x, f.c(2.0**31 - 2)), f("lt", x, f.c(-(2.0**31)))))
        x = f.b.where(bad, f.c(-100.0), x)
    return x


def _index(f: _Coordinates, x: SSAValue, size: int) -> tuple[SSAValue, SSAValue]:
    """An integral coordinate as an i64 index and whether it lies in [0, size): NaN and
    far-away values are moved to -2 first (both kernels read nothing there)."""
    b = f.b
    far = f("logical_or", f("isnan", x), f("logical_or", f("lt", x, f.c(-2.0)), f("gt", x, f.c(float(size + 1)))))
    i = b.convert(b.where(far, f.c(-2.0), x), "i64")
    inside = b.ew("logical_and", b.ew("ge", i, b.constant_like(i, 0)), b.ew("lt", i, b.constant_like(i, size)))
    return i, inside


def _cubic(f: _Coordinates, t: SSAValue, vectorized: bool) -> list[SSAValue]:
    """The cubic convolution's coefficients for taps -1, 0, 1, 2: the vectorized
    kernel's get_cubic_coefficients, or get_cubic_upsample_coefficients (whose last
    argument is (1 - t) + 1 rather than 2 - t)."""
    def far(x):  # ((A·x - 5A)·x + 8A)·x - 4A, for 1 < x < 2
        return f("sub", f("mul", f("add", f("mul", f("sub", f("mul", x, A), 5 * A), x), 8 * A), x), 4 * A)

    def near(x):  # ((A + 2)·x - (A + 3))·x·x + 1, for x <= 1
        return f("add", f("mul", f("mul", f("sub", f("mul", x, A + 2), A + 3), x), x), 1.0)

    last = f("sub", 2.0, t) if vectorized else f("add", f("sub", 1.0, t), 1.0)
    return [far(f("add", t, 1.0)), near(t), near(f("sub", 1.0, t)), far(last)]


@decomposes("aten::grid_sampler_2d", "aten::grid_sampler_3d")
def grid_sampler(op: AtenOp, b: PrimBuilder) -> SSAValue:
    n = 3 if op.overload_name == "aten::grid_sampler_3d" else 2
    x, grid = b.arg("input"), b.arg("grid")
    return _grid_sample(b, n, x, grid, b.arg("interpolation_mode"), b.arg("padding_mode"), bool(b.arg("align_corners")))


@decomposes("aten::cudnn_grid_sampler")
def cudnn_grid_sampler(op: AtenOp, b: PrimBuilder) -> SSAValue:
    # aten::grid_sampler's choice on CUDA (cond_cudnn_grid_sampler) for 4-d bilinear,
    # zero-padded sampling with align_corners: grid_sampler_2d with those arguments.
    return _grid_sample(b, 2, b.arg("self"), b.arg("grid"), BILINEAR, ZEROS, True)


def _grid_sample(b: PrimBuilder, n: int, x: SSAValue, grid: SSAValue, mode, padding, align: bool) -> SSAValue:
    t, g = tensor_of(x), tensor_of(grid)
    if not is_float(t.dtype) or g.dtype != t.dtype or t.rank != n + 2 or g.rank != n + 2:
        raise Decline("grid sampling of floats, input and grid of one dtype")
    if mode not in (BILINEAR, NEAREST, BICUBIC) or padding not in (ZEROS, BORDER, REFLECTION):
        raise Decline(f"grid sampling mode {mode}, padding {padding}")
    if mode == BICUBIC and n == 3:
        raise Decline("bicubic 3-d grid sampling (an error in eager)")
    sizes = list(t.dims[2:])[::-1]  # W, H(, D): the order of the grid's last dim
    if any(not isinstance(s, int) for s in sizes):
        raise Decline("grid sampling of an input of symbolic spatial size")
    out = b.out()
    dims = list(out.dims)
    if numel(dims) == 0 or any(sym(d) == 0 for d in dims):
        return b.full(dims, 0, out.dtype)
    if any(s == 0 for s in sizes):
        raise Decline("grid sampling of an empty input")
    compute = accumulator(t.dtype)
    # eager's f32/f64 2-d kernel is the vectorized one; its f16/bf16 2-d and its 3-d
    # kernels are the scalar ones
    vectorized = n == 2 and t.dtype in ("f32", "f64")
    xs = b.convert(x, compute)
    # the grid's coordinates, each [N, *out] broadcast over the channels
    axes = [0, *range(2, n + 2)]
    coords = []
    for k in range(n):
        start, limit = [0] * g.rank, list(g.dims)
        start[-1], limit[-1] = k, k + 1
        part = b.add(prim.SliceOp(b.convert(grid, compute), start, limit, [1] * g.rank))
        part = b.reshape(part, list(g.dims[:-1]))
        coords.append(b.add(prim.BroadcastInDimOp(part, dims, axes)))
    f = _Coordinates(b, coords[0])
    spatial = {k: n + 1 - k for k in range(n)}  # coordinate k (x, y, z) reads input dim 3/2(/...)

    def read(points: Sequence[SSAValue]) -> SSAValue:
        """x at integral coordinates `points` (f32/f64), 0 where outside."""
        at, inside = {}, None
        for k, p in enumerate(points):
            i, ok = _index(f, p, sizes[k])
            at[spatial[k]] = i
            inside = ok if inside is None else b.ew("logical_and", inside, ok)
        v = read_at(b, xs, at, dims)
        return b.where(inside, v, b.constant_like(v, 0.0))

    if mode == BICUBIC:
        result = _bicubic(f, coords, sizes, padding, align, vectorized, read)
    else:
        points = [_pad(f, _unnormalize(f, c, s, align, vectorized), s, padding, align, vectorized) for c, s in zip(coords, sizes)]
        if mode == NEAREST:
            result = read([f("round", p) for p in points])
        elif vectorized:
            result = _bilinear_2d(f, points, read)
        else:
            result = _multilinear(f, points, read)
    return b.convert(result, out.dtype)


def _bilinear_2d(f: _Coordinates, points: list[SSAValue], read) -> SSAValue:
    """The vectorized kernel: w = x - floor(x), e = 1 - w (n, s likewise for y);
    nw = s·e, ne = s·w, sw = n·e, se = n·w; ((nw_val·nw + ne_val·ne) + sw_val·sw) + se_val·se."""
    x, y = points
    x_w, y_n = f("floor", x), f("floor", y)
    w = f("sub", x, x_w)
    e = f("sub", 1.0, w)
    n = f("sub", y, y_n)
    s = f("sub", 1.0, n)
    x_e, y_s = f("add", x_w, 1.0), f("add", y_n, 1.0)
    total = None
    for (px, py), weight in (((x_w, y_n), f("mul", s, e)), ((x_e, y_n), f("mul", s, w)),
                             ((x_w, y_s), f("mul", n, e)), ((x_e, y_s), f("mul", n, w))):
        term = f("mul", read([px, py]), weight)
        total = term if total is None else f("add", total, term)
    return total


def _multilinear(f: _Coordinates, points: list[SSAValue], read) -> SSAValue:
    """The scalar kernels (grid_sampler_3d_cpu_impl, _grid_sampler_2d_cpu_fallback):
    corners nw, ne, sw, se (3-d: tnw, tne, tsw, tse, bnw, bne, bsw, bse; t/b: z, n/s: y,
    w/e: x), each weighted by the product of the distances to the opposite corner
    along x, y(, z) in that order, added where inside."""
    lows = [f("floor", p) for p in points]
    highs = [f("add", lo, 1.0) for lo in lows]
    total = None
    for corner_bits in itertools.product((0, 1), repeat=len(points)):
        bits = corner_bits[::-1]  # x, y(, z): x varies fastest
        corner = [(lows, highs)[c][k] for k, c in enumerate(bits)]
        weight = None
        for k, c in enumerate(bits):
            # the distance to the opposite corner: high - p for a low corner, p - low for a high one
            d = f("sub", highs[k], points[k]) if c == 0 else f("sub", points[k], lows[k])
            weight = d if weight is None else f("mul", weight, d)
        term = f("mul", read(corner), weight)
        total = term if total is None else f("add", total, term)
    return total


def _bicubic(f: _Coordinates, coords, sizes, padding: int, align: bool, vectorized: bool, read) -> SSAValue:
    """Unnormalized (no padding) x, y; taps floor(x) - 1 … + 2, each tap coordinate
    padded as compute_coordinates does (get_value_bounded); rows interpolated along x,
    then the four rows along y."""
    x, y = (_unnormalize(f, c, s, align, vectorized) for c, s in zip(coords, sizes))
    ix, iy = f("floor", x), f("floor", y)
    cx, cy = _cubic(f, f("sub", x, ix), vectorized), _cubic(f, f("sub", y, iy), vectorized)

    def tap(base: SSAValue, k: int, size: int) -> SSAValue:
        return _pad(f, f("add", base, float(k)), size, padding, align, vectorized)

    rows = []
    for j in range(4):
        py = tap(iy, j - 1, sizes[1])
        row = None
        for i in range(4):
            term = f("mul", cx[i], read([f("trunc", tap(ix, i - 1, sizes[0])), f("trunc", py)]))
            row = term if row is None else f("add", row, term)
        rows.append(row)
    total = None
    for j in range(4):
        term = f("mul", cy[j], rows[j])
        total = term if total is None else f("add", total, term)
    return total
