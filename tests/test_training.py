"""Training through strata: forward and backward graphs both compiled, no fallbacks.

The 20-step checks (below) need --slow for the whole matrix of models, optimizers and
precisions; without it a diagonal of the matrix runs."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch

import strata
from strata.testing.models import GeluMLP, TransformerBlock
from strata.testing.training import (
    BUFFER_TOLERANCE,
    CASES,
    GRAD_TOLERANCE,
    LOSS_TOLERANCE,
    run_forward_backward,
    run_training,
)

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


# ---------------------------------------------------------------- 20-step training checks
# testing/training.py trains an eager and a compiled copy of each model side by side on
# the same batches; losses must track eager within LOSS_TOLERANCE at every step (fp32:
# rtol 1e-5; bf16 autocast: rtol 5e-3), gradients within GRAD_TOLERANCE on the first
# step, and buffers (batch norm's running statistics, mutated by the compiled graph)
# within BUFFER_TOLERANCE after the last. Models with dropout run under fallback_random
# (eager's masks, bit for bit); test_dropout_training_converges trains them without.
# The full matrix takes a few minutes on 2 cores: a diagonal of it runs by default,
# the rest with --slow.

MATRIX = [(c, o, p) for c in ("mlp", "gpt", "cnn", "mlp_dropout", "gpt_dropout") for o in ("sgd", "adamw") for p in ("fp32", "bf16")]
DEFAULT = {("mlp", "sgd", "fp32"), ("mlp", "adamw", "bf16"), ("gpt", "adamw", "fp32"), ("cnn", "sgd", "fp32"), ("cnn", "adamw", "bf16"), ("mlp_dropout", "adamw", "fp32")}


def _matrix_param(case: str, optimizer: str, precision: str):
    marks = () if (case, optimizer, precision) in DEFAULT else (pytest.mark.slow,)
    return pytest.param(case, optimizer, precision, marks=marks, id=f"{case}-{optimizer}-{precision}")


@pytest.mark.parametrize("case,optimizer,precision", [_matrix_param(*m) for m in MATRIX])
def test_twenty_steps_track_eager(case, optimizer, precision):
    c = CASES[case]
    run = run_training(c, optimizer, precision, steps=20, fallback_random=c.random)
    assert not run.fallbacks, f"{case}: eager fallbacks: {run.fallbacks}"
    assert run.loss_error() <= 1, (
        f"{case} ({optimizer}, {precision}): losses drift from eager beyond rtol/atol {LOSS_TOLERANCE[precision]}:\n"
        f"  eager    {[round(v, 6) for v in run.losses_eager]}\n  compiled {[round(v, 6) for v in run.losses_compiled]}"
    )
    assert run.grad_error() <= 1, f"{case}: first-step gradients differ beyond {GRAD_TOLERANCE[precision]} (worst {run.grad_error():.3g})"
    assert run.buffer_error() <= 1, f"{case}: buffers differ after 20 steps beyond {BUFFER_TOLERANCE[precision]} (worst {run.buffer_error():.3g})"
    assert run.loss_decreased("eager") and run.loss_decreased("compiled")
    if case == "cnn":
        tracked = [n for n in run.buffers_compiled if n.endswith("num_batches_tracked")]
        assert tracked and all(run.buffers_compiled[n].item() == 20 for n in tracked)


@pytest.mark.parametrize("case", ["mlp_dropout", pytest.param("gpt_dropout", marks=pytest.mark.slow), "cnn"])
def test_dropout_training_converges(case):
    """Without fallback_random, the compiled side draws its own masks (philox in its
    kernels): no eager fallback, and its loss goes down as eager's does."""
    run = run_training(CASES[case], "adamw", "fp32", steps=20, fallback_random=False)
    assert not run.fallbacks, f"{case}: eager fallbacks: {run.fallbacks}"
    assert run.losses_compiled != run.losses_eager  # other masks than eager's
    assert run.loss_decreased("compiled"), f"{case}: compiled losses {run.losses_compiled}"
    assert run.grad_error() < float("inf")  # finite gradients
    assert abs(run.losses_compiled[-1] - run.losses_eager[-1]) < 0.25 * run.losses_eager[0]


@pytest.mark.parametrize(
    "case,batch",
    [("mlp", 0), ("mlp", 1), ("gpt", 0), pytest.param("gpt", 1, marks=pytest.mark.slow), ("cnn", 0), ("cnn", 1)],
)
def test_empty_and_single_example_batches(case, batch):
    """One forward and backward of a batch of 0 or 1 examples matches eager (sizes 0 and
    1 are specialized by torch.compile: each is a graph of its own)."""
    out_error, grad_error = run_forward_backward(CASES[case], batch)
    assert out_error <= 1 and grad_error <= 1, (out_error, grad_error)
