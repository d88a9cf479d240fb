"""Convolutions end to end: library calls laid out channels-last between kernels
(passes/fusion/layouts.py), on both code generators, against eager."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from tests.test_end_to_end import TARGET_IDS, TARGETS, compile_and_compare


class BasicBlock(nn.Module):
    """conv-bn-relu-conv-bn, a residual add (through a strided 1×1 projection when
    the block downsamples), relu: the kernels between convolutions run in NHWC."""

    def __init__(self, c_in: int, c_out: int, stride: int, groups: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False, groups=groups)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=True)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.down = nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False) if (stride, c_in) != (1, c_out) else None
        for bn in (self.bn1, self.bn2):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        skip = x if self.down is None else self.down(x)
        return torch.relu(skip + self.bn2(self.conv2(y)))


@pytest.fixture(autouse=True)
def _full_precision_convolutions():
    """cuDNN convolves in TF32 by default, eager and strata alike, but NHWC and NCHW
    pick different algorithms, whose TF32 roundings differ by ~1e-4: compare in fp32."""
    before = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32 = before


@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
@pytest.mark.parametrize(
    "c_in, c_out, stride, groups, size",
    [(4, 4, 1, 1, 7), (4, 8, 2, 1, 9), (8, 8, 1, 2, 5), (3, 6, 2, 3, 1)],
)
def test_basic_block_matches_eager(target, c_in, c_out, stride, groups, size):
    device, codegen = target
    torch.manual_seed(0)
    block = BasicBlock(c_in, c_out, stride, groups).eval().to(device)
    x = torch.randn(2, c_in, size, size, device=device)
    compile_and_compare(block, (x,), codegen, atol=1e-4, rtol=1e-4)


def test_results_keep_eager_strides():
    torch.manual_seed(0)
    block = BasicBlock(4, 4, 1).eval()
    x = torch.randn(2, 4, 6, 6)
    import strata

    with torch.no_grad():
        got = strata.compile(block)(x)
        want = block(x)
    assert got.stride() == want.stride()
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
@pytest.mark.parametrize("param_dtype", [torch.float32, torch.bfloat16])
def test_half_precision_batch_norm_in_inference_is_compiled(target, param_dtype):
    """bf16 activations with f32 statistics (what autocast leaves) or all-bf16: one
    rounding at the end, as eager's kernel; nothing runs eagerly."""
    device, codegen = target
    torch.manual_seed(0)
    bn = nn.BatchNorm2d(6).eval()
    bn.running_mean.uniform_(-0.5, 0.5)
    bn.running_var.uniform_(0.5, 2.0)
    bn = bn.to(device=device, dtype=param_dtype)
    x = torch.randn(2, 6, 5, 5, device=device, dtype=torch.bfloat16)
    compile_and_compare(lambda v: torch.relu(bn(v)), (x,), codegen, torch.bfloat16)


@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
def test_a_weight_a_kernel_makes_is_written_channels_last(target, tmp_path):
    # autocast's cast of an f32 weight to bf16 is a kernel; it writes the weight in the
    # layout the NHWC convolution reads, instead of a copy reordering it on each call.
    device, codegen = target
    import strata

    torch.manual_seed(0)
    x, w = torch.randn(2, 4, 6, 6, device=device), torch.randn(8, 4, 3, 3, device=device)

    def f(x, w):
        y = torch.nn.functional.conv2d(x, w * 0.5, padding=1)
        return torch.nn.functional.conv2d(torch.relu(y), w.repeat(1, 2, 1, 1) + 1, padding=1)

    options = {"codegen": codegen, "trace.enabled": True, "trace.dir": str(tmp_path)}
    with torch.no_grad():
        got = strata.compile(f, options=options)(x, w)
    torch.testing.assert_close(got, f(x, w), atol=1e-4, rtol=1e-4)
    program = next(tmp_path.glob("graph_*/2_kernel.mlir")).read_text()
    weight_launches = [line for line in program.splitlines() if "kernel.launch" in line and ("[8, 4, 3, 3]" in line.split("->")[-1] or "[8, 8, 3, 3]" in line.split("->")[-1])]
    assert weight_launches and all("strata.strides" in line for line in weight_launches)


def test_on_the_cpu_kernels_write_every_convolution_operand_nhwc(tmp_path):
    # passes/fusion/layouts.py: on the CPU the runtime converts nothing; kernels copy the
    # graph input and the weights to NHWC (x, read by two convolutions, once), and the
    # last kernel reads the NHWC result and writes the graph's contiguous result.
    import re

    import strata

    torch.manual_seed(0)
    block = BasicBlock(4, 8, 2).eval()
    x = torch.randn(2, 4, 9, 9)
    options = {"trace.enabled": True, "trace.dir": str(tmp_path), "graph_cache": False, "capture_cache": False}
    with torch.no_grad():
        compiled = strata.compile(block, options=options)
        got = compiled(x)
        torch.testing.assert_close(got, block(x), atol=1e-4, rtol=1e-4)
        assert got.stride() == block(x).stride()
        nhwc = x.contiguous(memory_format=torch.channels_last)
        torch.testing.assert_close(compiled(nhwc), block(nhwc), atol=1e-4, rtol=1e-4)
    first = min(tmp_path.glob("graph_*/2_kernel.mlir"), key=lambda p: int(p.parent.name.split("_")[1]))
    program = first.read_text()  # the contiguous input's graph
    launched = set()
    for line in program.splitlines():
        if "= kernel.launch" in line:
            launched.update(re.findall(r"%[\w.]+", line.split("=")[0]))
    convolutions = [line for line in program.splitlines() if "prim.convolution" in line and "=" in line]
    assert len(convolutions) == 3
    for line in convolutions:
        assert 'strata.layout = "channels_last"' in line
        operands = re.findall(r"%[\w.]+", line.split("prim.convolution", 1)[1].split("{")[0])
        assert operands and all(v in launched for v in operands), line
