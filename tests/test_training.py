"""Training through strata: forward and backward graphs both compiled, no fallbacks."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch

import strata
from strata.testing.models import GeluMLP, TransformerBlock

MODELS = {
    "mlp": (lambda: GeluMLP(16, 48), (8, 16)),
    "transformer_block": (lambda: TransformerBlock(32, 4), (2, 7, 32)),
}


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("name", list(MODELS))
def test_sgd_steps_track_eager(name, dynamic):
    make, shape = MODELS[name]
    torch.manual_seed(0)
    eager = make()
    compiled_model = copy.deepcopy(eager)
    compiled = strata.compile(compiled_model, dynamic=dynamic)
    opt_e = torch.optim.SGD(eager.parameters(), lr=0.05)
    opt_c = torch.optim.SGD(compiled_model.parameters(), lr=0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an eager fallback is a failure here
        for step in range(4):
            x = torch.randn(*shape)
            loss_e = eager(x).pow(2).mean()
            loss_c = compiled(x).pow(2).mean()
            loss_e.backward()
            loss_c.backward()
            torch.testing.assert_close(loss_c, loss_e, rtol=1e-4, atol=1e-5)
            if step == 0:
                for (n, pe), pc in zip(eager.named_parameters(), compiled_model.parameters()):
                    torch.testing.assert_close(pc.grad, pe.grad, rtol=1e-4, atol=1e-5, msg=f"grad of {n}")
            opt_e.step()
            opt_c.step()
            opt_e.zero_grad()
            opt_c.zero_grad()
