"""The property checks' comparison: a floating result that misses its dtype's tolerance
agrees when it is as accurate as the reference level's against the program computed in
float64 (testing/float64.py), and only then."""

from __future__ import annotations

import math

import torch

from strata.codegen.llvm_cpu import compile_kernel
from strata.dialects.context import parse_module
from strata.frontend.compile_graph import run_pipeline
from strata.runtime.interpreters import interpret_module
from strata.testing.checks import KernelComparison, check_codegen, mismatch, print_module
from strata.testing.float64 import as_float64, in_float64
from strata.testing.inputs import make_inputs

HALF = torch.float16


def test_a_result_closer_to_float64_than_the_reference_agrees():
    exact = torch.tensor([1.0, 2.0, math.inf, 5.0], dtype=torch.float64)
    want = torch.tensor([1.1, 2.0, math.nan, 5.0], dtype=HALF)  # 10% off, and a NaN for +inf
    got = torch.tensor([1.0, 2.0, math.inf, 5.0], dtype=HALF)
    assert mismatch([want], [got]) is not None
    assert mismatch([want], [got], lambda: [exact]) is None


def test_a_result_further_from_float64_than_the_reference_differs():
    exact = torch.tensor([1.0, 2.0, math.inf], dtype=torch.float64)
    want = torch.tensor([1.01, 2.0, math.inf], dtype=HALF)
    for got in ([1.2, 2.0, math.inf], [1.01, 2.0, math.nan], [1.01, 2.0, 60000.0]):
        problem = mismatch([want], [torch.tensor(got, dtype=HALF)], lambda: [exact])
        assert problem is not None and "less accurate" in problem, got


def test_an_ill_conditioned_result_agrees_within_a_quarter_of_the_references_error():
    # sin(exp(10.9114)): exp's f32 ulp there is 0.004; eager and a vector exp half an
    # ulp apart give sines 0.002 apart, both about 0.001 off the float64 program.
    exact = torch.tensor([-0.840513400518959], dtype=torch.float64)
    want = torch.tensor([-0.8415383696556091])
    assert mismatch([want], [torch.tensor([-0.83942])], lambda: [exact]) is None
    assert mismatch([want], [torch.tensor([-0.8380])], lambda: [exact]) is not None


def test_a_bool_result_agrees_where_it_is_the_float64_programs():
    # gelu(-5.43) is -1.5e-7 exactly; f32 formulas give it or 0, and a cast to bool
    # turns that hair into True or False.
    want = torch.tensor([False, True])
    exact = torch.tensor([True, True])
    assert mismatch([want], [torch.tensor([True, True])], lambda: [exact]) is None
    problem = mismatch([want], [torch.tensor([False, False])], lambda: [exact])
    assert problem is not None and "1 of 2 elements differ; at [1]: False, expected True" in problem
    assert "neither value" in problem
    assert "1 of 2 elements differ" in mismatch([want], [torch.tensor([True, True])])


def test_the_float64_program_is_computed_only_when_needed():
    calls = []
    want = torch.tensor([1.0, 2.0], dtype=HALF)
    assert mismatch([want], [want.clone()], lambda: calls.append(1) or [want.double()]) is None
    assert not calls


PROGRAM = """
func.func @graph(%x: !strata.tensor<[4, 6], f16> {strata.strides = [1 : i64, 4 : i64]}) -> !strata.tensor<[4], bf16> {
  %l = aten._log_softmax.default %x {dim = 1 : i64, half_to_float = false} : (!strata.tensor<[4, 6], f16>) -> !strata.tensor<[4, 6], f16>
  %c = aten._to_copy.default %l {dtype = "bf16"} : (!strata.tensor<[4, 6], f16>) -> !strata.tensor<[4, 6], bf16>
  %s = aten.sum.dim_IntList %c {dim = [1 : i64]} : (!strata.tensor<[4, 6], bf16>) -> !strata.tensor<[4], bf16>
  func.return %s : !strata.tensor<[4], bf16>
}"""


def test_a_program_in_float64_has_no_narrower_float_left():
    for passes in ([], ["infer-shapes", "decompose", "fuse"]):
        module = parse_module(PROGRAM)
        inputs = make_inputs(module, "seed=1")
        run_pipeline(module, passes)
        wide = in_float64(module)
        text = print_module(wide)
        assert not any(t in text for t in ("f16", "f32", "bf16")), text
        (got,) = interpret_module(wide, [as_float64(x) for x in inputs])
        want = torch.log_softmax(inputs[0].double(), 1).sum(1)
        torch.testing.assert_close(got.double(), want)


def test_codegen_check_still_finds_a_wrong_kernel():
    """The float64 yardstick must not hide a kernel that computes something else."""
    module = parse_module(PROGRAM)
    run_pipeline(module, ["infer-shapes", "decompose", "fuse"])

    def wrong(func):
        run = compile_kernel(func)

        def call(buffers, symbols):
            run(buffers, symbols)
            n = func.num_inputs.value.data
            for b in buffers[n:]:
                b.mul_(1.05)

        return call

    problem = check_codegen(module, "llvm", "seed=1", KernelComparison(wrong))
    assert problem is not None and "less accurate" in problem
