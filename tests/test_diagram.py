"""trace.graph_diagram: the fused graph of a GPT block with a graph break and an op no
lowering covers, as DOT text, and as SVG and PNG where graphviz's `dot` is installed."""

from __future__ import annotations

import re
import shutil
import warnings

import pytest
import torch

import strata
from strata.frontend.inspection import diagram
from strata.testing.models import TransformerBlock
from strata.testing.opaque import opaque

pytestmark = pytest.mark.filterwarnings("ignore:strata. no lowering covers")
HAVE_DOT = shutil.which("dot") is not None


class GPTWithBreak(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.block = TransformerBlock(16, 2).eval()

    def forward(self, x):
        x = self.block(x)
        torch._dynamo.graph_break()
        return opaque(x, x) + 1


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    folder = tmp_path_factory.mktemp("trace")
    compiled = strata.compile(GPTWithBreak(), options={"trace.graph_diagram": True, "trace.dir": str(folder)})
    with torch.no_grad():
        compiled(torch.randn(2, 5, 16))
    graphs = sorted(folder.iterdir(), key=lambda p: int(p.name.split("_")[1]))
    return graphs


def test_one_diagram_per_graph_beside_the_ir(traced):
    assert len(traced) == 2  # the graph break splits the function in two
    for graph in traced:
        assert (graph / "graph.dot").exists()
        assert (graph / "2_kernel.mlir").exists()  # a diagram turns tracing on


def test_kernels_are_boxes_and_buffers_edges(traced):
    dot = (traced[0] / "graph.dot").read_text()
    assert dot.startswith("digraph strata {")
    kernels = re.findall(r'^  (k\d+) \[label="([^"]*)", shape="box", style="rounded,filled", fillcolor="#d9f2d9"', dot, re.M)
    assert [name for name, _ in kernels] == [f"k{i}" for i in range(len(kernels))] and len(kernels) >= 4
    norm = dict(kernels)["k0"]
    assert norm.startswith("k0\\n[10] x reduce [16]\\nnative_layer_norm\\nmodels.py:")  # (2, 5) walked as one dim
    assert re.search(r"\\n[\d.]+ (B|KiB)$", norm)  # the bytes it moves
    assert '"prim.addmm (library call)\\naddmm @ models.py:' in dot
    assert '"prim.sdpa (library call)' in dot  # the block's written-out attention
    assert re.search(r'^  in0 -> k0 \[label="\[2, 5, 16\] f32"\];$', dot, re.M)  # a buffer
    assert re.search(r'^  k\d+ -> out0 \[label="\[2, 5, 16\] f32"\];$', dot, re.M)
    assert "#ffd9d9" not in dot.split("subgraph cluster_legend")[0]  # no fallback in graph 0
    assert 'label="graph_' in dot and "library calls, 0 eager fallbacks" in dot


def test_fallbacks_are_drawn_in_their_own_colour_with_the_reason(traced):
    dot = (traced[1] / "graph.dot").read_text()
    (fallback,) = re.findall(r'^  op\d+ \[label="([^"]*)", shape="box", style="filled,bold", fillcolor="#ffd9d9"', dot, re.M)
    assert fallback.startswith("strata_tests::opaque (eager)\\nno decomposition rule for it\\nstrata_tests.opaque @ test_diagram.py:")
    assert "1 eager fallbacks" in dot


@pytest.mark.skipif(not HAVE_DOT, reason="graphviz's dot is not installed")
def test_svg_and_png_are_drawn(traced):
    svg = (traced[1] / "graph.svg").read_text()
    assert svg.lstrip().startswith(("<?xml", "<svg", "<!DOCTYPE")) and "strata_tests::opaque (eager)" in svg
    assert (traced[1] / "graph.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_without_dot_a_one_line_hint(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(diagram, "_hinted", False)
    compiled = strata.compile(lambda x: torch.softmax(x, -1), options={"trace.graph_diagram": True, "trace.dir": str(tmp_path)})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled(torch.randn(3, 4))
    hints = [str(w.message) for w in caught if "graph_diagram" in str(w.message)]
    assert hints == [
        "strata: trace.graph_diagram wrote graph.dot only: graphviz's `dot` is not on PATH "
        "(install graphviz, e.g. `apt-get install graphviz` or `brew install graphviz`, for SVG and PNG)"
    ]
    (graph,) = tmp_path.glob("graph_*")
    assert (graph / "graph.dot").exists() and not (graph / "graph.svg").exists()


def test_the_option_is_listed():
    assert strata.list_options()["trace.graph_diagram"] is False
