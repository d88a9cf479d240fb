"""Attention as one library call (prim.sdpa) in inference graphs, two in training
graphs (prim.sdpa_forward and prim.sdpa_backward, torch's fused kernels both ways);
decomposed where torch would run its math form, dropout draws random numbers, or the
mask needs a gradient."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F

import strata
from tests.test_end_to_end import TARGET_IDS, TARGETS


def attention(q, k, v, mask):
    # Two calls, one with an additive mask, one causal, and math around them.
    return F.scaled_dot_product_attention(q.sin(), k, v, attn_mask=mask) * 2 + F.scaled_dot_product_attention(
        q, k, v, is_causal=True, scale=0.3
    )


def _inputs(device, dtype=torch.float32, L=16, S=16):
    torch.manual_seed(0)
    q = torch.randn(2, 3, L, 8, device=device, dtype=dtype)
    k, v = (torch.randn(2, 3, S, 8, device=device, dtype=dtype) for _ in range(2))
    return q, k, v, torch.randn(L, S, device=device, dtype=dtype)


@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
def test_inference_is_one_library_call_per_attention(target, tmp_path):
    device, codegen = target
    args = _inputs(device)
    compiled = strata.compile(attention, options={"codegen": codegen, "trace.enabled": True, "trace.dir": str(tmp_path)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no eager fallback
        with torch.no_grad():
            got = compiled(*args)
    torch.testing.assert_close(got, attention(*args), atol=1e-5, rtol=1e-5)
    program = next(tmp_path.glob("graph_*/2_kernel.mlir")).read_text()
    assert program.count("prim.sdpa") == 2 and "prim.bmm" not in program


@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
def test_a_mask_torch_would_run_as_math_is_compiled_as_ops(target, tmp_path):
    # transformers' padding mask under tracing: [b, 1, L, S] expanded from [b, 1, 1, S],
    # strides (0, S, 1, 0). With a last dim that is not contiguous torch's fused
    # kernels are out, so the attention is compiled as its math form, matmuls and a
    # softmax kernel that takes the mask's add with it.
    device, codegen = target
    q, k, v, _ = _inputs(device)
    keep = torch.rand(2, 1, 16, 1, device=device) > 0.3  # some query rows wholly masked
    mask = keep.expand(2, 1, 16, 16)  # strides (16, 16, 1, 0)

    def f(q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    compiled = strata.compile(f, options={"codegen": codegen, "trace.enabled": True, "trace.dir": str(tmp_path)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no eager fallback
        with torch.no_grad():
            got = compiled(q, k, v, mask)
    torch.testing.assert_close(got, f(q, k, v, mask), atol=1e-5, rtol=1e-5)
    program = next(tmp_path.glob("graph_*/2_kernel.mlir")).read_text()
    assert "prim.sdpa" not in program and program.count("prim.bmm") == 2


def _heads_attention(x, w_in, w_out, mask):
    # A transformer layer's attention: heads split off a projection, sdpa, the heads
    # merged back by a transpose and a reshape into the output projection (a library
    # call), and, through `side`, the sdpa result read by a kernel as well.
    b, t, d = x.shape
    q, k, v = (x @ w_in).view(b, t, 3, 2, d // 2).permute(2, 0, 3, 1, 4).unbind(0)
    o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    merged = o.transpose(1, 2).reshape(b * t, d) @ w_out
    o2 = F.scaled_dot_product_attention(k, q, v, attn_mask=mask)
    side = o2.sin()
    return merged, side


def test_sdpa_layout_as_torch_makes_it(monkeypatch):
    # torch's fused CUDA kernels return (batch, heads, seq, dim) laid out as
    # (batch, seq, heads, dim): the result is then viewed, not copied, on its way into
    # the output projection, and made contiguous only where a kernel reads it. Here
    # sdpa is made to return that layout on the CPU too.
    real = F.scaled_dot_product_attention

    def bshd(*args, **kwargs):
        out = real(*args, **kwargs)
        return out.transpose(1, 2).contiguous().transpose(1, 2)

    monkeypatch.setattr(F, "scaled_dot_product_attention", bshd)
    torch.manual_seed(0)
    x, w_in, w_out = torch.randn(2, 5, 8), torch.randn(8, 24), torch.randn(8, 8)
    mask = torch.rand(2, 1, 5, 5) > 0.2
    compiled = strata.compile(_heads_attention)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no eager fallback
        with torch.no_grad():
            got = compiled(x, w_in, w_out, mask)
    want = _heads_attention(x, w_in, w_out, mask)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, atol=1e-5, rtol=1e-5)
    # One copy a call, for the kernel that reads o2 (the transposes of `bshd` are
    # traced into the graph: its kernels). o reaches the projection through a transpose
    # and a reshape, both views: made contiguous first, they were two more copies.
    with torch.no_grad(), torch.profiler.profile() as prof:
        compiled(x, w_in, w_out, mask)
    assert sum(e.count for e in prof.key_averages() if e.key == "aten::clone") == 1


def test_a_boolean_mask_is_made_additive_once_for_all_calls(tmp_path):
    # torch converts a boolean mask on each sdpa call; the graph converts it once,
    # in the kernel that builds it, for every call that shares it.
    torch.manual_seed(0)
    x, w_in, w_out = torch.randn(2, 5, 8), torch.randn(8, 24), torch.randn(8, 8)
    keep = torch.rand(2, 1, 5, 5)

    def f(x, w_in, w_out, keep):
        return _heads_attention(x, w_in, w_out, keep > 0.2)

    compiled = strata.compile(f, options={"trace.enabled": True, "trace.dir": str(tmp_path)})
    with torch.no_grad():
        got = compiled(x, w_in, w_out, keep)
    for g, w in zip(got, f(x, w_in, w_out, keep)):
        torch.testing.assert_close(g, w, atol=1e-5, rtol=1e-5)
    aten = next(tmp_path.glob("graph_*/0_aten.mlir")).read_text()
    assert aten.count("= aten.logical_not") == 1 and aten.count('overload = "strata::sdpa"') == 2


def _train(fn, args, needs_grad, options=None):
    """fn's output and the gradients of the args that need them, compiled and eager."""
    results = []
    for f in (strata.compile(fn, options=options), fn):
        for i in needs_grad:
            args[i].grad = None
        out = f(*args)
        out.square().sum().backward()
        results.append((out.detach(), [args[i].grad.clone() for i in needs_grad]))
    return results


@pytest.mark.parametrize("mask_kind", ["additive", "boolean"])
@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
def test_training_runs_the_fused_kernels_both_ways(target, mask_kind, tmp_path):
    device, codegen = target
    q, k, v, mask = _inputs(device)
    if mask_kind == "boolean":  # True: attend (GPT-2's causal mask in transformers)
        mask = torch.ones(16, 16, dtype=torch.bool, device=device).tril()
    for t in (q, k, v):
        t.requires_grad_(True)
    options = {"codegen": codegen, "trace.enabled": True, "trace.dir": str(tmp_path)}
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no eager fallback
        (got, got_grads), (want, want_grads) = _train(attention, [q, k, v, mask], (0, 1, 2), options)
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    for g, w in zip(got_grads, want_grads):
        torch.testing.assert_close(g, w, atol=1e-5, rtol=1e-5)
    programs = [p.read_text() for p in sorted(tmp_path.glob("graph_*/2_kernel.mlir"))]
    assert sum(p.count("prim.sdpa_forward") for p in programs) == 2
    assert sum(p.count("prim.sdpa_backward") for p in programs) == 2
    assert not any("prim.bmm" in p for p in programs)  # no scores matrix, either way


def test_training_under_autocast_casts_the_mask_as_sdpa_does(tmp_path):
    # Under autocast sdpa casts q, k, v and a float mask to the autocast dtype
    # (transformers builds its mask in f32); strata's ops are not autocast ops, so the
    # rewrite casts them, and the fused kernels run in bf16 both ways.
    torch.manual_seed(0)
    x = torch.randn(2, 16, 32, requires_grad=True)
    w = torch.randn(32, 96, requires_grad=True)
    mask = torch.randn(16, 16)

    def f(x, w, mask):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            q, k, v = (x @ w).view(2, 16, 3, 4, 8).permute(2, 0, 3, 1, 4)
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    options = {"trace.enabled": True, "trace.dir": str(tmp_path)}
    (got, got_grads), (want, want_grads) = _train(f, [x, w, mask], (0, 1), options)
    assert got.dtype == want.dtype == torch.bfloat16
    torch.testing.assert_close(got, want)
    for g, w_ in zip(got_grads, want_grads):
        torch.testing.assert_close(g, w_)
    programs = "".join(p.read_text() for p in tmp_path.glob("graph_*/1_prim.mlir"))
    assert "prim.sdpa_forward" in programs and "prim.sdpa_backward" in programs


def test_a_mask_that_needs_a_gradient_trains_through_the_math_form():
    q, k, v, mask = _inputs("cpu")
    for t in (q, k, v, mask):
        t.requires_grad_(True)
    (got, got_grads), (want, want_grads) = _train(attention, [q, k, v, mask], (0, 1, 2, 3))
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    for g, w in zip(got_grads, want_grads):
        torch.testing.assert_close(g, w, atol=1e-5, rtol=1e-5)


def test_dropout_is_left_to_torch():
    from strata.frontend.attention.attention import keep_attention_whole

    def f(q, k, v):
        return F.scaled_dot_product_attention(q, k, v, dropout_p=0.5)

    gm = torch.fx.symbolic_trace(f)
    assert keep_attention_whole(gm) == 0


def test_dynamic_sequence_lengths():
    compiled = strata.compile(attention, dynamic=True)
    with torch.no_grad():
        for L in (5, 9, 17):
            args = _inputs("cpu", L=L, S=L)
            torch.testing.assert_close(compiled(*args), attention(*args), atol=1e-5, rtol=1e-5)


def test_dynamic_sizes_in_training_use_the_fused_kernels():
    # One graph for every sequence length (symbolic sizes, the kernel chosen at their
    # hints); an empty batch or sequence is computed without the kernels, which take
    # none (the CPU's divides by the length).
    compiled = strata.compile(attention, dynamic=True)
    for B, L in ((2, 5), (3, 9), (2, 17), (0, 6), (2, 0)):
        args = list(_inputs("cpu", L=L, S=L))
        args = [torch.randn(B, *a.shape[1:]) if a.dim() == 4 else a for a in args]
        for t in args[:3]:
            t.requires_grad_(True)
        got = compiled(*args)
        got.square().sum().backward()
        got_grads = [t.grad for t in args[:3]]
        want = attention(*[t.detach().requires_grad_(t.requires_grad) for t in args])
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
        if B and L:
            ref = [t.detach().clone().requires_grad_() for t in args[:3]]
            attention(*ref, args[3]).square().sum().backward()
            for g, r in zip(got_grads, ref):
                torch.testing.assert_close(g, r.grad, atol=1e-5, rtol=1e-5)


def test_symbolic_head_size_with_a_mask_torch_runs_as_math():
    # dynamic=True makes the head size symbolic too: the math form's scale is then
    # 1/sqrt(E) of a symbol, which an eager step evaluates as a float (it was an int,
    # or no value at all).
    def f(q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)

    compiled = strata.compile(f, dynamic=True)
    for L, E in ((5, 8), (7, 16)):
        q = torch.randn(2, 3, L, E, requires_grad=True)
        mask = (torch.rand(2, 1, L, 1) > 0.3).expand(2, 1, L, L)
        got = compiled(q, q, q, mask)
        got.sum().backward()
        grad, q.grad = q.grad, None
        want = f(q, q, q, mask)
        want.sum().backward()
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(grad, q.grad, atol=1e-5, rtol=1e-5)


def _qkv_block(x, w_in):
    # GPT-2's attention: q, k, v split off one projection; their gradients are merged
    # back by a transpose, a reshape and a cat (a library call) in the backward graph.
    b, t, d = x.shape
    q, k, v = (x @ w_in).split(d, dim=2)
    q, k, v = (y.view(b, t, 2, d // 2).transpose(1, 2) for y in (q, k, v))
    return F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, t, d)


def test_gradients_laid_out_as_the_kernel_makes_them_feed_the_cat(monkeypatch):
    # torch's fused CUDA backward kernels return dq, dk, dv laid out as their q, k, v
    # ((batch, seq, heads, dim) in memory); torch.cat takes them as they are, so they
    # are neither made contiguous nor copied by the reshape before it. Here the CPU's
    # kernel is made to return that layout too.
    import strata.dialects.prim_attention_training as training

    real = training.fused_backward

    def bshd(*args, **kwargs):
        return tuple(g.transpose(1, 2).contiguous().transpose(1, 2) for g in real(*args, **kwargs))

    monkeypatch.setattr(training, "fused_backward", bshd)
    torch.manual_seed(0)
    x, w_in = torch.randn(2, 5, 8, requires_grad=True), torch.randn(8, 24, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no eager fallback
        (got, got_grads), (want, want_grads) = _train(_qkv_block, [x, w_in], (0, 1))
    torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    # The gradients are ~10 and sums of products of ~10: both runs are measured against
    # float64, and strata's error may not exceed twice eager's.
    exact = [t.detach().double().requires_grad_(True) for t in (x, w_in)]
    _qkv_block(*exact).square().sum().backward()
    for g, w, e in zip(got_grads, want_grads, exact):
        assert (g.double() - e.grad).abs().max() <= 2 * (w.double() - e.grad).abs().max()
