"""schedule-collectives on programs that hold collectives: generated kernel.programs of
matrix products, all_reduces, all_gathers and their waits. After the pass the program
computes the same values (run in a process group of one rank), every value is made
before it is read, the collectives keep their order of issue, and each is issued no
later, and waited for no sooner, than before."""

from __future__ import annotations

import random

import pytest
import torch
import torch.distributed as dist
from hypothesis import given, settings
from hypothesis import strategies as st

from strata.dialects import kernel as kd
from strata.dialects.context import parse_module
from strata.dialects.prim_collectives import COLLECTIVE_OPS, WaitOp
from strata.frontend.compile_graph import run_pipeline
from strata.runtime.compiled_graph import CompiledGraph

T = "!strata.tensor<[4, 4], f32>"
G = "!strata.tensor<[4, 4], f32>"  # one rank: an all_gather keeps the shape


@pytest.fixture(scope="module", autouse=True)
def one_rank_group():
    if dist.is_initialized():
        yield
        return
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def program_text(rng: random.Random) -> str:
    """A kernel.program of two arguments: each step a product of two values made before,
    or a collective of one with its wait at once (where torch's graphs have it); it
    returns the last three values."""
    values = ["%a", "%b"]
    lines = []
    for i in range(rng.randint(2, 10)):
        kind = rng.choice(["mm", "all_reduce", "all_gather"])
        x = rng.choice(values)
        if kind == "mm":
            lines.append(f"%v{i} = prim.mm {x}, {rng.choice(values)} : ({T}, {T}) -> {T}")
        else:
            props = '{reduce_op = "sum", group = "0"}' if kind == "all_reduce" else '{group_size = 1 : i64, group = "0"}'
            lines.append(f"%c{i} = prim.{kind} {x} {props} : ({T}) -> {T}")
            lines.append(f"%v{i} = prim.wait %c{i} : ({T}) -> {T}")
        values.append(f"%v{i}")
    results = values[-3:]
    types = ", ".join([T] * len(results))
    body = "\n  ".join(lines)
    return (f'kernel.program @graph attributes {{function_type = ({T}, {T}) -> ({types}), arg_symbols = ["", ""], '
            f"arg_strides = [[4 : i64, 1 : i64], [4 : i64, 1 : i64]]}} {{\n^bb0(%a: {T}, %b: {T}):\n  {body}\n"
            f"  kernel.return {', '.join(results)} : {types}\n}}")


def _run(module, args):
    return CompiledGraph(module, lambda k: None, torch.device("cpu"))(list(args))


@settings(max_examples=60, deadline=None)
@given(st.randoms(use_true_random=False))
def test_scheduling_keeps_values_and_order(rng):
    text = program_text(rng)
    before, after = parse_module(text), parse_module(text)
    run_pipeline(after, ["schedule-collectives"])
    args = [torch.randn(4, 4), torch.randn(4, 4)]
    for got, want in zip(_run(after, args), _run(before, args)):
        torch.testing.assert_close(got, want)
    old, new = _positions(before), _positions(after)
    ops = _ops(after)
    for i, op in enumerate(ops):  # every value made before it is read
        assert all(new[_name(v)] < i for v in op.operands if _name(v) in new), text
    issues = [_name(o.results[0]) for o in ops if isinstance(o, COLLECTIVE_OPS)]
    assert issues == sorted(issues, key=old.get), text  # the order of issue kept
    assert all(new[name] <= old[name] for name in issues), text  # issued no later
    for w in (o for o in ops if isinstance(o, WaitOp)):  # waited for no sooner after its issue
        assert new[_name(w.result)] - new[_name(w.x)] >= old[_name(w.result)] - old[_name(w.x)], text


def test_generated_programs_reach_the_pattern():
    """The share of generated programs the pass changes (it aims the property above)."""
    changed = 0
    for seed in range(200):
        module = parse_module(program_text(random.Random(seed)))
        before = str(module)
        run_pipeline(module, ["schedule-collectives"])
        changed += str(module) != before
    assert changed >= 0.2 * 200, changed


def _ops(module) -> list:
    return list(next(o for o in module.ops if isinstance(o, kd.ProgramOp)).block.ops)


def _positions(module) -> dict[str, int]:
    return {_name(r): i for i, o in enumerate(_ops(module)) for r in o.results}


def _name(v) -> str:
    return v.name_hint or str(id(v))
