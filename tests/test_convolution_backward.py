"""A convolution's backward: one library call per convolution (prim.convolution_backward
where the input and the weight both take gradients, prim.convolution_backward_weight
or _input where one does), gradients as eager's, on both code generators."""

from __future__ import annotations

import copy
import warnings

import pytest
import torch
from torch import nn

import strata
from tests.test_end_to_end import TARGET_IDS, TARGETS


class SmallCNN(nn.Module):
    """Every kind of convolution gradient: a first layer whose input takes none (the
    weight's alone), with bias, strided and padded; a grouped, dilated one without
    bias; a frozen one (the input's alone); a 1×1 one; a 1-d one."""

    def __init__(self):
        super().__init__()
        self.first = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.grouped = nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=2, bias=False)
        self.frozen = nn.Conv2d(8, 8, 3, padding=1).requires_grad_(False)
        self.pointwise = nn.Conv2d(8, 4, 1)
        self.line = nn.Conv1d(4, 6, 3, stride=2, padding=1)

    def forward(self, x):
        y = torch.relu(self.first(x))
        y = torch.tanh(self.grouped(y)) + y
        y = torch.relu(self.pointwise(self.frozen(y)))
        return self.line(y.flatten(2)).square().sum()


# The model's convolutions and the library calls their backward takes.
CONVOLUTIONS = 5
ONE_CALL_FOR_BOTH = 3  # grouped, pointwise, line


@pytest.fixture(autouse=True)
def _full_precision_convolutions():
    """cuDNN may convolve in TF32: compare in fp32, as tests/test_convolution.py does."""
    before = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32 = before


def _gradients(model: nn.Module, run, x: torch.Tensor) -> dict[str, torch.Tensor]:
    """The loss `run` (the model, or its compiled form) gives, and the gradients."""
    model.zero_grad()
    loss = run(x)
    loss.backward()
    return {"loss": loss.detach(), **{n: p.grad for n, p in model.named_parameters() if p.requires_grad}}


@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
def test_gradients_match_eager(target):
    device, codegen = target
    torch.manual_seed(0)
    eager = SmallCNN().to(device)
    compiled_model = copy.deepcopy(eager)
    compiled = strata.compile(compiled_model, options={"codegen": codegen})
    x = torch.randn(2, 3, 10, 10, device=device)
    want = _gradients(eager, eager, x)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an eager fallback is a failure here
        got = _gradients(compiled_model, compiled, x)
    assert got.keys() == want.keys()
    for name in want:
        torch.testing.assert_close(got[name], want[name], msg=f"gradient of {name}")


def test_the_pair_is_one_library_call(tmp_path):
    torch.manual_seed(0)
    model = SmallCNN()
    options = {"trace.enabled": True, "trace.dir": str(tmp_path)}
    compiled = strata.compile(model, options=options)
    compiled(torch.randn(2, 3, 10, 10)).backward()
    prim_ir = "\n".join(p.read_text() for p in tmp_path.glob("graph_*/1_prim.mlir"))
    program = "\n".join(p.read_text() for p in tmp_path.glob("graph_*/2_kernel.mlir"))
    for text in (prim_ir, program):
        assert text.count("prim.convolution_backward ") == ONE_CALL_FOR_BOTH
        assert text.count("prim.convolution_backward_weight ") == 1  # the first layer
        assert text.count("prim.convolution_backward_input ") == 1  # the frozen one


def test_the_backward_calls_the_library_once_per_convolution():
    torch.manual_seed(0)
    eager = SmallCNN()
    compiled_model = copy.deepcopy(eager)
    compiled = strata.compile(compiled_model)
    x = torch.randn(2, 3, 10, 10)
    compiled(x).backward()  # compiles both graphs

    def calls(model, run) -> int:
        model.zero_grad()
        loss = run(x)
        with torch.profiler.profile() as prof:
            loss.backward()
        return sum(e.count for e in prof.key_averages() if e.key == "aten::convolution_backward")

    assert calls(compiled_model, compiled) == calls(eager, eager) == CONVOLUTIONS


def test_channels_last_inputs_give_eager_gradients():
    # x and the weights arrive NHWC, and so the library returns most gradients: they are
    # made contiguous, the layout the kernels after the call were compiled for.
    torch.manual_seed(0)
    eager = SmallCNN().to(memory_format=torch.channels_last)
    compiled_model = copy.deepcopy(eager)
    compiled = strata.compile(compiled_model)
    x = torch.randn(2, 3, 10, 10).to(memory_format=torch.channels_last)
    want = _gradients(eager, eager, x)
    got = _gradients(compiled_model, compiled, x)
    for name in want:
        torch.testing.assert_close(got[name], want[name], msg=f"gradient of {name}")


def test_dynamic_shapes():
    torch.manual_seed(0)
    eager = SmallCNN()
    compiled_model = copy.deepcopy(eager)
    compiled = strata.compile(compiled_model, dynamic=True)
    for size in (10, 13):
        x = torch.randn(3, 3, size, size + 2)
        want = _gradients(eager, eager, x)
        got = _gradients(compiled_model, compiled, x)
        for name in want:
            torch.testing.assert_close(got[name], want[name], msg=f"gradient of {name} at {size}")


@pytest.mark.parametrize("symbolic", [False, True])
def test_the_stand_in_kept_between_calls_on_cuda(symbolic, monkeypatch):
    # On CUDA the tensor whose gradient one op computes is one element, expanded, made
    # at the first call: run here on CPU tensors as if the graph were on CUDA.
    made = []
    empty = torch.empty
    monkeypatch.setattr(torch, "empty", lambda *a, **k: made.append(a) or empty(*a, **k))
    from xdsl.ir import Block

    from strata.dialects.prim_convolution_backward import ConvolutionBackwardInputOp
    from strata.dialects.types import TensorType
    from strata.runtime.compiled_graph import size_fn
    from strata.runtime.convolution_backward import convolution_backward_step

    x_dims = [2, 3, "s0", 7] if symbolic else [2, 3, 9, 7]
    block = Block(arg_types=[TensorType([2, 4, "s0" if symbolic else 9, 7], "f32"), TensorType([4, 3, 3, 3], "f32")])
    op = ConvolutionBackwardInputOp(*block.args, x_dims, [1, 1], [1, 1], [1, 1], 1)
    slots: dict = {}
    step = convolution_backward_step(
        op, lambda v: slots.setdefault(v, len(slots)), torch.device("cuda"), torch.contiguous_format, size_fn
    )
    grad, w = torch.randn(2, 4, 9, 7), torch.randn(4, 3, 3, 3)
    regs = [None] * 3
    regs[slots[op.grad]], regs[slots[op.other]] = grad, w
    for _ in range(2):
        step(regs, {"s0": 9})
        want = torch.ops.aten.convolution_backward(
            grad, torch.randn(2, 3, 9, 7), w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, False, False]
        )[0]
        got = regs[slots[op.result]]
        torch.testing.assert_close(got, want)
        assert got.is_contiguous()
    assert made == [((),)]
