"""Loads that a select keeps only in part (codegen/triton_guards.py) and selects
between loads (codegen/triton_selects.py): the Triton kernel of a cat fused into its
reader fetches each operand only where the cat takes it, and computes what eager does."""

from __future__ import annotations

import pytest
import torch

import strata


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def _kernel_lines(folder) -> list[str]:
    sources = [p.read_text() for p in folder.rglob("k*.py")]
    return [line.strip() for text in sources for line in text.splitlines()]


@pytest.mark.parametrize("length", [64, 9000])  # one tile a row; a looped (split) row
def test_a_cat_of_loads_is_one_load_through_a_selected_pointer(tmp_path, length):
    def f(x, a, b, c):
        return (x * torch.cat([a, b, c], 0)).sum(-1)

    args = (torch.randn(length), torch.randn(48, length), torch.randn(16, length), torch.randn(20, length))
    c = strata.compile(f, options={"codegen": "triton", "trace.enabled": True, "trace.dir": str(tmp_path)})
    torch.testing.assert_close(c(*args), f(*args), rtol=1e-4, atol=1e-3)
    lines = _kernel_lines(tmp_path)
    loads = [line for line in lines if "tl.load(" in line and ("in1" in line or "in2" in line)]
    assert len(loads) == 1 and "tl.where(" in loads[0], loads
    assert any(line.startswith("for roffset") for line in lines) == (length > 64)  # the looped variant too


def test_a_load_beside_a_computed_operand_is_masked_by_the_select(tmp_path):
    """cat(a, exp(b)): a's load is kept where the position falls in a, and fetches
    nothing elsewhere; b's feeds an exp, which is computed everywhere."""
    def f(x, a, b):
        return (x * torch.cat([a, b.exp()], 0)).sum(-1)

    args = (torch.randn(64), torch.randn(48, 64), torch.randn(16, 64))
    c = strata.compile(f, options={"codegen": "triton", "trace.enabled": True, "trace.dir": str(tmp_path)})
    torch.testing.assert_close(c(*args), f(*args), rtol=1e-4, atol=1e-4)
    (a_load,) = [line for line in _kernel_lines(tmp_path) if "tl.load(in1" in line]
    assert "mask=" in a_load and "v" in a_load.split("mask=")[1], a_load
