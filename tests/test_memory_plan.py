"""Memory planning (runtime/memory_plan.py): intermediates share a workspace only when
their lifetimes do not overlap, results never live in it, and calls stay independent."""

from __future__ import annotations

import threading

import torch
from hypothesis import given
from hypothesis import strategies as st

import strata
from strata.runtime import compiled_graph as cg
from strata.runtime.memory_plan import plan_memory
from strata.testing import profiles  # noqa: F401  (loads the hypothesis profile)
from strata.testing.models import TransformerBlock

F32 = torch.float32


def _lifetimes(steps, root_of):
    start, end = {}, {}
    for i, (operands, results, _) in enumerate(steps):
        for r in results:
            start.setdefault(root_of(r), i)
        for v in (*operands, *results):
            end[root_of(v)] = max(end.get(root_of(v), i), i)
    return start, end


@st.composite
def programs(draw):
    """Random straight-line programs: each step reads earlier slots and makes new ones;
    some steps are views (their result aliases their operand)."""
    n_args = draw(st.integers(1, 3))
    slots = list(range(n_args))
    steps, shapes, plannable = [], {}, set()
    for _ in range(draw(st.integers(1, 12))):
        operands = draw(st.lists(st.sampled_from(slots), min_size=1, max_size=3))
        view = draw(st.booleans()) and len(operands) == 1
        result = len(slots)
        slots.append(result)
        steps.append((operands, [result], view))
        shapes[result] = ((draw(st.integers(0, 300)),), F32, None)
        if not view and draw(st.booleans()):
            plannable.add(result)
    escaping = set(draw(st.lists(st.sampled_from(slots[n_args:]), min_size=1, max_size=2)))
    return steps, shapes, plannable, escaping


@given(programs())
def test_live_values_never_share_bytes(program):
    steps, shapes, plannable, escaping = program
    plan = plan_memory(steps, shapes, plannable, escaping)
    root = {}
    for operands, results, view in steps:
        for r in results:
            root[r] = root.get(operands[0], operands[0]) if view else r
    start, end = _lifetimes(steps, lambda v: root.get(v, v))
    escaping_roots = {root.get(v, v) for v in escaping}
    ranges = {}
    for p in plan.values:
        assert p.slot in plannable and p.slot not in escaping_roots
        nbytes = shapes[p.slot][0][0] * 4
        assert p.offset % 64 == 0 and p.offset + nbytes <= plan.size
        ranges[p.slot] = (p.offset, p.offset + nbytes)
    for a, (a0, a1) in ranges.items():
        for b, (b0, b1) in ranges.items():
            if a < b and start[a] <= end[b] and start[b] <= end[a]:
                assert a1 <= b0 or b1 <= a0, f"slots {a} and {b} are live together and overlap"


def test_reuse_after_death():
    # a -> b -> c -> d: b and d may share bytes (b is dead when d is made), c may not.
    steps = [([0], [1], False), ([1], [2], False), ([2], [3], False), ([3], [4], False)]
    shapes = {s: ((256,), F32, None) for s in range(1, 5)}
    plan = plan_memory(steps, shapes, {1, 2, 3}, {4})
    offsets = {p.slot: p.offset for p in plan.values}
    assert set(offsets) == {1, 2, 3}
    assert offsets[1] == offsets[3] != offsets[2]
    assert plan.size == 2 * 1024


def test_a_view_keeps_its_root_alive():
    # 1 is viewed as 2, which step 3 reads after 1's own last use.
    steps = [([0], [1], False), ([1], [2], True), ([0], [3], False), ([2, 3], [4], False)]
    shapes = {s: ((64,), F32, None) for s in range(1, 5)}
    plan = plan_memory(steps, shapes, {1, 3}, {4})
    offsets = {p.slot: p.offset for p in plan.values}
    assert offsets[1] != offsets[3]


def test_a_returned_view_is_not_planned():
    steps = [([0], [1], False), ([1], [2], True)]
    plan = plan_memory(steps, {1: ((64,), F32, None), 2: ((64,), F32, None)}, {1}, {2})
    assert plan.values == ()


def _compiled_block(monkeypatch):
    graphs = []
    post = cg.CompiledGraph.__post_init__

    def keep(self):
        post(self)
        graphs.append(self)

    monkeypatch.setattr(cg.CompiledGraph, "__post_init__", keep)
    torch.manual_seed(0)
    block = TransformerBlock(32, 4).eval()
    return block, strata.compile(block), graphs


def test_results_survive_later_calls(monkeypatch):
    block, compiled, graphs = _compiled_block(monkeypatch)
    xs = [torch.randn(2, 9, 32) for _ in range(3)]
    with torch.no_grad():
        outs = [compiled(x) for x in xs]
        (graph,) = graphs
        assert graph._memory is not None and len(graph._memory.values) >= 3
        ((workspace,),) = graph._workspaces.values()
        arena = {t.untyped_storage().data_ptr() for _, t in workspace}
        assert len(arena) == 1  # one allocation for all the intermediates
        for x, out in zip(xs, outs):
            assert out.untyped_storage().data_ptr() not in arena
            torch.testing.assert_close(out, block(x))


def test_concurrent_calls_use_their_own_workspace(monkeypatch):
    block, compiled, graphs = _compiled_block(monkeypatch)
    xs = [torch.randn(2, 9, 32) for _ in range(4)]
    results: dict[int, torch.Tensor] = {}
    with torch.no_grad():
        compiled(xs[0])
        barrier = threading.Barrier(len(xs))

        def run(i):
            with torch.no_grad():
                barrier.wait()
                for _ in range(20):
                    results[i] = compiled(xs[i])

        threads = [threading.Thread(target=run, args=(i,)) for i in range(len(xs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for i, x in enumerate(xs):
            torch.testing.assert_close(results[i], block(x))


def test_graphs_on_one_stream_share_one_arena():
    """runtime/shared_workspace.py: the arena is as large as the largest plan, each graph
    keeps its views until the arena grows, and a second holder waits its turn (gets
    None: a workspace of its own)."""
    from strata.runtime import shared_workspace
    from strata.runtime.memory_plan import MemoryPlan, Planned

    class Graph:
        def __init__(self):
            self.shared_views = {}

    small = MemoryPlan((Planned(0, (4,), torch.float32, 0),), 64)
    large = MemoryPlan((Planned(1, (100,), torch.float32, 0),), 512)
    a, b, device, stream = Graph(), Graph(), torch.device("cpu"), object()
    first = shared_workspace.acquire(a, small, device, stream)
    assert shared_workspace.acquire(b, large, device, stream) is None  # in use
    shared_workspace.release(device, stream)
    assert shared_workspace.acquire(a, small, device, stream) is first  # its views, kept
    shared_workspace.release(device, stream)
    grown = shared_workspace.acquire(b, large, device, stream)
    shared_workspace.release(device, stream)
    assert a.shared_views == {}  # the arena grew: the stale views are dropped
    again = shared_workspace.acquire(a, small, device, stream)
    shared_workspace.release(device, stream)
    assert again[0][1].data_ptr() == grown[0][1].data_ptr()  # one arena for both
