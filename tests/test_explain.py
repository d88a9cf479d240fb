"""strata.explain on real functions: a GPT block with a graph break and an op no
lowering covers; the printed report and the returned data."""

from __future__ import annotations

import contextlib
import inspect
import io
import json

import pytest
import torch

import strata
from strata.testing.models import TransformerBlock
from strata.testing.opaque import opaque


class GPTWithBreak(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.block = TransformerBlock(32, 4).eval()

    def forward(self, x):
        x = self.block(x)
        torch._dynamo.graph_break()  # BREAK
        return opaque(x, x) * 0.5  # opaque


def _line(marker: str) -> int:
    lines, start = inspect.getsourcelines(GPTWithBreak.forward)
    return start + next(i for i, line in enumerate(lines) if f"# {marker}" in line)


def _block_line(text: str) -> int:
    lines, start = inspect.getsourcelines(TransformerBlock.forward)
    return start + next(i for i, line in enumerate(lines) if text in line)


@pytest.fixture(scope="module")
def explained():
    out = io.StringIO()
    with contextlib.redirect_stdout(out), torch.no_grad():
        report = strata.explain(GPTWithBreak(), torch.randn(2, 7, 32))
    return report, out.getvalue()


def test_report_names_the_graph_break_and_where(explained):
    report, text = explained
    assert text.startswith("strata.explain: 2 graphs, 1 graph break")
    assert report.graph_count == 2 and report.graph_break_count == 1
    (brk,) = report.breaks
    assert "torch._dynamo.graph_break()" in brk.reason
    assert "Developer debug context" not in brk.reason  # torch's internals left out
    assert brk.location == f"{__file__}:{_line('BREAK')} in forward"
    assert f"at {__file__}:{_line('BREAK')} in forward:  torch._dynamo.graph_break()" in text


def test_report_lists_kernels_with_their_aten_ops_and_lines(explained):
    report, text = explained
    first = report.graphs[0]
    assert first.kind == "forward" and first.eager_reason is None
    ln1 = _block_line("self.ln1(x)")
    norm = next(k for k in first.kernels if "aten.native_layer_norm.default" in k.aten_ops)
    assert norm.domain == "[14] x reduce [32]"  # (batch, token) walked as one dim (coalesce-dims)
    assert any(loc.endswith(f"models.py:{ln1} in forward") for loc in norm.locations)
    assert f"native_layer_norm  @ models.py:{ln1} in forward" in text
    # The written-out attention (matmul, mask, softmax, matmul) is one library call.
    assert not any("aten._softmax.default" in k.aten_ops for k in first.kernels)
    assert {c.op for c in first.library_calls} == {"prim.addmm", "prim.sdpa"}
    assert "call prim.sdpa" in text


def test_report_counts_ops_per_level_and_times_each_pass(explained):
    report, text = explained
    first = report.graphs[0]
    assert set(first.ops) == {"aten", "prim", "kernel"}
    assert first.ops["aten"]["aten"] > 30 and "prim" not in first.ops["aten"]
    assert first.ops["prim"]["prim"] > first.ops["aten"]["aten"] and "aten" not in first.ops["prim"]
    assert first.ops["kernel"]["kernel"] > 0
    names = [name for name, _ in first.pass_times]
    assert names == ["infer-shapes", "recognize-attention", "decompose", "simplify", "matvec-to-reduction", "fold-grouped-attention", "infer-shapes", "fuse",
                     "coalesce-dims",
                     "schedule-collectives"]
    assert all(s > 0 for _, s in first.pass_times) and first.codegen_s > 0
    assert "compile time    import" in text and "decompose" in text and "codegen" in text


def test_report_lists_the_eager_fallback_with_its_reason(explained):
    report, text = explained
    second = report.graphs[1]
    (fallback,) = second.fallbacks
    assert fallback.op == "strata_tests::opaque"
    assert fallback.reason == "no decomposition rule for it"
    assert fallback.source.endswith(f"{__file__}:{_line('opaque')} in torch_dynamo_resume_in_forward_at_{_line('BREAK')}")
    assert "EAGER strata_tests::opaque: no decomposition rule for it" in text
    assert report.fallbacks == [fallback]
    assert not report.graphs[0].fallbacks


def test_report_estimates_bytes_against_the_unfused_program(explained):
    report, text = explained
    first = report.graphs[0]
    assert isinstance(first.bytes_fused, int) and isinstance(first.bytes_unfused, int)
    assert 0 < first.bytes_fused < first.bytes_unfused
    # Each kernel reads its inputs and writes its outputs once: the norm kernel reads
    # x, weight and bias and writes its result (2*7*32 floats in and out, 2*32 params).
    norm = next(k for k in first.kernels if "aten.native_layer_norm.default" in k.aten_ops)
    assert norm.bytes == 4 * (2 * 7 * 32 * 2 + 2 * 32)
    assert "bytes moved" in text and "less than unfused (estimates)" in text


def test_report_is_data(explained):
    report, _ = explained
    data = json.loads(json.dumps(report.to_dict()))
    assert data["graph_break_count"] == 1
    assert data["graphs"][1]["fallbacks"][0]["op"] == "strata_tests::opaque"
    assert str(report) == "\n".join(str(report).splitlines())


def test_explain_of_a_function_with_an_unsupported_op():
    def f(x):
        s = x.softmax(-1)
        return opaque(s, s) + 1

    report = strata.explain(f, torch.randn(4, 9), print_report=False)
    assert report.graph_count == 1 and not report.breaks
    (graph,) = report.graphs
    assert [f.op for f in graph.fallbacks] == ["strata_tests::opaque"]
    # The fallback splits the work: the softmax before it, the add after it.
    assert [k.aten_ops for k in graph.kernels] == [["aten._softmax.default"], ["aten.add.Tensor"]]
    assert "no lowering covers" not in str(report)  # fallbacks are reported, not warned


def test_explain_reports_a_function_dynamo_skipped():
    def f(x):
        for _ in range(2):
            x = torch.softmax(x, -1)
            torch._dynamo.graph_break()  # in a loop: Dynamo gives up on f
        return x

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        report = strata.explain(f, torch.randn(3, 4))
    text = out.getvalue()
    assert report.graph_count == 0 and report.graph_break_count == 0 and not report.graphs
    (skipped,) = report.skipped
    line = f.__code__.co_firstlineno + 3
    assert skipped.location == f"{__file__}:{line}" and skipped.code == "torch._dynamo.graph_break()  # in a loop: Dynamo gives up on f"
    assert "graph break in loop" in skipped.reason and "Skipping the function and falling back to eager" in skipped.reason
    assert text.startswith("strata.explain: 0 graphs, 0 graph breaks, 1 function Dynamo skipped, 0 kernels")
    assert f"  1. at {__file__}:{line}:  torch._dynamo.graph_break()" in text


def test_explain_checks_options_first():
    with pytest.raises(ValueError, match="trace.graph_diagram"):
        strata.explain(lambda x: x + 1, torch.randn(2), options={"trace.graph_diagramm": True})
