"""The differential fuzzer: generated Python programs compiled by strata behave as they
do eagerly, call by call (testing/python_programs.py draws them, testing/differential.py
compares; docs/fuzzing.md).

- `test_compiled_programs_match_eager` runs FUZZ_PROGRAMS programs, a number the
  hypothesis profile sets (HYPOTHESIS_PROFILE, testing/profiles.py): ci 80 (about 40
  seconds on 2 cores), dev 10, long 5,000; STRATA_FUZZ_PROGRAMS=n overrides it, and
  STRATA_FUZZ_STRIDES=0 leaves the strides of results unchecked. Under
  ci a failure is not shrunk (each shrink step compiles again; the programs are small
  already): the failure message is the program's reproducer script.
- The reach tests check that the generator makes the programs where strata went wrong
  before (negative dynamic ints into abs, //, %, max, min, roll and indexing, also
  from an unbacked .item(); index tensors out of range; channels_last and other
  non-contiguous inputs), measured as the share of programs with each feature.
- The comparison tests check the fuzzer's own rules, and that Dynamo alone (backend
  "eager") gives no mismatch: a mismatch the fuzzer reports is strata's.
"""

from __future__ import annotations

import logging
import os
import runpy
from collections import Counter

import pytest
import torch
from hypothesis import Phase, given, settings

from strata.testing import profiles
from strata.testing.differential import Outcome, compare, compare_calls, run_program
from strata.testing.fuzz_inputs import tensor
from strata.testing.fuzz_reduce import reduce
from strata.testing.fuzz_worker import Worker
from strata.testing.python_program import PythonProgram
from strata.testing.python_programs import python_programs, random_program

FUZZ_PROGRAMS = int(os.environ.get("STRATA_FUZZ_PROGRAMS") or {"ci": 80, "dev": 10, "long": 5000}.get(profiles.PROFILE, 80))
SHRINK = () if profiles.PROFILE == "ci" else (Phase.shrink,)
CHECK_STRIDES = os.environ.get("STRATA_FUZZ_STRIDES", "1") != "0"


@settings(max_examples=FUZZ_PROGRAMS, phases=(Phase.explicit, Phase.reuse, Phase.generate, *SHRINK))
@given(python_programs())
def test_compiled_programs_match_eager(program):
    report = run_program(program, check_strides=CHECK_STRIDES)
    assert not report.mismatches, f"{report.describe()}\n\nReproducer (save as a file and run it):\n{program.script()}"


# Features (python_programs.py's names; "name:*" is any op) grouped by the bug class
# they reach; each group must be in at least REACH of the programs, each feature
# named in full in at least ONE_OP.
BUG_CLASSES = {
    "negative dynamic int into int arithmetic": ["neg_int:abs", "neg_int:floordiv", "neg_int:mod", "neg_int:max", "neg_int:min"],
    "negative dynamic int into roll": ["neg_int:roll"],
    "negative dynamic int as an index (x[k], arange(12.)[k])": ["neg_int:getitem"],
    "negative unbacked int from .item()": ["neg_item_int:*"],
    "index tensor past the end": ["oob_index:*", *(f"oob_index:{op}" for op in ("getitem_tensor", "gather", "index_select", "embedding", "take"))],
    "index tensor below -size": ["neg_oob_index:*", *(f"neg_oob_index:{op}" for op in ("getitem_tensor", "gather", "index_select", "embedding"))],
    "channels_last input": ["layout:channels_last"],
    "non-contiguous input": ["layout:transposed", "layout:strided", "layout:expanded"],
    "dynamic=True": ["mode:dynamic"],
    "automatic dynamic": ["mode:auto"],
    "unbacked .item()": ["unbacked"],
}
REACH = 0.05
ONE_OP = 0.004
# Hypothesis's examples are not independent (it mutates earlier ones), so its shares
# swing by a factor of 2 with any change to the generator: a lower bar for them.
HYPOTHESIS_REACH = 0.02


def _has(program: PythonProgram, feature: str) -> bool:
    if feature.endswith(":*"):
        return any(f.startswith(feature[:-1]) for f in program.features)
    return feature in program.features


def _reach(programs: list[PythonProgram]) -> tuple[dict[str, float], Counter]:
    features = Counter(f for p in programs for f in p.features)
    groups = {name: sum(any(_has(p, f) for f in members) for p in programs) / len(programs)
              for name, members in BUG_CLASSES.items()}
    return groups, Counter({f: n / len(programs) for f, n in features.items()})


def _assert_reach(programs: list[PythonProgram]) -> None:
    groups, features = _reach(programs)
    low = {name: share for name, share in groups.items() if share < REACH}
    assert not low, f"bug classes reached by fewer than {REACH:.0%} of the programs: {low}"
    rare = {f: features[f] for members in BUG_CLASSES.values() for f in members if not f.endswith("*") and features[f] < ONE_OP}
    assert not rare, f"features in fewer than {ONE_OP:.1%} of the programs: {rare}"


def test_generator_reaches_each_bug_class():
    _assert_reach([random_program(f"reach:{i}") for i in range(1500)])


def test_hypothesis_strategy_reaches_each_bug_class():
    drawn = []

    @settings(max_examples=600, derandomize=True, database=None, phases=(Phase.generate,))
    @given(python_programs())
    def draw(program):
        drawn.append(program)

    draw()
    groups, _ = _reach(drawn)
    low = {name: share for name, share in groups.items() if share < HYPOTHESIS_REACH}
    assert not low, f"bug classes the hypothesis strategy reaches in fewer than {HYPOTHESIS_REACH:.0%} of its programs: {low}"


def test_generated_programs_run_eagerly_as_drawn():
    """Every program runs eagerly; where a call raises, it is at a statement the
    generator kept for raising (indexing, narrow, arange)."""
    for i in range(40):
        program = random_program(f"eager:{i}")
        f = program.function()
        for call in range(len(program.calls)):
            try:
                f(*program.arguments(call))
            except (IndexError, RuntimeError, ValueError) as e:
                assert "eager_raises" in program.features, (program.source, e)


def _outcome(value=None, error=None) -> Outcome:
    return Outcome(value=value, error=error)


def test_comparison_kinds():
    x = torch.arange(6.0).reshape(2, 3)
    raised = _outcome(error=IndexError("index 5 is out of bounds"))
    kinds = lambda want, got, **kw: [k for k, *_ in compare(want, got, **kw)]  # noqa: E731
    assert kinds(raised, _outcome(error=RuntimeError("index out of range"))) == []  # any exception will do
    assert kinds(raised, _outcome(x)) == ["missing_exception"]
    assert kinds(_outcome(x), _outcome(error=RuntimeError("boom"))) == ["unexpected_exception"]
    assert kinds(_outcome(x), _outcome(x.clone())) == []
    assert kinds(_outcome(x), _outcome(x + 1)) == ["wrong_value"]
    assert kinds(_outcome(x), _outcome(x.double())) == ["wrong_dtype"]
    assert kinds(_outcome(x), _outcome(x.reshape(3, 2))) == ["wrong_shape"]
    assert kinds(_outcome((x, 3)), _outcome((x, -3))) == ["wrong_value"]
    assert kinds(_outcome((x, 3)), _outcome((x,))) == ["wrong_structure"]
    assert kinds(_outcome(x.sum().item()), _outcome(x.sum())) == ["wrong_structure"]
    nan = torch.tensor([float("nan"), 1.0])
    assert kinds(_outcome(nan), _outcome(nan.clone())) == []
    assert kinds(_outcome(nan), _outcome(torch.tensor([0.0, 1.0]))) == ["wrong_value"]


def test_strides_are_compared_where_eager_is_a_dense_permutation():
    kinds = lambda want, got, **kw: [k for k, *_ in compare(_outcome(want), _outcome(got), **kw)]  # noqa: E731
    channels_last = tensor((2, 3, 4, 5), torch.float32, "channels_last")
    assert kinds(channels_last, channels_last.contiguous()) == ["wrong_strides"]
    assert kinds(channels_last, channels_last.contiguous(), check_strides=False) == []
    transposed = tensor((3, 4), torch.float32, "transposed")
    assert kinds(transposed, transposed.contiguous()) == ["wrong_strides"]
    assert kinds(transposed, transposed.clone()) == []  # clone keeps a dense layout
    # Not dense (a step) or contiguous: any layout of the same values is right.
    strided = tensor((3, 4), torch.float32, "strided")
    assert kinds(strided, strided.contiguous()) == []
    assert kinds(channels_last.contiguous(), channels_last) == []


def test_dynamo_alone_gives_no_mismatch():
    """With backend="eager" Dynamo runs the captured graphs eagerly: whatever differs
    from eager then is the fuzzer's mistake, not strata's."""
    for i in range(12):
        program = random_program(f"dynamo:{i}")
        report = run_program(program, backend="eager")
        assert not report.mismatches, f"{report.describe()}\n{program.script()}"


NEGATIVE_ABS = PythonProgram(
    params=("x0", "k0"),
    statements=(("v0", "abs(k0)"), ("v1", "x0 * v0"), ("v2", "x0.sum()")),
    returns=("v1", "v2"),
    calls=tuple((f"tensor((3,), torch.float32, seed={c})", k) for c, k in enumerate(("2", "3", "-3"))),
)


def test_a_wrong_backend_is_caught_and_reduced():
    """A backend that negates every graph output: wrong values, found and reduced."""

    def negating(gm, example_inputs):
        return lambda *args: [-o if isinstance(o, torch.Tensor) else o for o in gm(*args)]

    report = run_program(NEGATIVE_ABS, backend=negating)
    assert report.kinds == {"wrong_value"} and report.graphs >= 1
    smaller = reduce(NEGATIVE_ABS, lambda p: "wrong_value" in run_program(p, backend=negating).kinds)
    assert len(smaller.returns) == 1 and len(smaller.calls) == 1
    assert len(smaller.statements) <= 2 and len(smaller.params) <= 2


def test_reproducer_script_replays_the_calls(tmp_path, capsys):
    path = tmp_path / "repro.py"
    path.write_text(NEGATIVE_ABS.script("a reproducer").replace("replay(f, CALLS,", "replay(f, CALLS, backend='eager',"))
    runpy.run_path(str(path), run_name="__main__")  # as `python repro.py` does
    out = capsys.readouterr().out
    assert "call 2: ok" in out and "0 mismatches in 3 calls" in out


def test_compare_calls_builds_arguments_per_call():
    seen = []

    def arguments(call):
        seen.append(call)
        return (torch.ones(2), call + 2)

    report = compare_calls(lambda x, k: x * k, arguments, 3, backend="eager")
    assert report.calls == 3 and not report.mismatches and report.graphs >= 1
    assert seen == [0, 0, 1, 1, 2, 2]  # once for eager, once compiled: no tensor is shared


def test_command_line(tmp_path, capsys, monkeypatch):
    """Two programs through Dynamo alone: no mismatch, a summary, exit code 0."""
    from strata.testing.fuzz import main

    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path / "cache"))
    try:
        assert main(["--programs", "2", "--seed", "cli", "--backend", "eager", "--out", str(tmp_path), "--in-process"]) == 0
    finally:  # the command line quiets torch's logs: as they were for the tests after
        torch._logging.set_logs()
        logging.getLogger("torch._subclasses.fake_tensor").setLevel(logging.NOTSET)
    out = capsys.readouterr().out
    assert "programs 2, calls" in out and "mismatching programs: 0" in out
    assert not (tmp_path / "current.py").exists() and not (tmp_path / "mismatches.jsonl").exists()


def test_worker_survives_a_dying_program():
    """A program that kills its process is a `crash`, and the next one runs in a new child."""
    dying = PythonProgram(params=("x0",), statements=(("v0", "x0 + __import__('os')._exit(7)"),), returns=("v0",),
                          calls=(("tensor((2,), torch.float32)",),))
    with Worker(backend="eager") as worker:
        crashed = worker.run(dying)
        after = worker.run(NEGATIVE_ABS)
    assert [(m.kind, m.call) for m in crashed.mismatches] == [("crash", None)]
    assert "exit code 7" in crashed.mismatches[0].detail
    assert after.calls == 3 and not after.mismatches


@pytest.mark.parametrize("number", range(5))
def test_script_holds_the_program(number):
    program = random_program(f"script:{number}")
    namespace: dict = {}
    exec(compile(program.script(), "<script>", "exec"), namespace)
    assert [len(args) for args in namespace["CALLS"]] == [len(program.params)] * len(program.calls)
    assert (namespace["DYNAMIC"], namespace["CAPTURE_SCALAR_OUTPUTS"]) == (program.dynamic, program.capture_scalar_outputs)
    assert namespace["f"].__code__.co_varnames[: len(program.params)] == program.params


DEAD_GATHER = PythonProgram(
    params=("x0", "idx0"),
    statements=(("v0", "x0.gather(0, idx0)"), ("v1", "v0.shape[0]"), ("v2", "x0 * 2")),
    returns=("v1", "v2"),
    calls=(("tensor((3, 2), torch.float32, seed=0)", "torch.tensor([[0, 1]])"),
           ("tensor((3, 2), torch.float32, seed=1)", "torch.tensor([[0, 7]])")),
)


def test_what_torch_compile_drops_before_any_backend_is_counted_apart():
    """The gather's result is unused: AOTAutograd deletes it, so no backend can raise
    where eager does. aot_eager misses the exception too: torch.compile's own."""
    report = run_program(DEAD_GATHER)
    assert not report.mismatches
    assert [(m.kind, m.call) for m in report.torch_mismatches] == [("missing_exception", 1)]
