"""f32 linear layers on the CPU through oneDNN (runtime/cpu_linear.py)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import strata
from strata.dialects import prim
from strata.dialects.types import TensorType
from strata.runtime import cpu_linear

pytestmark = pytest.mark.skipif(not cpu_linear.available(), reason="this torch has no oneDNN")

CPU = torch.device("cpu")


def _value(dims, dtype="f32"):
    from xdsl.ir import Block

    return Block(arg_types=[TensorType(dims, dtype)]).args[0]


def _mm(m, k, n, dtype="f32"):
    return prim.MmOp(_value([m, k], dtype), _value([k, n], dtype))


def test_chosen_only_for_large_static_f32_products_on_the_cpu():
    assert cpu_linear.onednn_product(_mm(1024, 256, 1024), CPU) is not None
    assert cpu_linear.onednn_product(_mm(32, 128, 128), CPU) is None  # below MIN_WORK
    assert cpu_linear.onednn_product(_mm(1024, 256, 1024, "f64"), CPU) is None
    assert cpu_linear.onednn_product(_mm(1024, 256, 1024), torch.device("cuda")) is None
    assert cpu_linear.onednn_product(_mm("s0", 256, 1024), CPU) is None  # symbolic
    a, b = _value([1024, 256]), _value([256, 1024])
    assert cpu_linear.onednn_product(prim.AddmmOp(_value([1024]), a, b), CPU) is not None
    assert cpu_linear.onednn_product(prim.AddmmOp(_value([1024, 1024]), a, b), CPU) is None  # 2-d bias


def _count_onednn_calls(monkeypatch) -> list:
    calls = []
    original = cpu_linear._linear

    def counted(a, w, bias):
        calls.append(a.shape)
        return original(a, w, bias)

    monkeypatch.setattr(cpu_linear, "_linear", counted)
    return calls


def test_a_compiled_mlp_runs_its_linear_layers_through_onednn(monkeypatch):
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(256, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 256)).eval()
    x = torch.randn(512, 256)
    calls = _count_onednn_calls(monkeypatch)
    with torch.no_grad():
        got = strata.compile(mlp)(x)
        expected = mlp(x)
    assert len(calls) == 2
    torch.testing.assert_close(got, expected, rtol=1e-4, atol=1e-4)


def test_other_layouts_run_torchs_blas_call(monkeypatch):
    # a product whose second operand is not a transposed weight: torch.mm, bit for bit
    calls = _count_onednn_calls(monkeypatch)
    a, b, bias = torch.randn(512, 256), torch.randn(256, 512), torch.randn(512)
    assert torch.equal(cpu_linear._mm(a, b), torch.mm(a, b))
    assert torch.equal(cpu_linear._addmm(bias, a, b), torch.addmm(bias, a, b))
    assert calls == []


@settings(max_examples=12, deadline=None)
@given(m=st.sampled_from([64, 200, 512]), k=st.sampled_from([128, 384, 1024]), n=st.sampled_from([256, 520, 1024]),
       strided_input=st.booleans(), seed=st.integers(0, 2**16))
def test_onednn_products_are_as_accurate_as_blas(m, k, n, strided_input, seed):
    """Against float64, oneDNN's products stay within a small factor of torch's BLAS
    call's error (a sum in another order), strided inputs included."""
    gen = torch.Generator().manual_seed(seed)
    a = torch.randn(k, m, generator=gen).t() if strided_input else torch.randn(m, k, generator=gen)
    w = torch.randn(n, k, generator=gen) / k**0.5
    bias = torch.randn(n, generator=gen)
    exact = torch.addmm(bias.double(), a.double(), w.t().double())
    blas = (torch.addmm(bias, a, w.t()).double() - exact).abs().max().item()
    got = cpu_linear._addmm(bias, a, w.t())
    assert got.shape == (m, n) and got.dtype == torch.float32
    assert (got.double() - exact).abs().max().item() <= 4 * blas + 1e-6
    exact_mm = a.double() @ w.t().double()
    blas_mm = ((a @ w.t()).double() - exact_mm).abs().max().item()
    assert (cpu_linear._mm(a, w.t()).double() - exact_mm).abs().max().item() <= 4 * blas_mm + 1e-6
