"""Random ops: philox in kernels, seeds per call, fallback_random, dropout's mask.

- The reference (dialects/philox.py) is Triton's own generator, bit for bit.
- Compiled random ops follow torch.manual_seed, differ from call to call and from op
  to op, and have the right statistics; uniforms are the reference's bits through both
  code generators ("triton" runs in Triton's interpreter on CPU tensors).
- fallback_random runs them as eager's kernels: eager's bits.
- The dropout mask of the forward is the one the backward uses.
- A property: the prim op's reference, the kernel interpreter after fuse and each code
  generator's kernel agree (bit for bit for uniforms) on generated shapes and seeds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

import strata
from strata.dialects import philox
from strata.dialects.context import parse_module
from strata.dialects.prim_random import SEED_BOUND
from strata.frontend.compile_graph import run_pipeline
from strata.runtime.interpreters import interpret, run_program
from strata.testing import profiles  # noqa: F401  (loads the hypothesis profile)
from strata.testing.checks import kernel_compiler

CODEGENS = ("llvm", "triton")
N = 100_000


def compiled(fn, codegen: str, **options):
    return strata.compile(fn, options={"codegen": codegen, **options})


def no_fallbacks(fn, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an eager fallback is a failure here
        return fn(*args)


def drawn_seeds(manual_seed: int, count: int) -> torch.Tensor:
    """The seeds a compiled graph with `count` random ops draws after manual_seed."""
    torch.manual_seed(manual_seed)
    return torch.randint(SEED_BOUND, (count,), dtype=torch.int64)


def reference_uniform(seed: torch.Tensor, shape, offset: int = 0) -> torch.Tensor:
    n = 1
    for d in shape:
        n *= d
    words = philox.philox_words(seed, philox.linear_counters(n, offset))
    return philox.uniform_from_word(philox.as_int32(words[0])).reshape(shape)


# ---------------------------------------------------------------- the generator itself
TRITONS_GENERATOR = """
import sys, torch, triton, triton.language as tl

@triton.jit
def draw(w0, w1, u, n, seed, base, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    counter = i.to(tl.int64) + base
    a, b, _, _ = tl.randint4x(seed, counter)
    tl.store(w0 + i, a.to(tl.int32, bitcast=True))
    tl.store(w1 + i, b.to(tl.int32, bitcast=True))
    tl.store(u + i, tl.rand(seed, counter))
    tl.store(n + i, tl.randn(seed, counter))

block, seed, base = 64, int(sys.argv[2]), int(sys.argv[3])
outs = [torch.empty(block, dtype=torch.int32), torch.empty(block, dtype=torch.int32), torch.empty(block), torch.empty(block)]
draw[(1,)](*outs, seed, base, BLOCK=block)
torch.save(outs, sys.argv[1])
"""


def test_reference_is_tritons_generator(tmp_path):
    """Words, uniforms and normals of tl.randint4x / tl.rand / tl.randn (in Triton's
    interpreter, in a process of its own: triton.language's generator is compiled or
    interpreted from the moment triton is imported), with a 64-bit seed and counters
    that cross 2**32."""
    pytest.importorskip("triton")
    block, seed, base = 64, 0x7EDCBA9876543210, 2**32 - 7
    out = tmp_path / "draws.pt"
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    subprocess.run([sys.executable, "-c", TRITONS_GENERATOR, str(out), str(seed), str(base)], env=env, check=True, timeout=300)
    w0, w1, u, n = torch.load(out)
    words = [philox.as_int32(w) for w in philox.philox_words(torch.tensor(seed), philox.linear_counters(block, base))]
    assert torch.equal(words[0], w0) and torch.equal(words[1], w1)
    assert torch.equal(philox.uniform_from_word(words[0]), u)
    torch.testing.assert_close(philox.normal_from_words(words[0], words[1]), n, rtol=1e-6, atol=1e-6)


def test_uniforms_stay_below_one():
    extremes = torch.tensor([2**31 - 1, -(2**31), 0, -1], dtype=torch.int32)
    u = philox.uniform_from_word(extremes)
    assert (u < 1).all() and (u >= 0).all()


# ---------------------------------------------------------------- compiled random ops
@pytest.mark.parametrize("codegen", CODEGENS)
def test_uniform_is_the_reference_bit_for_bit(codegen):
    f = compiled(lambda x: torch.rand_like(x) + x, codegen)
    x = torch.zeros(37, 29)
    got = no_fallbacks(lambda: (torch.manual_seed(5), f(x))[1])
    seed = drawn_seeds(5, 1)[0]
    assert torch.equal(got, reference_uniform(seed, (37, 29)))


@pytest.mark.parametrize("codegen", CODEGENS)
def test_reproducible_under_manual_seed_and_fresh_per_call(codegen):
    f = compiled(lambda x: (torch.rand_like(x), torch.randn_like(x), torch.rand_like(x)), codegen)
    x = torch.empty(300)
    torch.manual_seed(0)
    a = no_fallbacks(f, x)
    b = f(x)  # the next call draws new seeds
    torch.manual_seed(0)
    c = f(x)
    for first, again in zip(a, c):
        assert torch.equal(first, again)
    for first, second in zip(a, b):
        assert not torch.equal(first, second)
    assert not torch.equal(a[0], a[2])  # two ops of one graph: two seeds


def _close_to(value: float, want: float, sigma: float, what: str) -> None:
    assert abs(value - want) < 5 * sigma, f"{what} is {value}, expected {want} within 5 sigma ({sigma:.2g})"


@pytest.mark.parametrize("codegen", CODEGENS)
def test_statistics(codegen):
    f = compiled(lambda x: (torch.rand_like(x), torch.randn_like(x), torch.bernoulli(x, 0.3), F.dropout(x, 0.2, training=True)), codegen)
    torch.manual_seed(1)
    u, n, b, d = no_fallbacks(f, torch.ones(N))
    assert 0 <= u.min() and u.max() < 1
    _close_to(u.mean().item(), 0.5, (1 / 12 / N) ** 0.5, "the uniforms' mean")
    _close_to(u.var().item(), 1 / 12, ((1 / 80 - 1 / 144) / N) ** 0.5, "the uniforms' variance")
    counts = torch.histc(u, bins=10, min=0, max=1)
    for k, c in enumerate(counts.tolist()):
        _close_to(c / N, 0.1, (0.1 * 0.9 / N) ** 0.5, f"the share of uniforms in bin {k}")
    _close_to(n.mean().item(), 0.0, (1 / N) ** 0.5, "the normals' mean")
    _close_to(n.var().item(), 1.0, (2 / N) ** 0.5, "the normals' variance")
    _close_to((n.abs() < 1).float().mean().item(), 0.6827, (0.6827 * 0.3173 / N) ** 0.5, "the normals within one sigma")
    _close_to(b.mean().item(), 0.3, (0.3 * 0.7 / N) ** 0.5, "bernoulli(0.3)'s rate")
    keep = (d != 0).float().mean().item()
    _close_to(keep, 0.8, (0.8 * 0.2 / N) ** 0.5, "dropout's keep rate")
    assert torch.equal(d[d != 0], torch.full_like(d[d != 0], 1.25))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float64])
def test_dtypes(dtype):
    f = compiled(lambda: (torch.rand(64, 64, dtype=dtype), torch.randn(64, 64, dtype=dtype)), "llvm")
    u, n = no_fallbacks(f)
    assert u.dtype == dtype and n.dtype == dtype
    assert 0 <= u.min() and u.max() < 1


@pytest.mark.parametrize("codegen", CODEGENS)
def test_dynamic_shapes_and_empty(codegen):
    f = strata.compile(lambda x: torch.rand_like(x) * x, dynamic=True, options={"codegen": codegen})
    for shape in [(5, 7), (3, 11), (0, 4)]:
        torch.manual_seed(2)
        got = no_fallbacks(f, torch.ones(shape))
        assert got.shape == shape
        if got.numel():
            assert torch.equal(got, reference_uniform(drawn_seeds(2, 1)[0], shape))


# ---------------------------------------------------------------- dropout in training
@pytest.mark.parametrize("codegen", CODEGENS)
def test_backward_uses_the_forwards_mask(codegen):
    """grad of sum(dropout(x)) is mask / (1 - p): the forward's mask, saved, at each
    of two calls, which draw two masks."""
    p = 0.35
    f = compiled(lambda x: F.dropout(x, p, training=True), codegen)
    masks = []
    for _ in range(2):
        x = torch.randn(64, 50, requires_grad=True)
        y = no_fallbacks(f, x)
        y.sum().backward()
        mask = (y != 0).float()
        torch.testing.assert_close(y, x.detach() * mask * (1 / (1 - p)), rtol=1e-6, atol=0)
        assert torch.equal(x.grad, mask * (1 / (1 - p)))
        masks.append(mask)
    assert not torch.equal(masks[0], masks[1])


def test_dropout_edge_probabilities():
    f = compiled(lambda x: (F.dropout(x, 1.0, training=True), F.dropout(x, 0.0, training=True), F.dropout(x, 0.5, training=False)), "llvm")
    x = torch.randn(10, 10)
    zero, same, evaluated = no_fallbacks(f, x)
    assert torch.equal(zero, torch.zeros_like(x))
    assert torch.equal(same, x) and torch.equal(evaluated, x)


# ---------------------------------------------------------------- fallback_random
def _random_model(x):
    y = F.dropout(x, 0.3, training=True) * 2 + torch.rand_like(x) + torch.randn(x.shape)
    return y + torch.bernoulli(x.sigmoid()) + torch.bernoulli(x, 0.25)


@pytest.mark.parametrize("codegen", CODEGENS)
def test_fallback_random_is_eager_bit_for_bit(codegen):
    f = compiled(_random_model, codegen, fallback_random=True)
    x = torch.randn(40, 33)
    torch.manual_seed(7)
    got = no_fallbacks(f, x)  # the user asked for eager random ops: no warning
    torch.manual_seed(7)
    want = _random_model(x)
    assert torch.equal(got, want)


def test_fallback_random_training_matches_eager():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.ReLU(), torch.nn.Dropout(0.4), torch.nn.Linear(32, 3))
    c = strata.compile(model, options={"fallback_random": True})
    x = torch.randn(16, 8)
    torch.manual_seed(3)
    got = no_fallbacks(c, x)
    got.sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    torch.manual_seed(3)
    want = model(x)
    want.sum().backward()
    assert torch.equal(got, want)
    for g, p in zip(grads, model.parameters()):
        assert torch.equal(g, p.grad)


# ---------------------------------------------------------------- the property
DIMS = st.sampled_from([0, 1, 3, 7, 33, "s0"])
PROGRAM = """
func.func @graph(%seed: !strata.tensor<[], i64>, %x: {t}) -> ({result}) {{
  %r = prim.{op} %seed {{shape = {shape}, offset = {offset}}} : (!strata.tensor<[], i64>) -> {t}
{tail}
}}"""


def _type(dims: list) -> str:
    return "!strata.tensor<[" + ", ".join(f'"{d}"' if isinstance(d, str) else str(d) for d in dims) + "], f32>"


def _program(op: str, dims: list, offset, consumer: str) -> str:
    """`prim.<op>` of `dims` read by: nothing (a result), an add, a sum over its last
    dim (as a row of a reduction), or a transpose (at another index than its own)."""
    shape = "[" + ", ".join(f'"{d}"' if isinstance(d, str) else f"{d} : i64" for d in dims) + "]"
    t = _type(dims)
    offset_text = f'"{offset}"' if isinstance(offset, str) else f"{offset} : i64"
    if consumer == "transpose" and len(dims) >= 2:
        perm = [*range(len(dims) - 2), len(dims) - 1, len(dims) - 2]
        p = _type([dims[i] for i in perm])
        order = ", ".join(map(str, perm))
        tail = (
            f"  %p = prim.permute %r {{dims = array<i64: {order}>}} : ({t}) -> {p}\n"
            f"  %y = prim.exp %p : ({p}) -> {p}\n  func.return %y : {p}"
        )
        result = p
    elif consumer == "add" or not dims:
        tail = f"  %y = prim.add %r, %x : ({t}, {t}) -> {t}\n  func.return %y : {t}"
        result = t
    elif consumer == "sum":
        kept = _type(dims[:-1])
        tail = f"  %y = prim.sum %r {{dims = array<i64: {len(dims) - 1}>}} : ({t}) -> {kept}\n  func.return %r, %y : {t}, {kept}"
        result = f"{t}, {kept}"
    else:
        tail = f"  func.return %r : {t}"
        result = t
    return PROGRAM.format(t=t, result=result, op=op, shape=shape, offset=offset_text, tail=tail)


def _runner(codegen: str):
    compile_kernel = kernel_compiler(codegen)

    def run(interpreter, func, buffers, symbols):
        compile_kernel(func)(buffers, symbols)

    return run


@settings(max_examples=25)
@given(
    op=st.sampled_from(["philox_uniform", "philox_normal"]),
    dims=st.lists(DIMS, max_size=3),
    offset=st.sampled_from([0, 5, "s0", 2**32 - 3]),
    consumer=st.sampled_from(["none", "add", "sum", "transpose"]),
    seed=st.sampled_from([0, 1, -1, 2**63 - 2, -(2**63), 0x123456789ABCDEF]),
    s0=st.sampled_from([1, 2, 5]),
)
def test_reference_kernel_interpreter_and_code_generators_agree(op, dims, offset, consumer, seed, s0):
    if offset == "s0" and "s0" not in dims:
        offset = 3  # nothing would bind s0
    text = _program(op, dims, offset, consumer)
    module = parse_module(text)
    module.verify()
    sizes = [s0 if isinstance(d, str) else d for d in dims]
    args = [torch.tensor(seed, dtype=torch.int64), torch.randn(sizes)]
    want = interpret(module, args)
    run_pipeline(module, ["fuse"])
    exact = op == "philox_uniform"
    for name, run in [("kernel interpreter", None), *[(c, _runner(c)) for c in CODEGENS]]:
        got = run_program(module, args) if run is None else run_program(module, args, run_kernel=run)
        for i, (w, g) in enumerate(zip(want, got)):
            summed = consumer == "sum" and i == 1  # in another order than the reference's
            math = consumer == "transpose" and len(dims) >= 2  # exp, compiled
            if (exact or name == "kernel interpreter") and not summed and not math:
                assert torch.equal(w, g), f"{name} differs from the reference on\n{text}"
            else:
                torch.testing.assert_close(g, w, rtol=2e-5, atol=2e-5, msg=lambda m: f"{name}: {m}\n{text}")

