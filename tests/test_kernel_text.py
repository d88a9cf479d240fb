"""dialects/kernel_text.py: a kernel-level module split into its program's text and a
KernelText per kernel.func, and joined again, is the same module; a KernelText answers
what the runtime and the code generators ask of a kernel without parsing."""

from __future__ import annotations

import pytest
import torch

import strata
from strata.dialects import kernel as kd
from strata.dialects.kernel_text import KernelText, as_func, join, split
from strata.runtime import graph_cache


def _fn(x, y):
    return torch.softmax(x * y + 1, dim=-1), (x - y).sum(0)


@pytest.fixture(params=[False, True], ids=["static", "dynamic"])
def stored(request, tmp_path, monkeypatch):
    """The graph cache's entry (program text, KernelTexts) for _fn's compile."""
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()
    with torch.no_grad():
        strata.compile(_fn, dynamic=request.param)(torch.randn(5, 6), torch.randn(5, 6))
    (entry,) = (tmp_path / graph_cache.KIND).glob(f"*{graph_cache.SUFFIX}")
    program, kernels, _ = graph_cache.read(entry.name.removesuffix(graph_cache.SUFFIX))
    return program, kernels, request.param


def test_split_and_join_give_the_same_module(stored):
    program, kernels, _ = stored
    module = join(program, kernels)
    funcs = [op for op in module.ops if isinstance(op, kd.FuncOp)]
    assert [f.sym_name.data for f in funcs] == [k.name for k in kernels] and len(funcs) >= 2
    again_program, again_kernels = split(module)
    assert again_program == program
    assert [k.to_json() for k in again_kernels] == [k.to_json() for k in kernels]


def test_a_kernel_text_answers_as_its_func_does(stored):
    _, kernels, dynamic = stored
    for k in kernels:
        lazy = KernelText.from_json(k.to_json())  # nothing parsed yet
        assert lazy._func is None
        assert (lazy.sym_name, lazy.text, str(lazy)) == (k.sym_name, k.text, k.text)
        func = as_func(lazy)
        assert lazy._func is func and as_func(func) is func
        assert str(func) == k.text  # printed alone, the text the code generators key on
        assert lazy.symbol_names == func.symbol_names and lazy.source_ops == func.source_ops
        assert lazy.num_buffers == func.num_buffers == len(func.block.args)
        assert KernelText.of(func).to_json() == k.to_json()
    assert any(k.symbol_names for k in kernels) == dynamic


def test_a_text_that_is_not_its_kernel_is_refused(stored):
    _, kernels, _ = stored
    a, b = kernels[0], kernels[1]
    wrong = KernelText(b.text, a.name, a.symbol_names, a.source_ops, a.num_buffers)
    with pytest.raises(ValueError, match=f"kernel {a.name}"):
        as_func(wrong)
