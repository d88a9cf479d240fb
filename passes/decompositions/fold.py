"""col2im (nn.functional.fold) → gathers and a sum over the kernel's positions.

col2im adds each column (one kernel-sized patch of C channels per block position) back
into the image: pixel (h, w) receives, from every kernel position (ki, kj), the block
(bh, bw) with h = bh·sh - ph + ki·dh (and likewise w), when that block exists. So
instead of scattering, each output pixel gathers its kh·kw candidates, keeps those
whose block lies on the stride grid and inside [0, BH) × [0, BW), and sums them: one
fused kernel over [N, C, H, W, kh·kw], no write conflicts. f16/bf16 are summed in f32
(eager accumulates in the input's dtype: ours is the closer to the exact sum).
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from strata.dialects import prim
from strata.dialects.aten import AtenOp
from strata.dialects.prim_indexing import GatherOp
from strata.dialects.types import is_float
from strata.passes.decompositions.builder import Decline, PrimBuilder, accumulator, tensor_of
from strata.passes.decompositions.rules import decomposes


def _pairs(b: PrimBuilder, name: str) -> list[int]:
    v = [int(x) for x in b.arg(name)]
    if len(v) != 2:
        raise Decline(f"col2im's {name} of two values")
    return v


def _axis_taps(b: PrimBuilder, size: int, k: int, dilation: int, pad: int, stride: int, blocks: int):
    """For each (pixel, kernel position) along one axis, [size, k]: the block index
    (clamped) and whether that block exists."""
    grid = [size, k]
    pix = b.add(prim.BroadcastInDimOp(b.add(prim.IotaOp(size, 0, 1, "i64")), grid, [0]))
    tap = b.add(prim.BroadcastInDimOp(b.add(prim.IotaOp(k, 0, dilation, "i64")), grid, [1]))
    t = b.ew("sub", b.ew("add", pix, b.full(grid, pad, "i64")), tap)  # bh · stride
    on_grid = b.ew("eq", b.ew("remainder", t, b.full(grid, stride, "i64")), b.full(grid, 0, "i64"))
    block = b.ew("floordiv", t, b.full(grid, stride, "i64"))
    inside = b.ew("logical_and", b.ew("ge", t, b.full(grid, 0, "i64")), b.ew("lt", block, b.full(grid, blocks, "i64")))
    valid = b.ew("logical_and", on_grid, inside)
    clamped = b.ew("minimum", b.ew("maximum", block, b.full(grid, 0, "i64")), b.full(grid, blocks - 1, "i64"))
    return clamped, valid


@decomposes("aten::col2im")
def col2im(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x = b.arg("self")
    t = tensor_of(x)
    if not is_float(t.dtype) or t.rank not in (2, 3) or not all(isinstance(d, int) for d in t.dims):
        raise Decline("col2im of a floating [N, C·kh·kw, L] or [C·kh·kw, L] input of static sizes")
    (h, w), (kh, kw) = _pairs(b, "output_size"), _pairs(b, "kernel_size")
    (dh, dw), (ph, pw), (sh, sw) = _pairs(b, "dilation"), _pairs(b, "padding"), _pairs(b, "stride")
    bh = (h + 2 * ph - (dh * (kh - 1) + 1)) // sh + 1
    bw = (w + 2 * pw - (dw * (kw - 1) + 1)) // sw + 1
    batched = t.rank == 3
    n = t.dims[0] if batched else 1
    ckk, blocks = t.dims[-2], t.dims[-1]
    if bh <= 0 or bw <= 0 or blocks != bh * bw or ckk % (kh * kw) or blocks == 0 or h * w == 0:
        raise Decline("col2im whose sizes do not describe a non-empty block grid")
    c = ckk // (kh * kw)
    if c == 0 or n == 0:
        raise Decline("col2im of no channels or no batch")
    hb, hv = _axis_taps(b, h, kh, dh, ph, sh, bh)  # [H, kh]
    wb, wv = _axis_taps(b, w, kw, dw, pw, sw, bw)  # [W, kw]
    grid = [h, w, kh, kw]

    def spread(v: SSAValue, dims: list[int]) -> SSAValue:
        return b.add(prim.BroadcastInDimOp(v, grid, dims))

    # the flat position of x[ki, kj, bh, bw] within one channel's kh·kw·BH·BW values
    ki = spread(b.add(prim.IotaOp(kh, 0, 1, "i64")), [2])
    kj = spread(b.add(prim.IotaOp(kw, 0, 1, "i64")), [3])
    k = b.ew("add", b.ew("mul", ki, b.full(grid, kw, "i64")), kj)
    block = b.ew("add", b.ew("mul", spread(hb, [0, 2]), b.full(grid, bw, "i64")), spread(wb, [1, 3]))
    flat = b.ew("add", b.ew("mul", k, b.full(grid, blocks, "i64")), block)
    valid = b.ew("logical_and", spread(hv, [0, 2]), spread(wv, [1, 3]))
    per = kh * kw * blocks
    taps = h * w * kh * kw
    v = b.reshape(b.convert(x, accumulator(t.dtype)), [n, c, per])
    index = b.add(prim.BroadcastInDimOp(b.reshape(flat, [taps]), [n, c, taps], [2]))
    picked = b.reshape(b.add(GatherOp(v, index, 2)), [n, c, h, w, kh * kw])
    keep = b.add(prim.BroadcastInDimOp(b.reshape(valid, [h, w, kh * kw]), [n, c, h, w, kh * kw], [2, 3, 4]))
    zero = b.full([n, c, h, w, kh * kw], 0.0, tensor_of(picked).dtype)
    y = b.reduce("sum", b.where(keep, picked, zero), [4])
    return b.convert(b.reshape(y, b.out().dims), b.out().dtype)
