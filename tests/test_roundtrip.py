"""Every op of every strata dialect prints and parses back to a structurally equal
module, in the custom and the generic form, over generated modules: one op of every
op class with random operands and properties (testing/op_zoo.py), and random programs
of each level (testing/strategies.py).

A failure prints the module; `strata-opt module.mlir | strata-opt` (add
`--print-op-generic` to both for the generic form) shows the same."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strata.dialects.context import strata_context
from strata.passes.fuse import FusePass
from strata.testing import profiles  # noqa: F401  (loads the hypothesis profile)
from strata.testing import strategies as sst
from strata.testing.checks import check_round_trip
from strata.testing.op_zoo import PARTS, dialect_ops


@pytest.mark.parametrize("dialect", ["aten", "prim", "kernel"])
@given(data=st.data())
def test_every_op_round_trips(dialect, data):
    module = data.draw(sst.op_zoo(dialect), label="module")
    problem = check_round_trip(module)
    assert problem is None, problem


@pytest.mark.parametrize("level", ["aten", "prim"])
@given(data=st.data())
def test_programs_round_trip(level, data):
    program = data.draw(sst.programs(level), label="program")
    problem = check_round_trip(program.module)
    assert problem is None, problem


@given(program=sst.prim_programs())
def test_kernel_programs_round_trip(program):
    module = program.module.clone()
    FusePass().apply(strata_context(), module)
    problem = check_round_trip(module)
    assert problem is None, problem


@pytest.mark.parametrize("dialect", ["aten", "prim", "kernel"])
def test_the_zoo_holds_every_op(dialect):
    """The zoo's parts together hold every op class of the dialect."""
    seen: set[str] = set()

    @settings(max_examples=3, derandomize=True)
    @given(data=st.data())
    def collect(data):
        for part in range(PARTS[dialect]):
            seen.update(op.name for op in data.draw(sst.op_zoo(dialect, part)).walk())

    collect()
    missing = {cls.name for cls in dialect_ops(dialect)} - seen
    assert not missing, f"op_zoo('{dialect}') lacks {sorted(missing)}"
