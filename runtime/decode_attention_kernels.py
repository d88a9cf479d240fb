"""The Triton kernels of runtime/decode_attention.py (which says what they compute).

This file is loaded as a module once per mode (runtime/decode_attention.py's
`_kernels`): `triton.jit` makes a compiled or an interpreted function depending on
TRITON_INTERPRET when it runs, so the interpreter's copy (tests on the CPU) is loaded
with it set. Reductions go through tl.reduce with the combine functions below, not
tl.sum / tl.max, which are jitted once, in the mode triton was imported in.
"""

import triton
import triton.language as tl

try:  # grid dependency control: codegen/triton_pdl.py says when PDL is on
    from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait
except ImportError:  # a Triton without it: PDL stays off
    gdc_launch_dependents = gdc_wait = None


@triton.jit
def _add(a, b):
    return a + b


@triton.jit
def _maximum(a, b):
    return tl.maximum(a, b)


@triton.jit
def _minimum(a, b):
    return tl.minimum(a, b)


@triton.jit
def partial(q, k, v, mask, part_o, part_ml,
             sq_b, sq_h, sq_m, sq_e, sk_b, sk_h, sk_s, sk_e, sv_b, sv_h, sv_s, sv_e,
             sm_b, sm_h, sm_m, sm_s,
             H, GROUP, M, S, E, chunk, SPLITS,
             SCALE: tl.constexpr, MASK: tl.constexpr, DOT_F32: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
             BLOCK_E: tl.constexpr, PDL: tl.constexpr = False):
    if PDL:  # launched while the previous kernel runs: wait for it first
        gdc_launch_dependents()
        gdc_wait()
    bh = tl.program_id(0)
    split = tl.program_id(1)
    b = bh // H
    h = bh % H
    hk = h // GROUP
    rm = tl.arange(0, BLOCK_M)
    re = tl.arange(0, BLOCK_E)
    row_ok = rm < M
    e_ok = re < E
    qt = tl.load(q + b * sq_b + h * sq_h + rm[:, None] * sq_m + re[None, :] * sq_e,
                 mask=row_ok[:, None] & e_ok[None, :], other=0)
    if DOT_F32:
        qt = qt.to(tl.float32)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.full([BLOCK_M], 0.0, tl.float32)
    acc = tl.full([BLOCK_M, BLOCK_E], 0.0, tl.float32)
    start = split * chunk
    end = tl.minimum(start + chunk, S)
    mask_rows = mask + b * sm_b + h * sm_h + rm[:, None] * sm_m  # this head's rows of the mask
    if MASK != 0:
        # Only the keys from the first to the last one the mask leaves (in any row) are
        # read: the rest add nothing (exp(-inf) is 0). A static cache's mask leaves the
        # positions written so far, so most splits of a long cache read no K or V.
        lo = end
        hi = start
        for n0 in range(start, end, BLOCK_N):
            rn = n0 + tl.arange(0, BLOCK_N)
            inside = row_ok[:, None] & (rn < end)[None, :]
            if MASK == 1:
                live = tl.load(mask_rows + rn[None, :] * sm_s, mask=inside, other=0) != 0
            else:
                live = tl.load(mask_rows + rn[None, :] * sm_s, mask=inside, other=float("-inf")).to(tl.float32) != float("-inf")
            live = live & inside
            first = tl.reduce(tl.reduce(tl.where(live, rn[None, :], end), 1, _minimum), 0, _minimum)
            last = tl.reduce(tl.reduce(tl.where(live, rn[None, :] + 1, start), 1, _maximum), 0, _maximum)
            lo = tl.minimum(lo, first)
            hi = tl.maximum(hi, last)
        start = start + (lo - start) // BLOCK_N * BLOCK_N  # blocks stay aligned
        end = hi
    for n0 in range(start, end, BLOCK_N):
        rn = n0 + tl.arange(0, BLOCK_N)
        n_ok = rn < end
        kt = tl.load(k + b * sk_b + hk * sk_h + rn[None, :] * sk_s + re[:, None] * sk_e,
                     mask=n_ok[None, :] & e_ok[:, None], other=0)
        if DOT_F32:
            s = tl.dot(qt, kt.to(tl.float32), input_precision="ieee", out_dtype=tl.float32) * SCALE
        else:
            s = tl.dot(qt, kt, out_dtype=tl.float32) * SCALE
        if MASK == 1:
            keep = tl.load(mask_rows + rn[None, :] * sm_s,
                           mask=row_ok[:, None] & n_ok[None, :], other=0)
            s = tl.where(keep != 0, s, float("-inf"))
        if MASK == 2:
            s += tl.load(mask_rows + rn[None, :] * sm_s,
                         mask=row_ok[:, None] & n_ok[None, :], other=0).to(tl.float32)
        s = tl.where(n_ok[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.reduce(s, 1, _maximum))
        # a row with no key yet stays at -inf: shift it by 0, not by -inf
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.exp(m_i - m_safe)
        p = tl.exp(s - m_safe[:, None])
        l_i = l_i * alpha + tl.reduce(p, 1, _add)
        vt = tl.load(v + b * sv_b + hk * sv_h + rn[:, None] * sv_s + re[None, :] * sv_e,
                     mask=n_ok[:, None] & e_ok[None, :], other=0)
        if DOT_F32:
            pv = tl.dot(p, vt.to(tl.float32), input_precision="ieee", out_dtype=tl.float32)
        else:
            pv = tl.dot(p.to(vt.dtype), vt, out_dtype=tl.float32)
        acc = acc * alpha[:, None] + pv
        m_i = m_new
    base = bh * SPLITS + split
    tl.store(part_o + (base * BLOCK_M + rm[:, None]) * BLOCK_E + re[None, :], acc, mask=row_ok[:, None])  # rows the combine reads
    tl.store(part_ml + (base * 2) * BLOCK_M + rm, m_i)
    tl.store(part_ml + (base * 2 + 1) * BLOCK_M + rm, l_i)


@triton.jit
def combine(part_o, part_ml, out, so_b, so_h, so_m, so_e, H, M, E, SPLITS,
             BLOCK_M: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_E: tl.constexpr, PDL: tl.constexpr = False):
    if PDL:
        gdc_launch_dependents()
        gdc_wait()
    bh = tl.program_id(0)
    row = tl.program_id(1)
    b = bh // H
    h = bh % H
    rs = tl.arange(0, BLOCK_S)
    re = tl.arange(0, BLOCK_E)
    s_ok = rs < SPLITS
    base = bh * SPLITS + rs
    m_s = tl.load(part_ml + (base * 2) * BLOCK_M + row, mask=s_ok, other=float("-inf"))
    l_s = tl.load(part_ml + (base * 2 + 1) * BLOCK_M + row, mask=s_ok, other=0.0)
    top = tl.reduce(m_s, 0, _maximum)
    weight = tl.exp(m_s - tl.where(top == float("-inf"), 0.0, top))
    total = tl.reduce(l_s * weight, 0, _add)
    o = tl.load(part_o + (base[:, None] * BLOCK_M + row) * BLOCK_E + re[None, :], mask=s_ok[:, None], other=0.0)
    o = tl.reduce(o * weight[:, None], 0, _add)
    # no key at all: 0, as eager gives it; a NaN (in q, or in an attended K or V) stays NaN
    o = tl.where(total == 0, 0.0, o / tl.where(total == 0, 1.0, total))
    tl.store(out + b * so_b + h * so_h + row * so_m + re * so_e, o.to(out.dtype.element_ty), mask=re < E)
