"""Training checks: a model trained N steps eagerly and compiled by strata, side by side.

A `TrainingCase` is a small model, its batches and its loss; `run_training` trains two
copies of it (one eager, one through `strata.compile`) on the same batches with the same
optimizer, and records both loss curves, the first step's gradients and the buffers
(batch norm's running statistics) at the end. tests/test_training.py checks the
records against the tolerances below; benchmarks/train_check.py runs the same checks
on a device of one's choosing and prints a table.

Random ops. Before each step, both sides seed torch's generator alike, so that with
`fallback_random=True` (random ops run as eager's kernels) their dropout masks are the
same bits; without it the compiled side draws its own masks (philox in kernels) and
its losses are only expected to go down.
"""

from __future__ import annotations

import contextlib
import copy
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

import strata
from strata.testing.models import GeluMLP, TransformerBlock

# What "tracks eager" means: (rtol, atol) of each step's loss and of the first step's
# gradients, per precision. bf16 autocast rounds every matmul's operands and results
# to 8 bits of mantissa, and rounding differences grow over the steps.
LOSS_TOLERANCE = {"fp32": (1e-5, 1e-6), "bf16": (5e-3, 1e-3)}
GRAD_TOLERANCE = {"fp32": (1e-4, 1e-6), "bf16": (5e-2, 1e-2)}
BUFFER_TOLERANCE = {"fp32": (1e-4, 1e-5), "bf16": (3e-2, 3e-2)}


class TinyGPT(nn.Module):
    """Token and position embeddings, TransformerBlocks, a final layer norm, a head."""

    def __init__(self, vocab: int = 64, d: int = 32, heads: int = 4, layers: int = 2, context: int = 16, dropout: float = 0.0):
        super().__init__()
        self.tokens = nn.Embedding(vocab, d)
        self.positions = nn.Embedding(context, d)
        self.drop = nn.Dropout(dropout)
        self.blocks = nn.Sequential(*[TransformerBlock(d, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        t = idx.shape[1]
        x = self.tokens(idx) + self.positions(torch.arange(t, device=idx.device))
        return self.head(self.ln(self.blocks(self.drop(x))))


class SmallCNN(nn.Module):
    """Two conv + batch norm + ReLU stages, a pooling, dropout and a linear classifier."""

    def __init__(self, channels: int = 8, classes: int = 10, dropout: float = 0.25):
        super().__init__()
        self.features = nn.Sequential(
            # No conv bias before a batch norm: it cancels, its gradient is rounding noise,
            # which AdamW (dividing by its size) would turn into steps of random sign.
            nn.Conv2d(3, channels, 3, padding=1, bias=False),
            nn.BatchNorm2d(channels),
            nn.ReLU(),
            nn.Conv2d(channels, 2 * channels, 3, padding=1, stride=2, bias=False),
            nn.BatchNorm2d(2 * channels),
            nn.ReLU(),
        )
        self.drop = nn.Dropout(dropout)
        self.classifier = nn.Linear(2 * channels, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(x).mean(dim=(2, 3))
        return self.classifier(self.drop(x))


class DropoutMLP(nn.Module):
    """A GELU MLP with dropout between its layers."""

    def __init__(self, d: int = 16, hidden: int = 64, dropout: float = 0.2):
        super().__init__()
        self.fc1 = nn.Linear(d, hidden)
        self.drop = nn.Dropout(dropout)
        self.fc2 = nn.Linear(hidden, d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.drop(F.gelu(self.fc1(x))))


@dataclass(frozen=True)
class TrainingCase:
    """A model to train: how to build it, a batch of `batch` examples, and the loss."""

    name: str
    make_model: Callable[[], nn.Module]
    make_batch: Callable[[torch.Generator, int], tuple[torch.Tensor, torch.Tensor]]
    loss: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]
    batch: int
    random: bool  # whether the model draws random numbers (dropout)
    lr: dict[str, float] = field(default_factory=lambda: {"sgd": 0.05, "adamw": 3e-3})


def _regression(d: int) -> Callable[[torch.Generator, int], tuple[torch.Tensor, torch.Tensor]]:
    def make(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.randn(n, d, generator=g)
        return x, torch.sin(x)  # a target the MLP can learn

    return make


def _tokens(g: torch.Generator, n: int, vocab: int = 64, context: int = 16) -> tuple[torch.Tensor, torch.Tensor]:
    start = torch.randint(0, vocab, (n, 1), generator=g)
    seq = (start + torch.arange(context + 1)) % vocab  # next token: +1, learnable
    return seq[:, :-1], seq[:, 1:]


def _images(g: torch.Generator, n: int) -> tuple[torch.Tensor, torch.Tensor]:
    y = torch.randint(0, 10, (n,), generator=g)
    x = torch.randn(n, 3, 8, 8, generator=g) * 0.5 + (y.float() / 10).view(n, 1, 1, 1)
    return x, y


def _mse(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return F.mse_loss(out, target)


def _token_loss(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), target.reshape(-1))


def _class_loss(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.float(), target)


CASES: dict[str, TrainingCase] = {
    "mlp": TrainingCase("mlp", lambda: GeluMLP(16, 48), _regression(16), _mse, batch=32, random=False),
    "gpt": TrainingCase("gpt", lambda: TinyGPT(), _tokens, _token_loss, batch=4, random=False),
    "cnn": TrainingCase("cnn", lambda: SmallCNN(), _images, _class_loss, batch=16, random=True),
    "mlp_dropout": TrainingCase("mlp_dropout", lambda: DropoutMLP(), _regression(16), _mse, batch=32, random=True),
    "gpt_dropout": TrainingCase("gpt_dropout", lambda: TinyGPT(dropout=0.1), _tokens, _token_loss, batch=4, random=True),
}


def make_optimizer(name: str, params, lr: float) -> torch.optim.Optimizer:
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=0.9)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=0.01)
    raise ValueError(f"unknown optimizer {name!r} (sgd or adamw)")


@dataclass
class TrainingRun:
    """Both sides of one training run."""

    case: str
    optimizer: str
    precision: str
    losses_eager: list[float] = field(default_factory=list)
    losses_compiled: list[float] = field(default_factory=list)
    grads_eager: dict[str, torch.Tensor] = field(default_factory=dict)  # after step 0
    grads_compiled: dict[str, torch.Tensor] = field(default_factory=dict)
    buffers_eager: dict[str, torch.Tensor] = field(default_factory=dict)  # after the last step
    buffers_compiled: dict[str, torch.Tensor] = field(default_factory=dict)
    fallbacks: list[str] = field(default_factory=list)  # strata's warnings of eager fallbacks

    def loss_error(self) -> float:
        """The largest |compiled - eager| / (atol + rtol |eager|) over the steps: at most 1
        is within LOSS_TOLERANCE."""
        rtol, atol = LOSS_TOLERANCE[self.precision]
        return max((abs(c - e) / (atol + rtol * abs(e)) for e, c in zip(self.losses_eager, self.losses_compiled)), default=0.0)

    def grad_error(self) -> float:
        """As loss_error, for the first step's gradients (the worst element)."""
        rtol, atol = GRAD_TOLERANCE[self.precision]
        return _tensor_error(self.grads_eager, self.grads_compiled, rtol, atol)

    def buffer_error(self) -> float:
        rtol, atol = BUFFER_TOLERANCE[self.precision]
        return _tensor_error(self.buffers_eager, self.buffers_compiled, rtol, atol)

    def loss_decreased(self, side: str = "compiled") -> bool:
        """Whether the mean of the last quarter of the losses is below the first step's."""
        losses = self.losses_compiled if side == "compiled" else self.losses_eager
        tail = losses[-max(len(losses) // 4, 1) :]
        return sum(tail) / len(tail) < losses[0]


def _tensor_error(want: dict[str, torch.Tensor], got: dict[str, torch.Tensor], rtol: float, atol: float) -> float:
    worst = 0.0
    for name, w in want.items():
        g = got[name]
        if w.is_floating_point():
            w, g = w.double(), g.double()
            err = ((g - w).abs() / (atol + rtol * w.abs())).max().item() if w.numel() else 0.0
        else:
            err = 0.0 if torch.equal(w, g) else math.inf
        worst = max(worst, err if not math.isnan(err) else math.inf)
    return worst


def _autocast(precision: str, device: str):
    if precision == "fp32":
        return contextlib.nullcontext()
    return torch.autocast(device_type=device, dtype=torch.bfloat16)


def run_training(
    case: TrainingCase,
    optimizer: str = "sgd",
    precision: str = "fp32",
    steps: int = 20,
    device: str = "cpu",
    fallback_random: bool = False,
    options: dict | None = None,
    seed: int = 0,
) -> TrainingRun:
    """Trains an eager and a compiled copy of `case`'s model `steps` steps on the same
    batches; the record of both."""
    torch.manual_seed(seed)
    eager = case.make_model().to(device).train()
    mine = copy.deepcopy(eager)
    compiled = strata.compile(mine, options={"fallback_random": fallback_random, **(options or {})})
    opt_eager = make_optimizer(optimizer, eager.parameters(), case.lr[optimizer])
    opt_mine = make_optimizer(optimizer, mine.parameters(), case.lr[optimizer])
    g = torch.Generator().manual_seed(seed + 1)
    batches = [tuple(t.to(device) for t in case.make_batch(g, case.batch)) for _ in range(steps)]
    run = TrainingRun(case.name, optimizer, precision)
    sides = ((eager, eager, opt_eager, run.losses_eager, run.grads_eager), (mine, compiled, opt_mine, run.losses_compiled, run.grads_compiled))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for step, (x, y) in enumerate(batches):
            for model, forward, opt, losses, grads in sides:
                torch.manual_seed(seed + 1000 + step)  # the same dropout draws on both sides, under fallback_random
                with _autocast(precision, device):
                    loss = case.loss(forward(x), y)
                loss.backward()
                losses.append(loss.item())
                if step == 0:
                    grads.update({n: p.grad.detach().clone() for n, p in model.named_parameters() if p.grad is not None})
                opt.step()
                opt.zero_grad(set_to_none=True)
    run.fallbacks = sorted({str(w.message) for w in caught if str(w.message).startswith("strata:")})
    run.buffers_eager = {n: b.detach().clone() for n, b in eager.named_buffers()}
    run.buffers_compiled = {n: b.detach().clone() for n, b in mine.named_buffers()}
    return run


def run_forward_backward(case: TrainingCase, batch: int, device: str = "cpu", options: dict | None = None) -> tuple[float, float]:
    """One forward and backward of a batch of `batch` examples (0 and 1 included), eager
    and compiled: the worst output and gradient errors, as |compiled - eager| / (1e-5 +
    1e-4 |eager|) (at most 1 is within tolerance). A model with dropout runs under
    fallback_random, for eager's masks."""
    torch.manual_seed(0)
    eager = case.make_model().to(device).train()
    mine = copy.deepcopy(eager)
    compiled = strata.compile(mine, options={"fallback_random": case.random, **(options or {})})
    x, _ = case.make_batch(torch.Generator().manual_seed(1), batch)
    x = x.to(device)
    outs = []
    for model, forward in ((eager, eager), (mine, compiled)):
        torch.manual_seed(5)
        out = forward(x)
        out.float().square().sum().backward()  # a sum: defined for an empty batch too
        outs.append((out.detach(), {n: p.grad for n, p in model.named_parameters() if p.grad is not None}))
    (out_e, grads_e), (out_c, grads_c) = outs
    assert out_e.shape == out_c.shape, f"{case.name}: compiled output {tuple(out_c.shape)}, eager {tuple(out_e.shape)}"
    return _tensor_error({"out": out_e}, {"out": out_c}, 1e-4, 1e-5), _tensor_error(grads_e, grads_c, 1e-4, 1e-5)
