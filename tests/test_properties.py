"""Property tests of every pass and both code generators, over generated programs.

- Every registered pass keeps the values: a generated program and the pass's result
  give, in the reference interpreters, equal values (within the dtype's tolerance) on
  the program's inputs. PASS_INPUTS says which programs each pass gets; a pass without
  an entry fails `test_every_pass_has_a_property`.
- The default pipeline (what torch.compile runs) keeps the values, aten to kernels.
- Each code generator's kernels equal the kernel interpreter on the same buffers.

A failing example is shrunk by hypothesis and reported as a strata-opt command and the
program's text: save the text as program.mlir and run the command to see the failure.
A crash inside native code (a segfault in a torch kernel) cannot be shrunk: with
STRATA_LAST_EXAMPLE=path set, each example's command and text are written to `path`
before it runs, so the file holds the program that crashed.

Profiles (strata/testing/profiles.py): HYPOTHESIS_PROFILE=ci (default, 200 examples a
property), long (5,000), dev (20).
"""

from __future__ import annotations

from collections.abc import Callable
import os
from dataclasses import dataclass

import pytest
from hypothesis import assume, event, given
from hypothesis.control import currently_in_test_context
from hypothesis import strategies as st

from strata.dialects.context import parse_module
from strata.frontend import pipeline_spec
from strata.frontend.compile_graph import run_pipeline
from strata.passes.registry import DEFAULT_PIPELINE, PASSES
from strata.testing import profiles  # noqa: F401  (loads the hypothesis profile)
from strata.testing import strategies as sst
from strata.testing.checks import check_codegen, check_values
from strata.testing.graphs import Program
from strata.testing.inputs import InputSpec
from strata.testing.reach import reach, without_dead_code

# The programs each pass is tested on: generated aten or prim programs, or aten
# programs after infer-shapes and decompose (prim ops and the aten ops left over).
PASS_INPUTS: dict[str, tuple[str, ...]] = {
    "infer-shapes": ("aten", "prim"),
    "decompose": ("aten",),
    "recognize-attention": ("aten",),  # generated programs hold no attention: tests/test_recognize_attention.py aims at it
    "simplify": ("prim", "decomposed"),
    "fuse": ("prim", "decomposed"),
    "coalesce-dims": ("fused",),
    "pow-to-mul": ("prim", "decomposed"),
    "fold-sign-ops": ("prim", "decomposed"),
    "matvec-to-reduction": ("prim", "decomposed"),  # generated graphs name no device: aimed below with device="cuda"
    "matmul-to-dot": ("prim", "decomposed"),  # generated graphs name no device: aimed below with target="triton"
    "fold-grouped-attention": ("prim", "decomposed"),  # no repeated heads there: tests/test_grouped_attention.py aims at them
    "schedule-collectives": ("fused",),  # no collectives there: it must leave them alone (tests/test_schedule_collectives.py aims at them)
    "specialize-symbols": ("fused",),  # without a binding it changes nothing: aimed below with the inputs' sizes
}
PREPARE = {"aten": [], "prim": [], "decomposed": ["infer-shapes", "decompose"], "fused": ["fuse"]}
GENERATED_AS = {"decomposed": "aten", "fused": "prim"}  # the programs drawn for a kind
# What turns a prim program into the kernels the code generators get.
KERNEL_PIPELINE = ["fuse", "coalesce-dims"]

CODEGENS = ("llvm", "triton")


def remember(program: Program, options: str) -> None:
    """Writes the example about to run to $STRATA_LAST_EXAMPLE, if set."""
    path = os.environ.get("STRATA_LAST_EXAMPLE")
    if path:
        with open(path, "w") as f:
            f.write(f"// {program.command(options)}\n{program.text}\n")


def inputs_of(kind: str) -> st.SearchStrategy[Program]:
    return sst.programs(GENERATED_AS.get(kind, kind))


def prepared(program: Program, kind: str) -> Program:
    """The program as the pass under test gets it."""
    if not PREPARE[kind]:
        return program
    module = program.module.clone()
    run_pipeline(module, PREPARE[kind])
    return Program(module, program.spec, kind)


def check_pipeline(program: Program, pipeline: list[str]) -> str | None:
    """What goes wrong when `pipeline` runs on `program` and the values are compared.
    In a property, it records whether the pipeline changed the program (dead code
    aside, as strata.testing.reach counts): `pytest --hypothesis-show-statistics` shows
    the share of programs each pass changed."""
    after = program.module.clone()
    try:
        names, options = _names_and_options(pipeline)
        run_pipeline(after, names, step_options=options)
    except Exception as e:
        return f"the pipeline fails: {type(e).__name__}: {str(e).split(chr(10) * 2)[0]}"
    if currently_in_test_context():
        changed = without_dead_code(after) != without_dead_code(program.module)
        event(f"{','.join(pipeline)} {'changed the program' if changed else 'left the program as it was'}")
    return check_values(program.module, after, program.spec)


def _names_and_options(pipeline: list[str]) -> tuple[list[str], list[dict]]:
    """The passes of `pipeline` (names, or strata-opt's `name{option=value}`) and their options."""
    specs = pipeline_spec.parse(",".join(pipeline), whole=False)
    return [s.name for s in specs], [pipeline_spec.pass_options(s) if s.parameters else {} for s in specs]


def report(program: Program, options: str, problem: str) -> str:
    return (
        f"{problem}\n\nreproduce: save the program below as program.mlir and run\n"
        f"    {program.command(options)}\n\n{program.text}"
    )


# ---------------------------------------------------------------- known bugs
@dataclass(frozen=True)
class KnownBug:
    """A bug these properties found in a file another engineer owns, not fixed yet.

    `test_known_bug` runs its repro (a strata-opt check) as a strict xfail, so that
    the fix is noticed: the test then passes unexpectedly, and its entry must go.
    Meanwhile the properties skip the programs `matches` recognizes, so that they
    keep looking for other bugs."""

    where: str
    summary: str
    repro: str
    passes: tuple[str, ...]
    spec: str
    matches: Callable[[Program], bool]
    codegen: str | None = None

    def check(self) -> str | None:
        module = parse_module(self.repro)
        program = Program(module, InputSpec.parse(self.spec), "repro")
        if self.codegen is None:
            return check_pipeline(program, list(self.passes))
        run_pipeline(module, list(self.passes))
        return check_codegen(module, self.codegen, self.spec)


# Each entry: a bug these properties found and that is not fixed yet, with its repro.
KNOWN_BUGS: dict[str, KnownBug] = {}


def known_bug(program: Program) -> str | None:
    for name, bug in KNOWN_BUGS.items():
        if bug.matches(program):
            return name
    return None


# ---------------------------------------------------------------- properties
def test_every_pass_has_a_property():
    assert set(PASS_INPUTS) == set(PASSES), "add the new pass to PASS_INPUTS with the programs it takes"


@pytest.mark.parametrize(
    "pass_name,kind", [(p, k) for p, kinds in PASS_INPUTS.items() for k in kinds], ids=lambda v: v
)
@given(data=st.data())
def test_pass_keeps_values(pass_name, kind, data):
    generated = data.draw(inputs_of(kind), label="program")
    assume(known_bug(generated) is None)
    program = prepared(generated, kind)
    remember(program, f"-p {pass_name}")
    problem = check_pipeline(program, [pass_name])
    assert problem is None, report(program, f"-p {pass_name}", f"{pass_name} changed the program's values: {problem}")


@given(program=sst.aten_programs())
def test_default_pipeline_keeps_values(program):
    assume(known_bug(program) is None)
    remember(program, "--default-pipeline")
    problem = check_pipeline(program, list(DEFAULT_PIPELINE))
    assert problem is None, report(program, "--default-pipeline", f"the default pipeline changed the values: {problem}")


@pytest.mark.parametrize("codegen", CODEGENS)
@given(data=st.data())
def test_codegen_matches_kernel_interpreter(codegen, data):
    program = data.draw(sst.prim_programs(), label="program")
    assume(known_bug(program) is None)
    passes = ",".join(KERNEL_PIPELINE)
    remember(program, f"-p {passes} --check-codegen {codegen}")
    module = program.module.clone()
    try:
        run_pipeline(module, KERNEL_PIPELINE)
        problem = check_codegen(module, codegen, program.spec)
    except Exception as e:
        problem = f"{passes} fails: {type(e).__name__}: {str(e).split(chr(10) * 2)[0]}"
    assert problem is None, report(program, f"-p {passes} --check-codegen {codegen}", problem)


# ---------------------------------------------------------------- aimed properties
# Generated programs rarely hold a pass's pattern by chance (pow-to-mul changes none of
# 200 prim programs): each aimed property draws programs that do, and checks that they
# still do, as often as its pass needs (strata.testing.reach).
SQUARES = sst.prim_programs(favour=("prim.pow",), constants=(2.0,))


def assert_reaches(pipeline: str, programs, share: float = 0.2) -> None:
    """The aimed programs still hold the pass's pattern, in at least `share` of 100."""
    found = reach(pipeline, programs, examples=100)
    assert found.fraction() >= share, f"the aimed programs no longer reach the pattern: {found}"


def test_squares_reach_pow_to_mul():
    assert_reaches("pow-to-mul", SQUARES)


def assert_pass_keeps_values(program: Program, name: str) -> None:
    """The aimed property of pass `name` on one program: its values do not change."""
    assume(known_bug(program) is None)
    remember(program, f"-p {name}")
    problem = check_pipeline(program, [name])
    assert problem is None, report(program, f"-p {name}", f"{name} changed the program's values: {problem}")


@given(program=SQUARES)
def test_pow_to_mul_keeps_values_of_squares(program):
    assert_pass_keeps_values(program, "pow-to-mul")


# Negations and absolute values of each other, which fold-sign-ops folds.
SIGN_CHAINS = sst.prim_programs(favour=("prim.neg", "prim.abs"), steps=("unary", "binary", "view"), max_ops=12)


def test_sign_chains_reach_fold_sign_ops():
    assert_reaches("fold-sign-ops", SIGN_CHAINS)


@given(program=SIGN_CHAINS)
def test_fold_sign_ops_keeps_values_of_sign_chains(program):
    assert_pass_keeps_values(program, "fold-sign-ops")


# Conversions read by several consumers: each elementwise reader converts where it
# reads, where that moves no more bytes (passes/fusion/plan.py's _recomputed_by_readers).
CONVERSIONS = sst.prim_programs(favour=("prim.convert_element_type",),
                                steps=("unary", "binary", "view", "convert", "reduction"), max_ops=10)


@given(program=CONVERSIONS)
def test_conversions_read_by_several_keep_values_through_fusion(program):
    assume(known_bug(program) is None)
    remember(program, f"-p '{','.join(KERNEL_PIPELINE)}'")
    problem = check_pipeline(program, KERNEL_PIPELINE)
    assert problem is None, report(program, f"-p '{','.join(KERNEL_PIPELINE)}'", f"fusion changed the values: {problem}")


# Matrix products of one row, rewritten as on a GPU.
ROW_PRODUCTS = sst.prim_programs(favour=("prim.mm", "prim.addmm"), matmul_sizes=(1,))
ON_CUDA = 'matvec-to-reduction{device="cuda"}'


def test_row_products_reach_matvec_to_reduction():
    assert_reaches(ON_CUDA, ROW_PRODUCTS)


@given(program=ROW_PRODUCTS)
def test_matvec_to_reduction_keeps_values_of_row_products(program):
    assert_pass_keeps_values(program, ON_CUDA)


@given(program=ROW_PRODUCTS)
def test_row_products_keep_values_through_fusion(program):
    """Their sums fused, a computed vector realized apart (passes/fusion/plan.py's
    _recomputed_product_sides), run by the kernel dialect's interpreter."""
    assume(known_bug(program) is None)
    passes = [ON_CUDA, *KERNEL_PIPELINE]
    remember(program, f"-p '{','.join(passes)}'")
    problem = check_pipeline(program, passes)
    assert problem is None, report(program, f"-p '{','.join(passes)}'", f"the fused row products changed values: {problem}")


@given(data=st.data())
def test_specialize_symbols_with_the_inputs_sizes_keeps_values(data):
    """A fused program with its symbols bound to the sizes of the inputs it runs on (as
    runtime/specialized_graphs.py binds them): the same values."""
    program = prepared(data.draw(inputs_of("fused"), label="program"), "fused")
    bindings = ",".join(f"{name}={value}" for name, value in program.spec.sizes)
    assert_pass_keeps_values(program, f'specialize-symbols{{bindings="{bindings}"}}')


# Matrix products, rewritten as max-autotune rewrites them for Triton, then run through
# the matmul template (codegen/triton_matmul.py) in Triton's interpreter.
PRODUCTS = sst.prim_programs(favour=("prim.mm", "prim.addmm", "prim.bmm"))
FOR_TRITON = 'matmul-to-dot{target="triton"}'


def test_products_reach_matmul_to_dot():
    assert_reaches(FOR_TRITON, PRODUCTS)


@given(program=PRODUCTS)
def test_matmul_to_dot_keeps_values_of_products(program):
    assert_pass_keeps_values(program, FOR_TRITON)


@given(program=PRODUCTS)
def test_matmul_template_matches_kernel_interpreter(program):
    _check_template(program)


def _check_template(program) -> None:
    """The program rewritten for the template and fused, its kernels run in Triton's
    interpreter, against the kernel dialect's interpreter."""
    assume(known_bug(program) is None)
    passes = [FOR_TRITON, *KERNEL_PIPELINE]
    remember(program, f"-p '{','.join(passes)}' --check-codegen triton")
    module = program.module.clone()
    run_pipeline(module, *_names_and_options(passes))
    problem = check_codegen(module, "triton", program.spec)
    assert problem is None, report(program, f"-p '{','.join(passes)}' --check-codegen triton", problem)


# Convolutions, as implicit GEMMs (passes/convolution_to_dot.py): the same pass and the
# same template, each window read at positions computed from iotas.
CONVOLUTIONS = sst.prim_programs(favour=("prim.convolution",))


def test_convolutions_reach_matmul_to_dot():
    # half the drawn convolutions are 1-d, half grouped, a quarter of a symbolic batch:
    # those stay library calls
    assert_reaches(FOR_TRITON, CONVOLUTIONS, share=0.05)


@given(program=CONVOLUTIONS)
def test_matmul_to_dot_keeps_values_of_convolutions(program):
    assert_pass_keeps_values(program, FOR_TRITON)


@given(program=CONVOLUTIONS)
def test_convolution_template_matches_kernel_interpreter(program):
    _check_template(program)


@pytest.mark.parametrize(
    "name", [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=b.summary)) for n, b in KNOWN_BUGS.items()]
)
def test_known_bug(name):
    """Fails while the bug is there; when it passes, remove the entry from KNOWN_BUGS."""
    bug = KNOWN_BUGS[name]
    problem = bug.check()
    assert problem is None, f"{bug.where}: {bug.summary}\n{problem}"
