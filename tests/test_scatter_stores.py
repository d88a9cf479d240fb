"""A scatter into a graph argument stored by the kernel that computes its rows
(passes/fusion/scatter_stores.py), run by the runtime: in the argument's memory when
the caller writes the result back into it, into a copy otherwise; and a decode-style
KV cache update through torch.compile."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from strata.codegen.triton_gpu import compile_kernel
from strata.dialects import kernel as kd
from strata.dialects.context import parse_module, strata_context
from strata.passes.fuse import FusePass
from strata.runtime.compiled_graph import CompiledGraph
from strata.testing.checks import check_values, print_module

IR = (Path(__file__).parent / "lit" / "fuse" / "scatter-into-cache-stored-by-its-kernel.mlir").read_text()


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def _graph(written_back: dict[int, int]) -> CompiledGraph:
    module = parse_module(IR)
    FusePass().apply(strata_context(), module)
    launches = [op for op in module.walk() if isinstance(op, kd.LaunchOp)]
    assert [op.updates for op in launches] == [[0]]  # the check and the scatter in one kernel
    return CompiledGraph(module, lambda f: compile_kernel(f, "cpu"), torch.device("cpu"), written_back=written_back)


def _inputs(pos: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(pos + 20)
    return torch.randn(1, 2, 12, 4, generator=g), torch.tensor([pos]), torch.randn(1, 1, 2, 4, generator=g)


def _expected(cache: torch.Tensor, pos: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    out = cache.clone()
    out[:, :, pos] = (k * k).transpose(1, 2)
    return out


@pytest.mark.parametrize("pos", [0, 5, 11, -1])
def test_written_back_result_is_written_into_the_argument(pos):
    graph = _graph({0: 0})
    cache, p, k = _inputs(pos)
    want = _expected(cache, p, k)
    (got,) = graph([cache, p, k])
    assert got.data_ptr() == cache.data_ptr()  # the argument itself, updated
    assert torch.equal(got, want) and torch.equal(cache, want)


def test_a_result_nobody_writes_back_leaves_the_argument_alone():
    graph = _graph({})
    cache, p, k = _inputs(3)
    before = cache.clone()
    (got,) = graph([cache, p, k])
    assert got.data_ptr() != cache.data_ptr() and torch.equal(cache, before)
    assert torch.equal(got, _expected(before, p, k))


def test_a_position_out_of_range_raises_before_any_store():
    graph = _graph({0: 0})
    cache, _, k = _inputs(0)
    before = cache.clone()
    with pytest.raises(IndexError, match="out of bounds"):
        graph([cache, torch.tensor([12]), k])
    assert torch.equal(cache, before)


def _cache_update_ir(h: int, s: int, t: int, e: int, transposed: bool, reduced: int, pairs: bool = False) -> str:
    """A graph writing t rows (of h heads, e wide) into a [1, h, s, e] cache at
    positions p + 0 … p + t - 1 (p an argument): the rows are squares, or sums of
    squares over a last dim of `reduced`, computed [1, t, h, e] and transposed, or
    [1, h, t, e] as they are; with `pairs` (e even, nothing reduced), squares computed
    over [.., e / 2, 2] and viewed as [.., e], as a rotary embedding's are."""
    def ty(*dims, dtype="f32"):
        return f"!strata.tensor<[{', '.join(map(str, dims))}], {dtype}>"

    rows = (1, t, h, e) if transposed else (1, h, t, e)
    src = ty(*rows, reduced) if reduced else ty(*rows)  # the argument k's type
    lines = [
        f'%iota = prim.iota {{length = {t} : i64, start = 0 : i64, step = 1 : i64, dtype = "i64"}} : {ty(t, dtype="i64")}',
        f"%p = prim.broadcast_in_dim %pos {{shape = [{t} : i64], broadcast_dimensions = array<i64: 0>}} : ({ty(1, dtype='i64')}) -> {ty(t, dtype='i64')}",
        f"%at = prim.add %p, %iota : ({ty(t, dtype='i64')}, {ty(t, dtype='i64')}) -> {ty(t, dtype='i64')}",
        f'%n = prim.full {{shape = [{t} : i64], value = {s} : i64, dtype = "i64"}} : {ty(t, dtype="i64")}',
        f'%c = prim.check_index %at, %n {{dim = 2 : i64, wraps = 1 : i64, indexing_op = "aten.index_put.default"}} : ({ty(t, dtype="i64")}, {ty(t, dtype="i64")}) -> {ty(t, dtype="i64")}',
        f"%i = prim.broadcast_in_dim %c {{shape = [1 : i64, {h} : i64, {t} : i64, {e} : i64], broadcast_dimensions = array<i64: 2>}} : ({ty(t, dtype='i64')}) -> {ty(1, h, t, e, dtype='i64')}",
    ]
    if pairs:
        src = ty(*rows[:-1], e // 2, 2)
        lines += [f"%sq = prim.mul %k, %k : ({src}, {src}) -> {src}",
                  f"%r = prim.reshape %sq {{shape = [{', '.join(f'{n} : i64' for n in rows)}]}} : ({src}) -> {ty(*rows)}"]
    elif reduced:
        lines += [f"%sq = prim.mul %k, %k : ({src}, {src}) -> {src}",
                  f"%r = prim.sum %sq {{dims = array<i64: 4>}} : ({src}) -> {ty(*rows)}"]
    else:
        lines += [f"%r = prim.mul %k, %k : ({src}, {src}) -> {src}"]
    if transposed:
        lines += [f"%t = prim.permute %r {{dims = array<i64: 0, 2, 1, 3>}} : ({ty(*rows)}) -> {ty(1, h, t, e)}"]
    else:
        lines += [f"%t = prim.convert_element_type %r {{dtype = \"f32\"}} : ({ty(*rows)}) -> {ty(1, h, t, e)}"]
    lines += [
        f'%new = prim.scatter %cache, %i, %t {{dim = 2 : i64, reduce = "none", include_self = 1 : i64}} : ({ty(1, h, s, e)}, {ty(1, h, t, e, dtype="i64")}, {ty(1, h, t, e)}) -> {ty(1, h, s, e)}',
        f"func.return %new : {ty(1, h, s, e)}",
    ]
    body = "".join(f"  {line}\n" for line in lines)
    return (f"func.func @graph(%cache: {ty(1, h, s, e)}, %pos: {ty(1, dtype='i64')}, %k: {src}) -> {ty(1, h, s, e)} "
            f'attributes {{strata.device = "cuda"}} {{\n{body}}}\n')


@settings(max_examples=25, deadline=None)
@given(h=st.integers(1, 3), t=st.integers(1, 3), e=st.integers(1, 5), transposed=st.booleans(),
       rows=st.sampled_from(["pointwise", "pairs", "sum of 1", "sum of 3"]), seed=st.integers(0, 1000))
def test_a_folded_scatter_keeps_the_values(h, t, e, transposed, rows, seed):
    """fuse stores the scatter in the kernel of its rows, and the program's values are
    the graph's, for rows computed pointwise (or in pairs) or by a reduction,
    transposed or not."""
    pairs = rows == "pairs"
    if pairs:
        e = 2 * e
    reduced = int(rows.removeprefix("sum of ")) if rows.startswith("sum") else 0
    before = parse_module(_cache_update_ir(h, 12, t, e, transposed, reduced, pairs))
    after = before.clone()
    FusePass().apply(strata_context(), after)
    program = next(op for op in after.ops if isinstance(op, kd.ProgramOp))
    assert not [op for op in program.block.ops if op.name == "prim.scatter"], print_module(after)
    assert check_values(before, after, f"seed={seed}") is None


PROMPT_IR = """
func.func @graph(%cache: !strata.tensor<[1, 2, 12, 4], f32>, %pos: !strata.tensor<["s0"], i64>, %k: !strata.tensor<[1, "s0", 2, 4], f32>) -> !strata.tensor<[1, 2, 12, 4], f32> attributes {strata.device = "cuda"} {
  %n = prim.full {shape = ["s0"], value = 12 : i64, dtype = "i64"} : !strata.tensor<["s0"], i64>
  %c = prim.check_index %pos, %n {dim = 2 : i64, wraps = 1 : i64, indexing_op = "aten.index_put.default"} : (!strata.tensor<["s0"], i64>, !strata.tensor<["s0"], i64>) -> !strata.tensor<["s0"], i64>
  %i = prim.broadcast_in_dim %c {shape = [1 : i64, 2 : i64, "s0", 4 : i64], broadcast_dimensions = array<i64: 2>} : (!strata.tensor<["s0"], i64>) -> !strata.tensor<[1, 2, "s0", 4], i64>
  %r = prim.mul %k, %k : (!strata.tensor<[1, "s0", 2, 4], f32>, !strata.tensor<[1, "s0", 2, 4], f32>) -> !strata.tensor<[1, "s0", 2, 4], f32>
  %t = prim.permute %r {dims = array<i64: 0, 2, 1, 3>} : (!strata.tensor<[1, "s0", 2, 4], f32>) -> !strata.tensor<[1, 2, "s0", 4], f32>
  %new = prim.scatter %cache, %i, %t {dim = 2 : i64, reduce = "none", include_self = 1 : i64} : (!strata.tensor<[1, 2, 12, 4], f32>, !strata.tensor<[1, 2, "s0", 4], i64>, !strata.tensor<[1, 2, "s0", 4], f32>) -> !strata.tensor<[1, 2, 12, 4], f32>
  func.return %new : !strata.tensor<[1, 2, 12, 4], f32>
}
"""


def test_a_prompt_of_symbolic_length_and_its_specialized_graph_write_the_cache():
    """A prefill's graph of symbolic length folds its scatter too; the graph the runtime
    specializes to a recurring length (runtime/specialized_graphs.py) keeps the output
    that updates the cache, so its calls write only the prompt's rows, in place."""
    from strata.passes.specialize_symbols import specialized

    module = parse_module(PROMPT_IR)
    FusePass().apply(strata_context(), module)
    assert [op.updates for op in module.walk() if isinstance(op, kd.LaunchOp)] == [None, [0]]
    graph = CompiledGraph(module, lambda f: compile_kernel(f, "cpu"), torch.device("cpu"), written_back={0: 0},
                          specialize=specialized)
    for call, (t, start) in enumerate([(3, 2), (3, 5), (3, 0), (5, 7)]):
        cache = torch.randn(1, 2, 12, 4, generator=torch.Generator().manual_seed(call))
        pos, k = torch.arange(start, start + t), torch.randn(1, t, 2, 4, generator=torch.Generator().manual_seed(call + 9))
        want = cache.clone()
        want[:, :, pos] = (k * k).transpose(1, 2)
        (got,) = graph([cache, pos, k])
        assert got.data_ptr() == cache.data_ptr() and torch.equal(cache, want), (call, t)
    assert graph.specializations is not None and len(graph.specializations.graphs) == 1  # the length 3, seen again


def test_positions_checked_against_another_size_leave_the_scatter_to_torch():
    """The kernels store without checking: a position checked against any size but the
    cache's dim (here 20, where the cache holds 12) keeps torch's scatter, which raises."""
    module = parse_module(IR.replace("value = 12 : i64", "value = 20 : i64"))
    FusePass().apply(strata_context(), module)
    program = next(op for op in module.ops if isinstance(op, kd.ProgramOp))
    assert [op.name for op in program.block.ops if op.name == "prim.scatter"] == ["prim.scatter"]
    assert all(op.updates is None for op in program.block.ops if isinstance(op, kd.LaunchOp))
