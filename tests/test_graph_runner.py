"""The generated runner of a compiled graph (runtime/graph_runner.py), its argument
entry and its cached views (runtime/views.py)."""

from __future__ import annotations

import pytest
import torch

from strata.codegen.llvm_cpu import compile_kernel
from strata.dialects.context import parse_module, strata_context
from strata.passes.fuse import FusePass
from strata.runtime.compiled_graph import CompiledGraph
from strata.runtime.graph_runner import InlineStep, generate_runner
from strata.runtime.views import ViewCache, reinterpret


def _t(*dims: int) -> str:
    return "!strata.tensor<[" + ", ".join(map(str, dims)) + "], f32>"


# views of an argument feeding a matrix product and a kernel; two views returned
VIEWS_AND_PRODUCT = f"""builtin.module {{
func.func @graph(%x: {_t(4, 6)}, %w: {_t(6, 5)}) -> ({_t(4, 5)}, {_t(4, 6)}, {_t(2, 6)}) {{
  %r = prim.reshape %x {{shape = [6 : i64, 4 : i64]}} : ({_t(4, 6)}) -> {_t(6, 4)}
  %p = prim.permute %r {{dims = array<i64: 1, 0>}} : ({_t(6, 4)}) -> {_t(4, 6)}
  %m = prim.mm %p, %w : ({_t(4, 6)}, {_t(6, 5)}) -> {_t(4, 5)}
  %e = prim.exp %m : ({_t(4, 5)}) -> {_t(4, 5)}
  %s = prim.slice %p {{start = [1 : i64, 0 : i64], limit = [3 : i64, 6 : i64], step = array<i64: 1, 1>}} : ({_t(4, 6)}) -> {_t(2, 6)}
  func.return %e, %p, %s : {_t(4, 5)}, {_t(4, 6)}, {_t(2, 6)}
}}}}"""


def _graph() -> CompiledGraph:
    module = parse_module(VIEWS_AND_PRODUCT)
    FusePass().apply(strata_context(), module)
    return CompiledGraph(module, compile_kernel, torch.device("cpu"))


def _expected(x: torch.Tensor, w: torch.Tensor) -> tuple[torch.Tensor, ...]:
    p = x.reshape(6, 4).t()
    return (p @ w).exp(), p, p[1:3]


def test_runner_matches_the_steps_one_by_one():
    graph = _graph()
    assert "prim.permute" in graph.runner_source and "k0" in graph.runner_source
    x, w = torch.randn(4, 6), torch.randn(6, 5)
    for _ in range(3):  # the views are learned on the first call, reused after
        for got, want in zip(graph([x, w]), _expected(x, w)):
            torch.testing.assert_close(got, want)
    # each step's own closure, called from a loop, gives the same values
    regs: list = [None] * graph._registers
    env: dict = {}
    graph._enter([x, w], regs, env)
    for step, dead in graph._plan:
        assert callable(step)
        step(regs, env)
        for i in dead:
            regs[i] = None
    for slot, want in zip(graph._result_slots, _expected(x, w)):
        torch.testing.assert_close(regs[slot], want)


def test_returned_views_alias_the_argument():
    graph = _graph()
    x, w = torch.randn(4, 6), torch.randn(6, 5)
    for _ in range(2):
        _, p, s = graph([x, w])
        assert p.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
        assert s.stride() == (1, 4) and s.storage_offset() == 1


def test_an_argument_laid_out_otherwise_is_copied_first():
    graph = _graph()
    w = torch.randn(6, 5)
    graph([torch.randn(4, 6), w])
    x = torch.randn(6, 4).t()  # other strides than the program's
    for got, want in zip(graph([x, w]), _expected(x, w)):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("bad", [torch.randn(24), 3, None])
def test_a_wrong_argument_is_named(bad):
    graph = _graph()
    with pytest.raises(ValueError, match="argument 0: expected a tensor of rank 2"):
        graph([bad, torch.randn(6, 5)])


def test_view_cache_learns_each_layout():
    assert reinterpret is not None
    cache = ViewCache(lambda x: x.reshape(2, 12))
    a = torch.randn(4, 6)
    torch.testing.assert_close(cache(a), a.reshape(2, 12))
    assert cache.known[0][0] == (6, 1)
    b = torch.randn(10, 6)[3:7]  # same strides, another storage offset
    out = cache(b)
    torch.testing.assert_close(out, b.reshape(2, 12))
    assert out.storage_offset() == b.storage_offset()


def test_view_cache_does_not_remember_a_copy():
    cache = ViewCache(lambda x: x.reshape(24))
    t = torch.randn(6, 4).t()  # not viewable as one dim: reshape copies
    torch.testing.assert_close(cache(t), t.reshape(24))
    assert cache.known[0][0] is None
    t[0, 0] = 5.0
    assert cache(t)[0] == 5.0  # a fresh copy each call, never a stale alias


def test_generated_runner_drops_dead_registers():
    seen = []

    def record(regs: list, env: dict) -> None:
        seen.append(list(regs))

    inline = InlineStep(["regs[1] = {f}(regs[0])"], {"f": lambda x: x + 1}, lambda regs, env: None, "add one")
    run, source = generate_runner([(inline, (0,)), (record, ())])
    regs = [1, None]
    run(regs, {})
    assert seen == [[None, 2]]
    assert "# add one" in source and "regs[0] = None" in source
