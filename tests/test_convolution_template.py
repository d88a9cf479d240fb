"""max-autotune's convolution template (passes/convolution_to_dot.py): a 2-d convolution
as an implicit GEMM through the matmul template, its batch norm, activation and
residual add as the epilogue, run in Triton's interpreter against eager PyTorch; every
tile the tuner may pick, cuDNN's (here torch's CPU convolution) included; the layouts
between two convolutions; epilogue_fusion=False."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import strata
from strata.codegen.triton_gpu import _interpreting, compile_kernel
from strata.dialects import kernel
from strata.dialects.context import parse_module
from strata.frontend.compile_graph import run_pipeline

MODE = "max-autotune-no-cudagraphs"
TOLERANCE = {torch.float32: {"rtol": 1e-4, "atol": 1e-4}, torch.bfloat16: {"rtol": 1.6e-2, "atol": 2e-2}}


class ConvBnRelu(nn.Module):
    def __init__(self, cin: int, cout: int, k: int, stride: int = 1, padding: int = 0, dilation: int = 1,
                 bias: bool = False):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, stride, padding, dilation=dilation, bias=bias)
        self.bn = nn.BatchNorm2d(cout)
        with torch.no_grad():  # statistics that are not the identity
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)
            self.bn.weight.uniform_(0.5, 1.5)
            self.bn.bias.uniform_(-0.2, 0.2)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


def _compile(model, tmp_path: Path, **options):
    opts = {"codegen": "triton", "trace.enabled": True, "trace.dir": str(tmp_path / "trace"), "graph_cache": False,
            "capture_cache": False, "dynamo_cache": False, **options}
    return strata.compile(model, mode=MODE, options=opts)


def _templates(tmp_path: Path) -> list[str]:
    sources = [p.read_text() for p in sorted((tmp_path / "trace").glob("graph_*/kernels/*.py"))]
    return [s for s in sources if "matmul template" in s]


CASES = {
    "3x3": dict(cin=5, cout=6, k=3, padding=1),
    "3x3 stride 2": dict(cin=5, cout=6, k=3, stride=2, padding=1),
    "1x1": dict(cin=5, cout=7, k=1),
    "1x1 stride 2": dict(cin=5, cout=7, k=1, stride=2),
    "7x7 stride 2 stem": dict(cin=3, cout=8, k=7, stride=2, padding=3),
    "dilated with bias": dict(cin=4, cout=6, k=3, padding=2, dilation=2, bias=True),
    "no padding": dict(cin=4, cout=6, k=3),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_convolution_with_batch_norm_and_relu_is_one_template(case, dtype, tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    torch.manual_seed(0)
    model = ConvBnRelu(**CASES[case]).eval().to(dtype)
    x = torch.randn(2, model.conv.in_channels, 9, 11, dtype=dtype)
    compiled = _compile(model, tmp_path)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no "cannot run" warning: the template runs it
        got, want = compiled(x), model(x)
    torch.testing.assert_close(got, want, **TOLERANCE[dtype])
    (template,) = _templates(tmp_path)
    header = template.splitlines()[1]
    assert "aten.convolution" in header and "batch_norm" in header and "aten.relu" in header


def test_a_residual_block_runs_its_convolutions_as_templates_in_nhwc(tmp_path, monkeypatch):
    """conv-bn-relu, conv-bn, + x, relu: each convolution a template with its epilogue,
    the residual add in the second's; what the first stores (the second's input) laid
    out channels-last, as cuDNN's NHWC convolutions would have it."""
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    torch.manual_seed(0)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.a, self.b = ConvBnRelu(6, 6, 3, padding=1), ConvBnRelu(6, 6, 3, padding=1)

        def forward(self, x):
            y = self.b.bn(self.b.conv(self.a(x)))
            return F.relu(y + x)

    model = Block().eval()
    x = torch.randn(2, 6, 8, 8)
    compiled = _compile(model, tmp_path)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), **TOLERANCE[torch.float32])
    templates = _templates(tmp_path)
    assert len(templates) == 2
    assert "aten.add" in templates[1].splitlines()[1]
    (program,) = [p.read_text() for p in (tmp_path / "trace").glob("graph_*/2_kernel.mlir")]
    launches = [line for line in program.splitlines() if "kernel.launch" in line and "[2, 6, 8, 8]" in line]
    assert "strata.strides = [[384 : i64, 1 : i64, 48 : i64, 6 : i64]]" in launches[0]  # NHWC


CONVOLUTION_IR = """
func.func @graph(%x: !strata.tensor<[2, 4, 7, 9], {t}>, %w: !strata.tensor<[6, 4, 3, 3], {t}>, %b: !strata.tensor<[6], {t}>) -> !strata.tensor<[2, 6, 4, 5], {t}> attributes {{strata.device = "cuda"}} {{
  %y = prim.convolution %x, %w, %b {{stride = array<i64: 2, 2>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64}} : (!strata.tensor<[2, 4, 7, 9], {t}>, !strata.tensor<[6, 4, 3, 3], {t}>, !strata.tensor<[6], {t}>) -> !strata.tensor<[2, 6, 4, 5], {t}>
  %r = prim.tanh %y : (!strata.tensor<[2, 6, 4, 5], {t}>) -> !strata.tensor<[2, 6, 4, 5], {t}>
  func.return %r : !strata.tensor<[2, 6, 4, 5], {t}>
}}
"""


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_every_candidate_tile_computes_the_convolution(dtype, tmp_path, monkeypatch):
    """Every tile the tuner times, the library tile (torch's convolution, with its bias,
    then the epilogue) and the epilogue apart included; the library tile also with x
    and w in NHWC (the kernel's own index expressions are the contiguous layout's, as
    compiled)."""
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    module = parse_module(CONVOLUTION_IR.format(t=dtype))
    run_pipeline(module, ["matmul-to-dot", "fuse"], step_options=[{"target": "triton"}, {}])
    (func,) = [op for op in module.ops if isinstance(op, kernel.FuncOp)]
    compiled = compile_kernel(func, "cpu")
    assert "torch.convolution(x, w, bias, (2, 2), (1, 1), (1, 1), False, (0, 0), 1)" in compiled.source
    torch_dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[dtype]
    torch.manual_seed(0)
    x, w, b = torch.randn(2, 4, 7, 9, dtype=torch_dtype), torch.randn(6, 4, 3, 3, dtype=torch_dtype), torch.randn(6, dtype=torch_dtype)
    want = torch.tanh(F.conv2d(x, w, b, stride=2, padding=1))
    tiles = compiled.module.tile_candidates(compiled.module.numels([]))
    assert any(t.library for t in tiles) and any(t.epilogue_apart for t in tiles) and len(tiles) > 4
    for layout in (torch.contiguous_format, torch.channels_last):
        xs, ws = x.contiguous(memory_format=layout), w.contiguous(memory_format=layout)
        for tile in tiles if layout == torch.contiguous_format else [t for t in tiles if t.library]:
            out = torch.full((2, 6, 4, 5), float("nan"), dtype=torch_dtype)
            with _interpreting():
                compiled.module.launch_tile(tile, [xs, ws, b, out], [])
            torch.testing.assert_close(out, want, **TOLERANCE[torch_dtype], msg=lambda e: f"{tile.describe()}, {layout}: {e}")


def test_a_view_of_x_runs_the_template_in_place_of_the_library(tmp_path, monkeypatch):
    """The library tile needs the buffers to be x and w as they are; handed a larger
    buffer (x a view into it), it runs the template instead, which reads the view."""
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    module = parse_module(CONVOLUTION_IR.format(t="f32"))
    run_pipeline(module, ["matmul-to-dot", "fuse"], step_options=[{"target": "triton"}, {}])
    (func,) = [op for op in module.ops if isinstance(op, kernel.FuncOp)]
    compiled = compile_kernel(func, "cpu")
    (library,) = [t for t in compiled.module.tile_candidates(compiled.module.numels([])) if t.library]
    x, w, b = torch.randn(2 * 4 * 7 * 9), torch.randn(6, 4, 3, 3), torch.randn(6)
    want = torch.tanh(F.conv2d(x.view(2, 4, 7, 9), w, b, stride=2, padding=1))
    out = torch.empty(2, 6, 4, 5)
    with _interpreting():
        compiled.module.launch_tile(library, [x, w, b, out], [])
    torch.testing.assert_close(out, want, **TOLERANCE[torch.float32])


def test_epilogue_fusion_off_stores_the_convolution_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    torch.manual_seed(0)
    model = ConvBnRelu(4, 6, 3, padding=1).eval()
    x = torch.randn(2, 4, 8, 8)
    compiled = _compile(model, tmp_path, epilogue_fusion=False)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), **TOLERANCE[torch.float32])
    (template,) = _templates(tmp_path)
    header = template.splitlines()[1]
    assert "aten.convolution" in header and "relu" not in header and "batch_norm" not in header


def test_grouped_and_transposed_convolutions_stay_library_calls(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    torch.manual_seed(0)
    grouped, transposed = nn.Conv2d(4, 8, 3, padding=1, groups=2), nn.ConvTranspose2d(4, 6, 3, stride=2)
    x = torch.randn(2, 4, 8, 8)
    for i, model in enumerate((grouped, transposed)):
        compiled = _compile(model, tmp_path / str(i))
        with torch.no_grad():
            torch.testing.assert_close(compiled(x), model(x), **TOLERANCE[torch.float32])
        assert not _templates(tmp_path / str(i))
