"""Attention written out by hand (softmax(q @ kᵀ · s [causal mask]) @ v) recognized as
one sdpa call on Dynamo's graph, as training graphs are (frontend/attention/
attention_pattern.py), and everything else left as written; and attention written out
in models compiled by strata, inference (the pass recognize-attention,
tests/test_recognize_attention.py) and training alike."""

from __future__ import annotations

import math
import operator
import warnings

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import strata
from strata.frontend.attention.attention_pattern import recognize_attention
from strata.testing.models import TransformerBlock
from tests.test_end_to_end import TARGET_IDS, TARGETS


def _rewrites(fn, *args, **compile_kwargs) -> tuple[int, torch.Tensor]:
    """How many attentions the recognizer rewrites in Dynamo's graph of fn, and what
    the rewritten graph computes."""
    counts = []

    def backend(gm, example_inputs):
        counts.append(recognize_attention(gm))
        return gm

    torch._dynamo.reset()
    with torch.no_grad():
        out = torch.compile(fn, backend=backend, fullgraph=True, **compile_kwargs)(*args)
    return sum(counts), out


def _qkv(b=2, h=3, L=16, S=16, e=8, dtype=torch.float32):
    torch.manual_seed(0)
    q = torch.randn(b, h, L, e, dtype=dtype)
    k, v = torch.randn(b, h, S, e, dtype=dtype), torch.randn(b, h, S, e, dtype=dtype)
    return q, k, v


def causal_div(q, k, v):
    att = (q @ k.transpose(-2, -1)) / math.sqrt(q.size(-1))
    mask = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool).tril()
    return att.masked_fill(~mask, float("-inf")).softmax(dim=-1) @ v


def causal_mul_eq(q, k, v):
    att = torch.matmul(q, k.transpose(2, 3)) * 0.25
    mask = torch.tril(torch.ones(1, 1, q.size(-2), k.size(-2)))
    att = torch.masked_fill(att, mask == 0, float("-inf"))
    return torch.matmul(F.dropout(F.softmax(att, dim=-1), 0.1, training=False), v)


def unmasked_unscaled(q, k, v):
    return (q @ k.transpose(-2, -1)).softmax(-1) @ v


def scale_first(q, k, v):
    return torch.softmax(0.5 * (q @ k.transpose(-1, -2)), -1) @ v


def key_already_transposed(q, k, v):
    kt = k.permute(0, 1, 3, 2)
    return torch.softmax(q @ kt * 0.5, dim=3) @ v


REWRITTEN = [causal_div, causal_mul_eq, unmasked_unscaled, scale_first, key_already_transposed]


@pytest.mark.parametrize("fn", REWRITTEN, ids=lambda f: f.__name__)
def test_written_out_attention_becomes_one_sdpa_call(fn):
    q, k, v = _qkv()
    count, got = _rewrites(fn, q, k, v)
    assert count == 1
    torch.testing.assert_close(got, fn(q, k, v), atol=1e-6, rtol=1e-5)


def diagonal_below(q, k, v):  # row 0 wholly masked: eager's softmax gives NaN there
    att = q @ k.transpose(-2, -1)
    mask = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool).tril(-1)
    return att.masked_fill(~mask, float("-inf")).softmax(dim=-1) @ v


def tensor_mask(q, k, v, mask):  # any mask given as input: rows may be wholly masked
    return (q @ k.transpose(-2, -1)).masked_fill(mask, float("-inf")).softmax(-1) @ v


def finite_fill(q, k, v):
    att = q @ k.transpose(-2, -1)
    mask = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool).tril()
    return att.masked_fill(~mask, -1e4).softmax(dim=-1) @ v


def weights_returned(q, k, v):
    w = (q @ k.transpose(-2, -1)).softmax(-1)
    return w @ v, w


def softmax_over_queries(q, k, v):
    return (q @ k.transpose(-2, -1)).softmax(-2) @ v


def softmax_in_f64(q, k, v):
    return (q @ k.transpose(-2, -1)).softmax(-1, dtype=torch.float64).float() @ v


def dropout_in_training(q, k, v):
    return F.dropout((q @ k.transpose(-2, -1)).softmax(-1), 0.1, training=True) @ v


def three_dims(q, k, v):
    q, k, v = (x.flatten(0, 1) for x in (q, k, v))
    return (q @ k.transpose(-2, -1)).softmax(-1) @ v


def broadcast_keys(q, k, v):
    return (q @ k[:1].transpose(-2, -1)).softmax(-1) @ v[:1]


LEFT_ALONE = [diagonal_below, finite_fill, weights_returned, softmax_over_queries, softmax_in_f64,
              dropout_in_training, three_dims, broadcast_keys]


@pytest.mark.parametrize("fn", LEFT_ALONE, ids=lambda f: f.__name__)
def test_other_computations_are_left_as_written(fn):
    q, k, v = _qkv()
    torch.manual_seed(1)
    count, _ = _rewrites(fn, q, k, v)
    assert count == 0


def test_a_mask_given_as_input_is_left_as_written():
    q, k, v = _qkv()
    mask = torch.rand(16, 16) > 0.5
    assert _rewrites(tensor_mask, q, k, v, mask)[0] == 0


@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
def test_gpt_block_runs_attention_as_one_library_call(target, tmp_path):
    device, codegen = target
    torch.manual_seed(0)
    block = TransformerBlock(48, 4).eval().to(device)
    x = torch.randn(2, 12, 48, device=device)
    compiled = strata.compile(block, options={"codegen": codegen, "trace.enabled": True, "trace.dir": str(tmp_path)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no eager fallback
        with torch.no_grad():
            got = compiled(x)
            want = block(x)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    program = next(tmp_path.glob("graph_*/2_kernel.mlir")).read_text()
    assert program.count("prim.sdpa") == 1 and "prim.bmm" not in program


def test_the_option_turns_it_off(tmp_path):
    torch.manual_seed(0)
    block = TransformerBlock(48, 4).eval()
    x = torch.randn(2, 12, 48)
    options = {"attention_patterns": False, "trace.enabled": True, "trace.dir": str(tmp_path)}
    with torch.no_grad():
        torch.testing.assert_close(strata.compile(block, options=options)(x), block(x), atol=1e-5, rtol=1e-5)
    program = next(tmp_path.glob("graph_*/2_kernel.mlir")).read_text()
    assert "prim.sdpa" not in program and "prim.bmm" in program


def test_gpt_block_trains_with_eager_gradients(tmp_path):
    # recognized on Dynamo's graph, so that forward and backward are the fused kernels
    # (a head size of 16: torch's fused kernels take multiples of 8)
    torch.manual_seed(0)
    block = TransformerBlock(64, 4)
    x = torch.randn(2, 12, 64, requires_grad=True)
    twin = TransformerBlock(64, 4)
    twin.load_state_dict(block.state_dict())
    x2 = x.detach().clone().requires_grad_()
    strata.compile(block, options={"trace.enabled": True, "trace.dir": str(tmp_path)})(x).square().sum().backward()
    twin(x2).square().sum().backward()
    programs = [p.read_text() for p in tmp_path.glob("graph_*/1_prim.mlir")]
    assert sum("prim.sdpa_forward" in p for p in programs) == 1 and sum("prim.sdpa_backward" in p for p in programs) == 1
    torch.testing.assert_close(x.grad, x2.grad, atol=1e-5, rtol=1e-4)
    for (name, p), p2 in zip(block.named_parameters(), twin.parameters()):
        torch.testing.assert_close(p.grad, p2.grad, atol=1e-5, rtol=1e-4, msg=name)


def test_dynamic_sequence_lengths():
    q, k, v = _qkv(L=8, S=8)
    assert _rewrites(causal_mul_eq, q, k, v, dynamic=True)[0] == 1  # the mask's sizes symbolic
    compiled = strata.compile(causal_mul_eq, dynamic=True)
    with torch.no_grad():
        for L, S in ((5, 5), (12, 7), (33, 40)):
            q, k, v = _qkv(L=L, S=S)
            torch.testing.assert_close(compiled(q, k, v), causal_mul_eq(q, k, v), atol=1e-5, rtol=1e-5)


def test_a_symbolic_scale_is_left_as_written():
    # sqrt of a symbolic head size: sdpa's scale must be a number fixed at compile time
    q, k, v = _qkv()
    assert _rewrites(causal_div, q, k, v, dynamic=True)[0] == 0


def test_bf16_autocast_keeps_the_dtype():
    q, k, v = _qkv()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        count, got = _rewrites(causal_div, q, k, v)
        want = causal_div(q, k, v)
    assert count == 1 and got.dtype == want.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), want.float(), atol=2e-2, rtol=2e-2)


@settings(max_examples=20, deadline=None)
@given(
    L=st.integers(1, 24),
    S=st.integers(1, 24),
    e=st.sampled_from([4, 8, 16]),
    causal=st.booleans(),
    scale=st.floats(0.05, 2.0),
    dtype=st.sampled_from([torch.float32, torch.float64]),
)
def test_recognized_attention_matches_the_written_out_form(L, S, e, causal, scale, dtype):
    q, k, v = _qkv(L=L, S=S, e=e, dtype=dtype)

    def fn(q, k, v):
        att = (q @ k.transpose(-2, -1)) * scale
        if causal:
            att = att.masked_fill(~torch.ones(L, S, dtype=torch.bool).tril(), float("-inf"))
        return att.softmax(-1) @ v

    count, got = _rewrites(fn, q, k, v)
    assert count == 1
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    torch.testing.assert_close(got, fn(q, k, v), atol=tol, rtol=tol)


def test_operators_recorded_as_methods_are_recognized():
    # torch 2.11's Dynamo records `mask == 0` as the method __eq__, 2.13's as operator.eq
    from strata.frontend.attention.attention_pattern import _op

    g = torch.fx.Graph()
    x = g.placeholder("x")
    assert _op(g.call_method("__eq__", (x, 0))) == ("eq", {"input": x, "other": 0})
    assert _op(g.call_function(operator.eq, (x, 0))) == ("eq", {"input": x, "other": 0})
    assert _op(g.call_method("__matmul__", (x, x)))[0] == "matmul"
    assert _op(g.call_method("softmax", (x,), {"dim": -1})) == ("softmax", {"input": x, "dim": -1, "dtype": None})
    assert _op(g.call_function(torch.softmax, (x, -1, torch.float64)))[1]["dtype"] == torch.float64
    assert _op(g.call_function(F.softmax, (x, -1, 3, torch.float64)))[1]["dtype"] == torch.float64
