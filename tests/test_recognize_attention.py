"""The pass recognize-attention (passes/recognize_attention.py): attention written out
by hand, as AOTAutograd traces it to aten ops, becomes one strata::sdpa call; anything
else stays as written. Each function below is captured by torch.compile, imported, and
interpreted before and after the pass (strata.testing.capture), so every case checks
the values as well as the rewrite."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import strata
from strata.passes.recognize_attention import RecognizeAttentionPass
from strata.testing.capture import Capture
from tests.test_attention_pattern import (
    _qkv,
    broadcast_keys,
    causal_div,
    causal_mul_eq,
    diagonal_below,
    dropout_in_training,
    finite_fill,
    key_already_transposed,
    scale_first,
    softmax_in_f64,
    softmax_over_queries,
    tensor_mask,
    three_dims,
    unmasked_unscaled,
    weights_returned,
)


def _recognized(fn, *args, dynamic: bool = False, autocast: bool = False) -> tuple[int, list, list]:
    """How many strata::sdpa calls the pass leaves in the captured graphs of fn, and
    the graph's results before and after it (interpreted)."""
    torch._dynamo.reset()
    capture = Capture([RecognizeAttentionPass()])
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        capture.compile(fn, dynamic=dynamic)(*args)
    calls = sum(op.name == "aten.call" and op.overload.data == "strata::sdpa"
                for _, module in capture.graphs for op in module.walk())
    before, after = capture.results[-1]
    return calls, before, after


def _assert_same(before, after, tol=1e-5):
    for b, a in zip(before, after):
        assert a.dtype == b.dtype
        torch.testing.assert_close(a, b, atol=tol, rtol=tol)


def nanogpt_block(x):
    """nanoGPT's CausalSelfAttention without the projections: q, k, v split from one
    tensor and transposed to [B, H, T, E], a registered-buffer-style float mask."""
    B, T, C = x.shape
    q, k, v = x.split(C // 3, dim=2)
    q, k, v = (t.view(B, T, 2, -1).transpose(1, 2) for t in (q, k, v))
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
    att = att.masked_fill(torch.ones(T, T).tril().view(1, 1, T, T)[:, :, :T, :T] == 0, float("-inf"))
    return (F.softmax(att, dim=-1) @ v).transpose(1, 2).contiguous().view(B, T, -1)


def softmax_in_f32_of_bf16(q, k, v):
    """A HF-style eager attention: the softmax in f32, its result cast back."""
    q, k, v = (t.bfloat16() for t in (q, k, v))
    w = F.softmax(q @ k.transpose(-2, -1) * 0.125, dim=-1, dtype=torch.float32).to(q.dtype)
    return w @ v


REWRITTEN = [causal_div, causal_mul_eq, unmasked_unscaled, scale_first, key_already_transposed, broadcast_keys,
             softmax_in_f32_of_bf16]


@pytest.mark.parametrize("fn", REWRITTEN, ids=lambda f: f.__name__)
def test_written_out_attention_becomes_one_sdpa_call(fn):
    calls, before, after = _recognized(fn, *_qkv())
    assert calls == 1
    _assert_same(before, after, 1e-2 if before[0].dtype == torch.bfloat16 else 1e-5)


def test_nanogpt_attention_with_transposed_heads():
    calls, before, after = _recognized(nanogpt_block, torch.randn(2, 16, 12))
    assert calls == 1
    _assert_same(before, after)


LEFT_ALONE = [diagonal_below, finite_fill, weights_returned, softmax_over_queries, softmax_in_f64,
              dropout_in_training, three_dims]


@pytest.mark.parametrize("fn", LEFT_ALONE, ids=lambda f: f.__name__)
def test_other_computations_are_left_as_written(fn):
    torch.manual_seed(1)
    calls, _, _ = _recognized(fn, *_qkv())
    assert calls == 0


def test_a_mask_given_as_input_is_left_as_written():
    mask = torch.rand(16, 16) > 0.5
    assert _recognized(tensor_mask, *_qkv(), mask)[0] == 0


def test_symbolic_sizes():
    calls, before, after = _recognized(causal_mul_eq, *_qkv(L=8, S=8), dynamic=True)
    assert calls == 1
    _assert_same(before, after)


def test_a_symbolic_scale_is_left_as_written():
    # 1/sqrt of a symbolic head size: sdpa's scale must be a number fixed at compile time
    assert _recognized(causal_div, *_qkv(), dynamic=True)[0] == 0


def test_bf16_autocast_keeps_the_dtype():
    calls, before, after = _recognized(causal_div, *_qkv(), autocast=True)
    assert calls == 1 and after[0].dtype == before[0].dtype == torch.bfloat16
    torch.testing.assert_close(after[0].float(), before[0].float(), atol=2e-2, rtol=2e-2)


# ---------------------------------------------------------------- drawn programs
# Masks that are sdpa's is_causal, spelled as model code spells them, and near misses
# that are not (True where a position is masked).
CAUSAL_MASKS = {
    "not_tril_bool": lambda L, S: ~torch.ones(L, S, dtype=torch.bool).tril(),
    "tril_float_eq_0": lambda L, S: torch.tril(torch.ones(1, 1, L, S)) == 0,
    "triu_1": lambda L, S: torch.ones(L, S, dtype=torch.bool).triu(1),
    "arange_gt": lambda L, S: torch.arange(S)[None, :] > torch.arange(L)[:, None],
}
NOT_CAUSAL = {
    "tril_minus_1": lambda L, S: ~torch.ones(L, S, dtype=torch.bool).tril(-1),
    "triu_0": lambda L, S: torch.ones(L, S, dtype=torch.bool).triu(0) & (torch.arange(L)[:, None] > 0),
    "tril_upside_down": lambda L, S: torch.ones(L, S, dtype=torch.bool).tril().flip(0) == 0,
}


@settings(max_examples=40, deadline=None)
@given(
    L=st.integers(1, 12),
    S=st.integers(1, 12),
    e=st.sampled_from([4, 8]),
    mask=st.sampled_from([None, *CAUSAL_MASKS, *NOT_CAUSAL]),
    scaling=st.sampled_from(["none", "mul", "div", "rmul"]),
    dtype=st.sampled_from([torch.float32, torch.float64]),
    dropout=st.booleans(),
)
def test_drawn_attention_is_rewritten_exactly_when_it_is_sdpa(L, S, e, mask, scaling, dtype, dropout):
    """The pass rewrites a drawn program exactly when it is sdpa (no mask or a causal
    one, whatever its spelling) and gives the same values either way: about 60% of the
    drawn programs are rewritten, the rest are near misses left alone."""
    if mask in NOT_CAUSAL and L < 2:
        mask = None  # with one row every spelling agrees: nothing to tell apart
    s = 0.3

    def fn(q, k, v):
        att = q @ k.transpose(-2, -1)
        att = {"none": att, "mul": att * s, "div": att / s, "rmul": s * att}[scaling]
        if mask is not None:
            att = att.masked_fill({**CAUSAL_MASKS, **NOT_CAUSAL}[mask](L, S), float("-inf"))
        w = att.softmax(-1)
        if dropout:
            w = F.dropout(w, 0.1, training=False)
        return w @ v

    calls, before, after = _recognized(fn, *_qkv(L=L, S=S, e=e, dtype=dtype))
    assert calls == (0 if mask in NOT_CAUSAL else 1)
    torch.testing.assert_close(after[0], before[0], atol=1e-5, rtol=1e-5, equal_nan=True)


# ---------------------------------------------------------------- through strata.compile
def test_the_trace_shows_the_rewrite_and_strata_opt_repeats_it(tmp_path):
    q, k, v = _qkv()
    compiled = strata.compile(causal_div, options={"trace.enabled": True, "trace.dir": str(tmp_path)})
    with torch.no_grad():
        torch.testing.assert_close(compiled(q, k, v), causal_div(q, k, v), atol=1e-5, rtol=1e-5)
    graph = next(tmp_path.glob("graph_*"))
    assert "prim.sdpa" in (graph / "1_prim.mlir").read_text()
    traced = (graph / "0_aten.mlir").read_text()
    assert "aten._softmax" in traced and "strata::sdpa" not in traced
    done = subprocess.run([sys.executable, "-m", "strata.opt", str(graph / "0_aten.mlir"), "-p", "recognize-attention"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "strata::sdpa" in out and "aten._softmax" not in out and "aten.bmm" not in out


def test_the_option_takes_the_pass_out():
    assert "recognize-attention" in strata.list_options()["pipeline"]
    from strata.frontend.options import resolve

    assert "recognize-attention" not in resolve(None, {"attention_patterns": False})["pipeline"]
