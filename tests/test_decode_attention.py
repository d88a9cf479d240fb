"""Split-key decode attention (runtime/decode_attention.py), in Triton's interpreter,
against eager's SDPA over repeated heads: grouped heads, rows up to the limit, key
counts off the block size, head sizes off a power of two, boolean and additive masks,
fully masked rows, strided operands (a cache's slice), one split and many; and which
graph ops take it (runtime/decode_attention_choice.py)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from strata.codegen.triton_gpu import _interpreting
from strata.dialects.context import parse_module
from strata.dialects.prim_attention import ScaledDotProductAttentionOp
from strata.runtime import decode_attention_choice
from strata.runtime.decode_attention import BLOCK_N, applies, decode_attention

TOLERANCE = {torch.float32: dict(rtol=1e-5, atol=1e-5), torch.bfloat16: dict(rtol=1.6e-2, atol=1e-2),
             torch.float16: dict(rtol=2e-3, atol=2e-3)}


def _eager(q, k, v, mask, scale=None):
    g = q.shape[1] // k.shape[1]
    k, v = k.repeat_interleave(g, 1), v.repeat_interleave(g, 1)
    return F.scaled_dot_product_attention(q.float(), k.float(), v.float(), attn_mask=mask, scale=scale)


def _run(q, k, v, mask=None, scale=None):
    with _interpreting():
        return decode_attention(q, k, v, mask, scale, interpret=True)


SHAPES = [
    (1, 4, 1, 4, 300, 64),     # one kv head for four query heads' folded rows; keys in 4 splits
    (2, 8, 2, 1, 37, 40),      # grouped heads read through h // G; keys and head off the blocks
    (1, 2, 2, 64, 129, 16),    # the most rows a program holds
    (3, 6, 6, 2, 70, 32),      # enough heads for the (interpreted) GPU: one split each
]


# Every shape in f32; the 16-bit dtypes on two shapes: interpreted, every dtype computes
# in f32 (DOT_F32), so they differ only in their loads and the result's rounding.
@pytest.mark.parametrize("dtype,b,h,hkv,m,s,e", [
    *[(torch.float32, *shape) for shape in SHAPES],
    (torch.bfloat16, *SHAPES[0]),
    (torch.float16, *SHAPES[1]),
])
def test_matches_eager_with_a_boolean_mask(dtype, b, h, hkv, m, s, e):
    g = torch.Generator().manual_seed(b * 1000 + s)
    q, k, v = (torch.randn(*shape, generator=g).to(dtype) for shape in ((b, h, m, e), (b, hkv, s, e), (b, hkv, s, e)))
    mask = torch.rand(1, 1, m, s, generator=g) > 0.3
    got = _run(q, k, v, mask)
    assert got is not None and got.dtype == dtype and got.shape == (b, h, m, e)
    torch.testing.assert_close(got.float(), _eager(q.float(), k.float(), v.float(), mask), **TOLERANCE[dtype])


def test_additive_per_head_mask_no_mask_and_a_scale():
    g = torch.Generator().manual_seed(1)
    q, k, v = torch.randn(2, 4, 3, 32, generator=g), torch.randn(2, 2, 90, 32, generator=g), torch.randn(2, 2, 90, 32, generator=g)
    additive = torch.randn(2, 4, 3, 90, generator=g)
    additive[..., 5:9] = float("-inf")
    torch.testing.assert_close(_run(q, k, v, additive), _eager(q, k, v, additive), **TOLERANCE[torch.float32])
    torch.testing.assert_close(_run(q, k, v, None, 0.3), _eager(q, k, v, None, 0.3), **TOLERANCE[torch.float32])


def test_a_row_with_every_key_masked_is_zero_as_in_eager():
    q, k, v = torch.randn(1, 2, 2, 16), torch.randn(1, 1, 200, 16), torch.randn(1, 1, 200, 16)
    mask = torch.ones(1, 1, 2, 200, dtype=torch.bool)
    mask[0, 0, 1] = False  # the second row sees no key, in any split
    got = _run(q, k, v, mask)
    torch.testing.assert_close(got, _eager(q, k, v, mask), **TOLERANCE[torch.float32])
    assert torch.equal(got[:, :, 1], torch.zeros_like(got[:, :, 1]))


@pytest.mark.parametrize("additive", [False, True])
@pytest.mark.parametrize("ranges", [
    [(0, 1), (0, 1)],          # a cache's first position only
    [(0, 63), (0, 64)],        # the written prefix ends at, and just before, a block
    [(0, 65), (0, 200)],       # rows of different lengths: their union is read
    [(100, 300), (250, 500)],  # sliding windows: keys before the first live one too
    [(0, 700), (640, 641)],    # every key, and one in the last split
    [(0, 0), (0, 0)],          # none
])
def test_only_the_keys_a_mask_leaves_are_read(ranges, additive):
    """A static cache: the mask leaves each row a range of positions (with holes). K
    and V outside the span of every row's range are NaN, as unwritten memory may be:
    read, they would reach the result through p·v (0 · NaN), so a finite result equal
    to eager's over zeros shows that the kernel skips them (eight splits of 128 keys)."""
    g = torch.Generator().manual_seed(len(ranges) + ranges[0][1])
    q, k, v = torch.randn(1, 2, 2, 32, generator=g), torch.randn(1, 1, 700, 32, generator=g), torch.randn(1, 1, 700, 32, generator=g)
    keep = torch.zeros(1, 1, 2, 700, dtype=torch.bool)
    for row, (a, b) in enumerate(ranges):
        keep[0, 0, row, a:b] = True
    keep[..., 40::7] = False  # holes: masked keys inside the span stay masked
    outside = torch.ones(700, dtype=torch.bool)
    first = min(a for a, _ in ranges)
    outside[first - first % BLOCK_N:max(b for _, b in ranges)] = False  # blocks are read whole from the first on
    clean_k, clean_v = k.clone(), v.clone()
    k[0, 0, outside], v[0, 0, outside] = float("nan"), float("nan")
    clean_k[0, 0, outside], clean_v[0, 0, outside] = 0.0, 0.0
    mask = torch.zeros(keep.shape).masked_fill(~keep, float("-inf")) + torch.rand(keep.shape, generator=g) if additive else keep
    got = _run(q, k, v, mask)
    want = _eager(q, clean_k, clean_v, mask)
    want = torch.where(keep.any(-1, keepdim=True).expand_as(want), want, 0.0)  # a row with no key left is 0
    assert not got.isnan().any()
    torch.testing.assert_close(got, want, **TOLERANCE[torch.float32])


@pytest.mark.parametrize("where", ["q", "k", "v"])
def test_a_nan_in_an_attended_input_gives_nan_as_in_eager(where):
    """A NaN in a query row, or in a key or value every row attends, is NaN in the
    result where eager's is; the other rows match eager's (a split's output is read
    only where its sum is not 0, and the sum of a NaN row is NaN, not 0)."""
    g = torch.Generator().manual_seed(3)
    q, k, v = torch.randn(1, 2, 3, 16, generator=g), torch.randn(1, 1, 300, 16, generator=g), torch.randn(1, 1, 300, 16, generator=g)
    if where == "q":
        q[0, 1, 2, 5] = float("nan")
    else:
        (k if where == "k" else v)[0, 0, 150, 3] = float("nan")
    got, want = _run(q, k, v), _eager(q, k, v, None)
    assert torch.equal(got.isnan(), want.isnan()) and want.isnan().any()
    torch.testing.assert_close(got.nan_to_num(), want.nan_to_num(), **TOLERANCE[torch.float32])


def test_strided_operands_a_slice_of_a_cache():
    cache_k, cache_v = torch.randn(1, 2, 256, 64), torch.randn(1, 2, 256, 64)
    q = torch.randn(1, 2, 8, 64).transpose(1, 2)  # [1, 8, 2, 64], not contiguous
    k, v = cache_k[:, :, :100], cache_v[:, :, :100]
    assert not k.is_contiguous() and not q.is_contiguous()
    torch.testing.assert_close(_run(q, k, v), _eager(q, k, v, None), **TOLERANCE[torch.float32])


def test_the_result_in_sequence_major_layout():
    """Asked for the layout a kernel reads it in ([B, M, H, E] in memory), it writes it so."""
    q, k, v = torch.randn(1, 4, 3, 16), torch.randn(1, 2, 40, 16), torch.randn(1, 2, 40, 16)
    with _interpreting():
        got = decode_attention(q, k, v, None, None, interpret=True, sequence_major=True)
    assert got.transpose(1, 2).is_contiguous() and not got.is_contiguous()
    torch.testing.assert_close(got, _eager(q, k, v, None), **TOLERANCE[torch.float32])


def test_no_key_at_all_is_zero():
    q, k, v = torch.randn(1, 2, 1, 16), torch.randn(1, 2, 0, 16), torch.randn(1, 2, 0, 16)
    assert torch.equal(_run(q, k, v), torch.zeros(1, 2, 1, 16))


@pytest.mark.parametrize("case,why", [
    ((torch.randn(1, 2, 65, 16), torch.randn(1, 2, 9, 16), torch.randn(1, 2, 9, 16), None), "65 query rows"),
    ((torch.randn(1, 3, 1, 16), torch.randn(1, 2, 9, 16), torch.randn(1, 2, 9, 16), None), "batch or heads"),
    ((torch.randn(1, 2, 1, 16), torch.randn(1, 2, 9, 16), torch.randn(1, 2, 9, 16), torch.zeros(1, 1, 1, 9, dtype=torch.int32)), "mask"),
    ((torch.randn(1, 2, 1, 16), torch.randn(1, 2, 9, 16).double(), torch.randn(1, 2, 9, 16), None), "dtypes"),
])
def test_calls_it_does_not_take_are_left_to_torch(case, why):
    assert applies(*case) == why
    assert decode_attention(*case) is None


def _sdpa_op(rows: int, causal: bool = False) -> ScaledDotProductAttentionOp:
    t = lambda n: f"!strata.tensor<[1, 4, {n}, 64], bf16>"  # noqa: E731
    module = parse_module(
        f"func.func @graph(%q: {t(rows)}, %k: {t(512)}, %v: {t(512)}) -> {t(rows)} {{\n"
        f"  %o = prim.sdpa %q, %k, %v {{is_causal = {str(causal).lower()}}} : ({t(rows)}, {t(512)}, {t(512)}) -> {t(rows)}\n"
        f"  func.return %o : {t(rows)}\n}}")
    return next(op for op in module.walk() if isinstance(op, ScaledDotProductAttentionOp))


def test_a_gpu_graphs_attention_of_few_rows_takes_it(monkeypatch):
    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    assert decode_attention_choice.decode_attention_takes(_sdpa_op(4), cuda)
    assert decode_attention_choice.decode_attention_takes(_sdpa_op(64), cuda)
    assert not decode_attention_choice.decode_attention_takes(_sdpa_op(65), cuda)  # a prefill: torch's kernels
    assert not decode_attention_choice.decode_attention_takes(_sdpa_op(4, causal=True), cuda)
    assert not decode_attention_choice.decode_attention_takes(_sdpa_op(4), cpu)
    monkeypatch.setenv(decode_attention_choice.ENV_VAR, "0")
    assert not decode_attention_choice.decode_attention_takes(_sdpa_op(4), cuda)


def test_the_graph_step_calls_it_and_falls_back_for_tensors_it_does_not_take(monkeypatch):
    """The library call the runtime builds for a GPU graph's decode attention runs the
    split-key kernel (here counted), and torch's SDPA for a call the kernel refuses."""
    from strata.runtime import decode_attention as module, library_calls

    calls = []
    real = module.decode_attention

    def counted(q, k, v, mask=None, scale=None, sequence_major=False):
        calls.append(q.shape)
        with _interpreting():
            return real(q, k, v, mask, scale, interpret=True, sequence_major=sequence_major)

    monkeypatch.setattr(module, "decode_attention", counted)
    call = library_calls.static_library_call(_sdpa_op(4), torch.contiguous_format, False, torch.device("cuda"))
    q, k, v = torch.randn(1, 4, 4, 64), torch.randn(1, 4, 512, 64), torch.randn(1, 4, 512, 64)
    torch.testing.assert_close(call(q, k, v), _eager(q, k, v, None), **TOLERANCE[torch.float32])
    assert calls == [(1, 4, 4, 64)]
    wide = torch.randn(1, 4, 80, 64)  # more rows than it takes: torch's SDPA answers
    torch.testing.assert_close(call(wide, k, v), _eager(wide, k, v, None), **TOLERANCE[torch.float32])
    assert library_calls.static_library_call(_sdpa_op(4), torch.contiguous_format, False, torch.device("cpu")) is not None


def test_each_dtype_has_its_own_gpu_launchers():
    """A launcher keys compiled kernels by alignment and options only: a bf16 call's
    combine kernel must never take an f32 call's output (which it wrote as bf16)."""
    from strata.runtime import decode_attention as module

    bf16, f32 = module._kernels(False, torch.bfloat16), module._kernels(False, torch.float32)
    assert all(a is not b for a, b in zip(bf16, f32))
    assert module._kernels(False, torch.bfloat16) is bf16
