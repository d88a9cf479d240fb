"""Provenance: every kernel names its aten ops and the user's file:line; an exception
raised while compiling names the pass (or code generator), the op and the source line."""

from __future__ import annotations

import inspect
import re

import pytest
import torch
from torch._dynamo.exc import BackendCompilerFailed

import strata
from strata.dialects import prim
from strata.frontend.inspection.errors import CompileError
from strata.passes import simplify
from strata.passes.decompositions import RULES
from strata.testing.models import TransformerBlock
from strata.testing.opaque import opaque

pytestmark = pytest.mark.filterwarnings("ignore:strata. no lowering covers")


class GPTWithBreak(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.block = TransformerBlock(16, 2).eval()

    def forward(self, x):
        x = self.block(x)
        torch._dynamo.graph_break()
        return opaque(x, x) + 1


def scaled_softmax(x):
    return torch.softmax(x.t() * 2, dim=-1)  # SOFTMAX


def _line(fn, marker: str) -> int:
    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, line in enumerate(lines) if marker in line)


def _compile_error(excinfo) -> CompileError:
    e = excinfo.value
    inner = e.inner_exception if isinstance(e, BackendCompilerFailed) else e
    assert isinstance(inner, CompileError), repr(inner)
    return inner


def test_kernels_name_their_aten_ops_and_the_users_line(tmp_path):
    f = strata.compile(scaled_softmax, options={"trace.enabled": True, "trace.dir": str(tmp_path)})
    f(torch.randn(6, 4))
    (graph,) = tmp_path.iterdir()
    where = f"{__file__}:{_line(scaled_softmax, '# SOFTMAX')} in scaled_softmax"
    ir = (graph / "2_kernel.mlir").read_text()
    (sources,) = re.findall(r"sources = \[([^\]]*)\]", ir)
    assert sources.split(", ") == [
        f'"aten.permute.default @ {where}"',
        f'"aten.mul.Tensor @ {where}"',
        f'"aten._softmax.default @ {where}"',
    ]
    header = (graph / "kernels" / "k0.ll").read_text().splitlines()[:2]
    assert header[0] == "; strata kernel k0"
    assert header[1] == f"; from aten ops: aten.permute.default @ {where}, aten.mul.Tensor @ {where}, aten._softmax.default @ {where}"


def test_gpt_block_kernels_point_into_the_model(tmp_path):
    compiled = strata.compile(GPTWithBreak(), options={"trace.enabled": True, "trace.dir": str(tmp_path)})
    with torch.no_grad():
        compiled(torch.randn(2, 5, 16))
    first, second = sorted(tmp_path.iterdir(), key=lambda p: int(p.name.split("_")[1]))
    ir = (first / "2_kernel.mlir").read_text()
    block_file = inspect.getsourcefile(TransformerBlock)
    gelu = _line(TransformerBlock.forward, "self.mlp(self.ln2(x))")
    for sources in re.findall(r"sources = \[([^\]]*)\]", ir):  # every kernel, every op
        for entry in sources.split('", "'):
            assert re.fullmatch(rf'"?aten\.\S+ @ {re.escape(block_file)}:\d+ in forward"?', entry), entry
    assert f"aten.native_layer_norm.default @ {block_file}:{gelu} in forward" in ir
    # The eager fallback keeps its source line in the program too.
    assert f'strata_tests::opaque"' in (second / "2_kernel.mlir").read_text()
    assert f"test_provenance.py\\22, line {_line(GPTWithBreak.forward, 'opaque(')}" in (second / "2_kernel.mlir").read_text()


def test_a_failing_rule_names_the_pass_the_op_and_the_line(monkeypatch):
    def broken(op, b):
        raise RuntimeError("boom")

    monkeypatch.setitem(RULES, "aten::gelu", broken)
    compiled = strata.compile(GPTWithBreak())
    with pytest.raises(BackendCompilerFailed) as excinfo, torch.no_grad():
        compiled(torch.randn(2, 5, 16))
    error = _compile_error(excinfo)
    block_file = inspect.getsourcefile(TransformerBlock)
    mlp_line = inspect.getsourcelines(type(TransformerBlock(16, 2).mlp).forward)
    line = mlp_line[1] + next(i for i, t in enumerate(mlp_line[0]) if "F.gelu" in t)
    assert str(error).splitlines() == [
        f"pass 'decompose' failed on aten.gelu.default at {block_file}:{line} in forward:",
        "    return self.fc2(F.gelu(self.fc1(x)))",
        "  RuntimeError: boom",
    ]
    assert (error.stage, error.op, error.source.line) == ("pass 'decompose'", "aten.gelu.default", line)
    assert "pass 'decompose' failed on aten.gelu.default at" in str(excinfo.value)  # what the user sees


def test_a_failing_rewrite_pattern_is_traced_to_its_op(monkeypatch):
    def broken(self, op, rewriter):
        if isinstance(op, prim.PermuteOp):
            raise ValueError("bad permute")

    monkeypatch.setattr(simplify.FoldPermute, "match_and_rewrite", broken)
    with pytest.raises(BackendCompilerFailed) as excinfo:
        strata.compile(scaled_softmax)(torch.randn(6, 4))
    error = _compile_error(excinfo)
    line = _line(scaled_softmax, "# SOFTMAX")
    assert str(error).splitlines()[0] == (
        f"pass 'simplify' failed on prim.permute (from aten.permute.default) at {__file__}:{line} in scaled_softmax:"
    )
    assert "ValueError: bad permute" in str(error)


def test_a_failing_code_generator_names_the_kernel_and_its_sources(monkeypatch):
    from strata.codegen import llvm_cpu

    def broken(func):
        raise KeyError("no such intrinsic")

    monkeypatch.setattr(llvm_cpu, "compile_kernel", broken)
    with pytest.raises(BackendCompilerFailed) as excinfo:
        strata.compile(scaled_softmax)(torch.randn(6, 4))
    error = _compile_error(excinfo)
    where = f"{__file__}:{_line(scaled_softmax, '# SOFTMAX')} in scaled_softmax"
    assert str(error).splitlines() == [
        "code generator 'llvm' failed on kernel k0; the kernel computes:",
        f"    aten.permute.default @ {where}",
        f"    aten.mul.Tensor @ {where}",
        f"    aten._softmax.default @ {where}",
        "  KeyError: 'no such intrinsic'",
    ]
