"""2-d and 3-d pooling → the window's taps, each a prim.gather (indexing.read_at) of the input.

A kh × kw window is unrolled: tap (i, j) of output (oh, ow) reads input row
oh·stride - pad + i·dilation and column likewise, where that lies inside the input.
The taps are combined in row-major order, as eager's CPU kernels walk a window, so
that results agree to the bit:
- max_pool2d_with_indices: a tap replaces the running maximum where it is greater or
  NaN (eager's `val > max || isnan(val)`); the index starts at the window's first
  tap inside the input and is the flat position (row · W + column) in the plane;
- avg_pool2d: the sum of the taps inside the input, divided by eager's divisor
  (the window clipped to the padded input, or to the input without
  count_include_pad, or divisor_override); a window wholly in the padding gives 0.
The backward of max pooling adds each gradient at its index: a scatter-add.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import torch
from xdsl.ir import SSAValue

from strata.dialects import prim
from strata.dialects.aten import AtenOp
from strata.dialects.prim_indexing import ScatterOp
from strata.dialects.types import is_float, numel, sym
from strata.passes.decompositions.builder import Decline, PrimBuilder, accumulator, tensor_of
from strata.passes.decompositions.indexing import positions, read_at
from strata.passes.decompositions.rules import decomposes

MAX_TAPS = 64  # larger windows stay eager: each tap is a gather of its own


def _tuple(v, n: int, default: Sequence[int] | None = None) -> list[int]:
    v = list(v) if v is not None and list(v) else default
    if v is None:
        raise Decline("pooling without a kernel size")
    v = v * n if len(v) == 1 else v
    if len(v) != n or any(not isinstance(k, int) for k in v):
        raise Decline(f"pooling parameters {v}")
    return v


def _params(b: PrimBuilder, n: int, dilation: bool, symbolic: bool = False):
    """x, its type, and kernel size, stride, padding, dilation for `n` spatial dims;
    `symbolic`: the rule handles spatial sizes that are expressions."""
    x = b.arg("self")
    t = tensor_of(x)
    if t.rank not in (n + 1, n + 2):
        raise Decline(f"{n}-d pooling of a rank-{t.rank} tensor")
    k = _tuple(b.arg("kernel_size"), n)
    s = _tuple(b.arg("stride"), n, k)
    p = _tuple(b.arg("padding"), n, [0] * n)
    d = _tuple(b.arg("dilation"), n, [1] * n) if dilation else [1] * n
    if math.prod(k) > MAX_TAPS:
        raise Decline(f"a pooling window of {math.prod(k)} taps")
    if any(sym(m) == 0 for m in t.dims):
        raise Decline("pooling of an empty input")
    if not symbolic and any(not isinstance(m, int) for m in t.dims[-n:]):
        raise Decline("pooling of a symbolic input")
    return x, t, k, s, p, d


def _taps(b: PrimBuilder, dims, k, s, p, d) -> list[tuple[tuple[int, ...], list[SSAValue]]]:
    """Each tap of the window, in row-major order: its offsets and, per spatial dim,
    the i64 tensor (of `dims`) of the input coordinate it reads."""
    n = len(k)
    base = [positions(b, dims, len(dims) - n + a) for a in range(n)]
    out = []
    for offsets in itertools.product(*(range(m) for m in k)):
        coords = [
            b.ew("add", b.ew("mul", o, b.constant_like(o, s[a])), b.constant_like(o, offsets[a] * d[a] - p[a]))
            for a, o in enumerate(base)
        ]
        out.append((offsets, coords))
    return out


def _inside(b: PrimBuilder, v: SSAValue, n) -> SSAValue:
    return b.ew("logical_and", b.ew("ge", v, b.constant_like(v, 0)), b.ew("lt", v, b.size_like(v, n)))


def _all_inside(b: PrimBuilder, coords: list[SSAValue], sizes) -> SSAValue:
    inside = None
    for c, m in zip(coords, sizes):
        ok = _inside(b, c, m)
        inside = ok if inside is None else b.ew("logical_and", inside, ok)
    return inside


def _flat(b: PrimBuilder, coords: list[SSAValue], sizes) -> SSAValue:
    """The position of coords in the flattened spatial dims (row-major)."""
    flat = coords[0]
    for c, m in zip(coords[1:], sizes[1:]):
        flat = b.ew("add", b.ew("mul", flat, b.size_like(flat, m)), c)
    return flat


@decomposes("aten::max_pool2d_with_indices", "aten::max_pool3d_with_indices")
def max_pool_with_indices(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    n = 3 if op.overload_name.startswith("aten::max_pool3d") else 2
    # Symbolic sizes enter only as the bounds each tap is checked against and the
    # plane's width in the flat index: both are scalars of the size expression.
    x, t, k, s, p, d = _params(b, n, dilation=True, symbolic=True)
    if t.dtype in ("i1", "u8"):
        raise Decline(f"max pooling of {t.dtype}")
    out = b.out()
    dims = list(out.dims)
    if any(sym(m) == 0 for m in dims):
        return [b.full(dims, 0, t.dtype), b.full(dims, 0, "i64")]
    sizes = list(t.dims[-n:])
    spatial = list(range(t.rank - n, t.rank))
    taps = _taps(b, dims, k, s, p, d)
    # The first tap inside the input, per dim (eager's start: `while (h < 0) h += d`).
    first = list(taps[-1][1])
    for offsets, coords in reversed(taps):
        for a in range(n):
            if all(o == 0 for i, o in enumerate(offsets) if i != a):
                c = coords[a]
                first[a] = b.where(b.ew("ge", c, b.constant_like(c, 0)), c, first[a])
    index = _flat(b, first, sizes)
    lowest = float("-inf") if is_float(t.dtype) else torch.iinfo(t.torch_dtype).min
    best = b.full(dims, lowest, t.dtype)
    for _, coords in taps:
        inside = _all_inside(b, coords, sizes)
        v = read_at(b, x, dict(zip(spatial, coords)), dims)
        better = b.ew("gt", v, best)
        if is_float(t.dtype):
            better = b.ew("logical_or", better, b.ew("isnan", v))
        take = b.ew("logical_and", inside, better)
        best = b.where(take, v, best)
        index = b.where(take, _flat(b, coords, sizes), index)
    return [best, index]


@decomposes("aten::avg_pool1d", "aten::avg_pool2d", "aten::avg_pool3d")
def avg_pool(op: AtenOp, b: PrimBuilder) -> SSAValue:
    n = int(op.overload_name[-2])  # avg_pool1d is avg_pool2d over one row, as in eager
    x, t, k, s, p, d = _params(b, n, dilation=False)
    if not is_float(t.dtype) and t.dtype != "i64":
        raise Decline(f"average pooling of {t.dtype}")  # i64: sums, divided truncating
    out = b.out()
    dims = list(out.dims)
    if any(sym(m) == 0 for m in dims):
        return b.full(dims, 0, t.dtype)
    sizes = list(t.dims[-n:])
    spatial = list(range(t.rank - n, t.rank))
    acc = accumulator(t.dtype)
    xa = b.convert(x, acc)
    total = b.full(dims, 0, acc)
    for _, coords in _taps(b, dims, k, s, p, d):
        inside = _all_inside(b, coords, sizes)
        v = read_at(b, xa, dict(zip(spatial, coords)), dims)
        total = b.ew("add", total, b.where(inside, v, b.constant_like(v, 0)))
    divisor, empty = _divisor(b, dims, spatial, sizes, k, s, p)
    mean = b.ew("div", total, b.convert(divisor, acc))
    result = b.where(empty, b.constant_like(mean, 0), mean)
    return b.convert(result, t.dtype)


def _divisor(b: PrimBuilder, dims, spatial, sizes, k, s, p) -> tuple[SSAValue, SSAValue]:
    """eager's divisor of each output window (i64, of `dims`), from the window's bounds
    (count_include_pad and divisor_override as the op says), and where the window is
    wholly in the padding."""
    n = len(sizes)
    spans, empties = [], []
    for a, m in enumerate(sizes):
        o = b.add(prim.IotaOp(dims[spatial[a]], 0, 1, "i64"))
        lo = b.ew("sub", b.ew("mul", o, b.constant_like(o, s[a])), b.constant_like(o, p[a]))
        hi = b.ew("minimum", b.ew("add", lo, b.constant_like(o, k[a])), b.constant_like(o, m + p[a]))
        padded = b.ew("sub", hi, lo)
        lo_c = b.ew("maximum", lo, b.constant_like(o, 0))
        hi_c = b.ew("minimum", hi, b.constant_like(o, m))
        spans.append((padded, b.ew("sub", hi_c, lo_c)))
        empties.append(b.ew("ge", lo_c, hi_c))
    override = b.arg("divisor_override")
    include = b.arg("count_include_pad")
    include = True if include is None else bool(include)

    def along(v: SSAValue, a: int) -> SSAValue:
        return b.add(prim.BroadcastInDimOp(v, dims, [spatial[a]]))

    if override:
        divisor = b.full(dims, override, "i64")
    else:
        which = 0 if include else 1
        divisor = along(spans[0][which], 0)
        for a in range(1, n):
            divisor = b.ew("mul", divisor, along(spans[a][which], a))
    empty = along(empties[0], 0)
    for a in range(1, n):
        empty = b.ew("logical_or", empty, along(empties[a], a))
    return divisor, empty


@decomposes("aten::avg_pool2d_backward", "aten::avg_pool3d_backward")
def avg_pool_backward(op: AtenOp, b: PrimBuilder) -> SSAValue:
    """Each input element sums grad / divisor over the windows that hold it, in eager's
    order (windows in row-major order): window o holds input i when
    o·stride - pad <= i < o·stride - pad + kernel, so along each dim at most
    ceil(kernel / stride) windows, counted down from floor((i + pad) / stride)."""
    n = 3 if op.overload_name == "aten::avg_pool3d_backward" else 2
    x, t, k, s, p, _ = _params(b, n, dilation=False)
    grad = b.arg("grad_output")
    g = tensor_of(grad)
    if not is_float(t.dtype) or g.dtype != t.dtype:
        raise Decline("average pooling backward of integers")
    dims, gdims = list(t.dims), list(g.dims)
    if any(sym(m) == 0 for m in gdims):
        return b.full(dims, 0, t.dtype)
    sizes = list(t.dims[-n:])
    spatial = list(range(t.rank - n, t.rank))
    acc = accumulator(t.dtype)
    divisor, _ = _divisor(b, gdims, spatial, sizes, k, s, p)
    share = b.ew("div", b.convert(grad, acc), b.convert(divisor, acc))  # windows wholly in padding are never read
    counts = [-(-k[a] // s[a]) for a in range(n)]
    if math.prod(counts) > MAX_TAPS:
        raise Decline("too many windows hold each input element")
    last = []
    for a in range(n):
        i = positions(b, dims, spatial[a])
        last.append(b.ew("floordiv", b.ew("add", i, b.constant_like(i, p[a])), b.constant_like(i, s[a])))
    total = b.full(dims, 0, acc)
    for back in itertools.product(*(reversed(range(c)) for c in counts)):
        coords, inside = [], None
        for a in range(n):
            o = b.ew("sub", last[a], b.constant_like(last[a], back[a]))
            i = positions(b, dims, spatial[a])
            start = b.ew("sub", b.ew("mul", o, b.constant_like(o, s[a])), b.constant_like(o, p[a]))
            ok = b.ew("logical_and", _inside(b, o, gdims[spatial[a]]), b.ew("lt", i, b.ew("add", start, b.constant_like(o, k[a]))))
            inside = ok if inside is None else b.ew("logical_and", inside, ok)
            coords.append(o)
        v = read_at(b, share, dict(zip(spatial, coords)), dims)
        total = b.ew("add", total, b.where(inside, v, b.constant_like(v, 0)))
    return b.convert(total, t.dtype)


@decomposes("aten::max_pool2d_with_indices_backward")
def max_pool2d_with_indices_backward(op: AtenOp, b: PrimBuilder) -> SSAValue:
    """grad_input[plane][indices[o]] += grad_output[o]: a scatter-add over each plane."""
    grad, indices = b.arg("grad_output"), b.arg("indices")
    out = b.out()
    gt = tensor_of(grad)
    if out.rank not in (3, 4) or tensor_of(indices).dtype != "i64":
        raise Decline("max pooling backward of this rank or index dtype")
    lead = list(out.dims[:-2])
    plane_in = numel(out.dims[-2:])
    plane_out = numel(gt.dims[-2:])
    zeros = b.full(lead + [plane_in], 0, out.dtype)
    if sym(plane_out) == 0 or any(sym(n) == 0 for n in lead):
        return b.full(out.dims, 0, out.dtype)
    src = b.reshape(b.convert(grad, out.dtype), lead + [plane_out])
    at = b.reshape(indices, lead + [plane_out])
    return b.reshape(b.add(ScatterOp(zeros, at, src, len(lead), "sum")), out.dims)


@decomposes("aten::adaptive_avg_pool1d", "aten::_adaptive_avg_pool2d", "aten::_adaptive_avg_pool3d")
def adaptive_avg_pool(op: AtenOp, b: PrimBuilder) -> SSAValue:
    """Output o of a dim averages input [floor(o·n/m), ceil((o+1)·n/m)). Where every
    size divides (global pooling, 2x downsampling) the windows tile the input: a
    reshape and a mean. Otherwise the windows are unrolled as taps (as avg_pool2d),
    summed in eager's order and divided by each window's size."""
    x = b.arg("self")
    t, out = tensor_of(x), b.out()
    spatial = int(op.overload_name[-2])
    if not is_float(t.dtype) or any(not isinstance(n, int) for n in (*t.dims[-spatial:], *out.dims[-spatial:])):
        raise Decline("adaptive pooling of integers or of symbolic sizes")
    if any(sym(n) == 0 for n in out.dims):
        return b.full(out.dims, 0, out.dtype)
    if any(sym(n) == 0 for n in t.dims):
        raise Decline("adaptive pooling of an empty input is an error in eager")
    sizes = list(zip(t.dims[-spatial:], out.dims[-spatial:]))
    acc = accumulator(t.dtype)
    lead = list(t.dims[:-spatial])
    xa = b.convert(x, acc)
    if all(n % m == 0 for n, m in sizes):
        tiled = b.reshape(xa, lead + [v for n, m in sizes for v in (m, n // m)])
        dims = [len(lead) + 2 * i + 1 for i in range(spatial)]
        total = b.reduce("sum", tiled, dims)
        mean = b.ew("div", total, b.constant_like(total, numel(n // m for n, m in sizes)))
        return b.convert(mean, out.dtype)
    windows = [max(-(-(o + 1) * n // m) - (o * n // m) for o in range(m)) for n, m in sizes]
    if math.prod(windows) > MAX_TAPS:
        raise Decline(f"adaptive pooling windows of {math.prod(windows)} taps")
    dims = list(out.dims)
    axes = list(range(t.rank - spatial, t.rank))
    bounds = []
    for axis, (n, m) in zip(axes, sizes):
        o = positions(b, dims, axis)
        start = b.ew("floordiv", b.ew("mul", o, b.constant_like(o, n)), b.constant_like(o, m))
        end = b.ew("floordiv", b.ew("add", b.ew("mul", o, b.constant_like(o, n)), b.constant_like(o, n + m - 1)), b.constant_like(o, m))
        bounds.append((start, end))
    total = b.full(dims, 0.0, acc)
    for offsets in itertools.product(*(range(w) for w in windows)):
        coords, inside = [], None
        for (start, end), off in zip(bounds, offsets):
            c = b.ew("add", start, b.constant_like(start, off))
            ok = b.ew("lt", c, end)
            inside = ok if inside is None else b.ew("logical_and", inside, ok)
            coords.append(c)
        v = read_at(b, xa, dict(zip(axes, coords)), dims)
        total = b.ew("add", total, b.where(inside, v, b.constant_like(v, 0.0)))
    # eager divides by each window extent in turn (sum / kd / kh / kw)
    for start, end in bounds:
        total = b.ew("div", total, b.convert(b.ew("sub", end, start), acc))
    return b.convert(total, out.dtype)


@decomposes("aten::adaptive_max_pool2d", "aten::adaptive_max_pool3d")
def adaptive_max_pool(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    """Output (oh, ow) is the maximum of input rows [floor(oh·H/OH), ceil((oh+1)·H/OH))
    and columns likewise (and depths, in 3-d), its taps walked in row-major order as
    eager's CPU kernel walks them: a tap replaces the running maximum (from -inf) where
    it is greater or NaN, and the index (flat in the plane or volume) starts at the
    window's first element."""
    n = 3 if op.overload_name == "aten::adaptive_max_pool3d" else 2
    x = b.arg("self")
    t, out = tensor_of(x), b.out()
    if not is_float(t.dtype) or t.rank not in (n + 1, n + 2):
        raise Decline(f"adaptive max pooling of integers (an error in eager) or of rank other than {n + 1}, {n + 2}")
    if any(not isinstance(m, int) for m in (*t.dims[-n:], *out.dims[-n:])):
        raise Decline("adaptive max pooling of symbolic sizes")
    dims = list(out.dims)
    if any(sym(m) == 0 for m in dims):
        return [b.full(dims, 0, t.dtype), b.full(dims, 0, "i64")]
    if any(sym(m) == 0 for m in t.dims):
        raise Decline("adaptive pooling of an empty input is an error in eager")
    sizes = list(zip(t.dims[-n:], out.dims[-n:]))
    windows = [max(-(-(o + 1) * i // m) - (o * i // m) for o in range(m)) for i, m in sizes]
    if math.prod(windows) > MAX_TAPS:
        raise Decline(f"adaptive pooling windows of {math.prod(windows)} taps")
    axes = list(range(t.rank - n, t.rank))
    bounds = []
    for axis, (i, m) in zip(axes, sizes):
        o = positions(b, dims, axis)
        start = b.ew("floordiv", b.ew("mul", o, b.constant_like(o, i)), b.constant_like(o, m))
        end = b.ew("floordiv", b.ew("add", b.ew("mul", o, b.constant_like(o, i)), b.constant_like(o, i + m - 1)), b.constant_like(o, m))
        bounds.append((start, end))
    extents = list(t.dims[-n:])
    index = _flat(b, [start for start, _ in bounds], extents)
    best = b.full(dims, float("-inf"), t.dtype)
    for offsets in itertools.product(*(range(w) for w in windows)):
        coords, inside = [], None
        for (start, end), off in zip(bounds, offsets):
            c = start if off == 0 else b.ew("add", start, b.constant_like(start, off))
            ok = b.ew("lt", c, end)
            inside = ok if inside is None else b.ew("logical_and", inside, ok)
            coords.append(c)
        v = read_at(b, x, dict(zip(axes, coords)), dims)
        take = b.ew("logical_and", inside, b.ew("logical_or", b.ew("gt", v, best), b.ew("isnan", v)))
        best = b.where(take, v, best)
        index = b.where(take, _flat(b, coords, extents), index)
    return [best, index]


@decomposes("aten::_adaptive_avg_pool2d_backward")
def adaptive_avg_pool_backward(op: AtenOp, b: PrimBuilder) -> SSAValue:
    """Where the windows tile the input (every size divides), each input element gets
    its window's gradient divided by the window's extents, as eager divides
    (grad / kh / kw): a broadcast over the tiles. Overlapping windows stay eager."""
    grad, x = b.arg("grad_output"), b.arg("self")
    t, g = tensor_of(x), tensor_of(grad)
    if not is_float(t.dtype) or g.dtype != t.dtype or t.rank not in (3, 4):
        raise Decline("adaptive pooling backward of this input")
    sizes = list(zip(t.dims[-2:], g.dims[-2:]))
    if any(not isinstance(v, int) or v == 0 for pair in sizes for v in pair) or any(n % m for n, m in sizes):
        raise Decline("adaptive pooling backward of windows that overlap, or of empty or symbolic sizes")
    lead = list(t.dims[:-2])
    acc = accumulator(t.dtype)
    share = b.convert(grad, acc)
    for n, m in sizes:
        share = b.ew("div", share, b.constant_like(share, n // m))
    (h, oh), (w, ow) = sizes
    tiles = b.add(prim.BroadcastInDimOp(share, lead + [oh, h // oh, ow, w // ow], [*range(len(lead)), len(lead), len(lead) + 2]))
    return b.convert(b.reshape(tiles, t.dims), t.dtype)
