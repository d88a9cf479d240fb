"""On a GPU, fused f32 chains round where eager rounds: FMA contraction is on for these
kernels (codegen/triton_launcher.py), but every product is rounded before the add that
follows it, so results are eager's bit for bit (where eager's CUDA functions are
libdevice's, as exp, tanh and IEEE division are)."""

import pytest
import torch

import strata

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

CHAINS = {
    "mul_add": lambda a, b, c: a * b + c,
    "two_products": lambda a, b, c: a * b - c * a,
    "sigmoid": lambda a, b, c: torch.sigmoid(a * b + c),
    "reciprocal": lambda a, b, c: torch.reciprocal(a * b - c),
    "exp_tanh": lambda a, b, c: torch.exp(a) * b + torch.tanh(c) * a,
    "square_difference": lambda a, b, c: (a + b) * (a - b) + c * 0.5,
    "div": lambda a, b, c: (a * c + 1.0) / (b * b + 1.0),
}


def _inputs():
    gen = torch.Generator(device="cuda").manual_seed(0)
    n = 1 << 20
    a, b, c = (torch.randn(n, device="cuda", generator=gen) * s for s in (1.0, 3.0, 30.0))
    # values whose products are subnormal or overflow, and sigmoid's subnormal results
    a[:6] = torch.tensor([1e-30, 3e38, -88.0, -87.5, 0.0, -0.0])
    b[:6] = torch.tensor([1e-15, 10.0, 1.0, 1.0, 5.0, 2.0])
    c[:6] = 0.0
    return a, b, c


@cuda
@pytest.mark.parametrize("name", sorted(CHAINS))
def test_fused_f32_chain_is_eager_bit_for_bit(name):
    fn = CHAINS[name]
    a, b, c = _inputs()
    expected = fn(a, b, c)
    got = strata.compile(fn)(a, b, c)
    same = (got == expected) | (got.isnan() & expected.isnan())
    assert bool(same.all()), f"{int((~same).sum())} of {same.numel()} differ"
    assert torch.equal(torch.signbit(got), torch.signbit(expected))
