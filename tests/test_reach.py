"""strata.testing.reach (how many generated programs a pass changes) and the aiming of
prim_programs (favour, constants)."""

from __future__ import annotations

import pytest
from xdsl.transforms.dead_code_elimination import DeadCodeElimination

from strata.dialects.context import parse_module
from strata.passes.pow_to_mul import PowToMulPass
from strata.testing import strategies as sst
from strata.testing.reach import Reach, changes, main, reach

SQUARE = """
func.func @graph(%x: !strata.tensor<[4], f32>) -> !strata.tensor<[4], f32> {
  %unused = prim.exp %x : (!strata.tensor<[4], f32>) -> !strata.tensor<[4], f32>
  %two = prim.full {shape = [4 : i64], value = 2.0 : f64, dtype = "f32"} : !strata.tensor<[4], f32>
  %y = prim.pow %x, %two : (!strata.tensor<[4], f32>, !strata.tensor<[4], f32>) -> !strata.tensor<[4], f32>
  func.return %y : !strata.tensor<[4], f32>
}
"""


def test_a_change_is_a_change_beside_dead_code():
    module = parse_module(SQUARE)
    before = str(module)
    assert changes(module, PowToMulPass())
    assert not changes(module, DeadCodeElimination())  # it deletes %unused, which is no pattern
    assert str(module) == before  # measured on a copy


def test_each_pass_is_counted_alone():
    found = reach(["pow-to-mul", "simplify"], sst.prim_programs(favour=("prim.pow",), constants=(2.0,)), examples=30)
    assert found.examples == 30 and set(found.changed) == {"pow-to-mul", "simplify"}
    assert found.changed["pow-to-mul"] > 0
    assert f"pow-to-mul changed {found.changed['pow-to-mul']} of 30 programs" in str(found)
    assert reach("pow-to-mul", sst.prim_programs(), examples=30).fraction() == 0  # unaimed programs hold no square


def test_counts_are_the_same_on_every_run():
    aimed = sst.prim_programs(favour=("prim.pow",), constants=(2.0,))
    assert reach("pow-to-mul", aimed, examples=20) == reach("pow-to-mul", aimed, examples=20)


def test_the_command_line_prints_the_count(capsys):
    main(["pow-to-mul", "--favour", "prim.pow", "--constants", "2", "--examples", "20"])
    assert capsys.readouterr().out.startswith("pow-to-mul changed ")
    with pytest.raises(SystemExit):
        main(["pow-to-mul", "--level", "aten", "--favour", "prim.pow"])


def test_a_pass_that_does_not_exist_is_named():
    with pytest.raises(ValueError, match="no pass is named 'pow-to-mull'"):
        reach("pow-to-mull", examples=1)


@pytest.mark.parametrize(
    "favour,steps,words",
    [
        (("prim.pw",), None, "did you mean prim.pow?"),
        (("prim.mm",), ("unary", "binary"), "prim.mm needs the step 'matmul'"),
    ],
)
def test_favour_names_an_op_the_generator_cannot_make(favour, steps, words):
    with pytest.raises(ValueError, match=words):
        sst.prim_programs(favour=favour, **({"steps": steps} if steps else {}))


def test_reach_fraction_of_nothing():
    assert Reach(0, {"p": 0}).fraction() == 0.0
