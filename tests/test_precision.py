"""f16/bf16 intermediates inside a fused kernel stay in f32 (rounded where stored), as
TorchInductor computes them; casts the program asks for still round; the option
`emulate_precision_casts` rounds after every op, as eager does."""

from __future__ import annotations

import pytest
import torch

import strata
from tests.test_end_to_end import TARGET_IDS, TARGETS


def _inputs(dtype):
    torch.manual_seed(0)
    x, a, b = (torch.randn(1000, dtype=dtype) for _ in range(3))
    return x, a, b.abs() + 0.5


def addcdiv(x, a, b):
    # Dynamo rewrites this into div, mul and add before a backend sees it.
    return torch.addcdiv(x, a, b, value=0.37)


def op_by_op(x, a, b):
    return x + (a / b) * 0.37


@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["f16", "bf16"])
def test_a_fused_chain_rounds_once_like_eagers_addcdiv(target, dtype):
    device, codegen = target
    x, a, b = (t.to(device) for t in _inputs(dtype))
    got = strata.compile(addcdiv, options={"codegen": codegen})(x, a, b)
    assert torch.equal(got, addcdiv(x, a, b))  # eager's addcdiv rounds once, in its f32 opmath
    assert not torch.equal(got, op_by_op(x, a, b))  # three roundings differ somewhere


@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
def test_emulate_precision_casts_rounds_after_every_op(target):
    device, codegen = target
    x, a, b = (t.to(device) for t in _inputs(torch.float16))
    compiled = strata.compile(op_by_op, options={"codegen": codegen, "emulate_precision_casts": True})
    assert torch.equal(compiled(x, a, b), op_by_op(x, a, b))


@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
def test_a_cast_the_program_asks_for_still_rounds(target):
    device, codegen = target

    def quantized(x):
        return (x * 3).to(torch.bfloat16).float() * 2  # f32 in, bf16 in the middle, f32 out

    x = torch.randn(1000, device=device)
    assert torch.equal(strata.compile(quantized, options={"codegen": codegen})(x), quantized(x))
