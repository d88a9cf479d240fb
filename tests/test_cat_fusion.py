"""A cat of a few operands (a stack of two rotated halves, a rotate-half) is computed by
the kernel that reads it, from its operands' producers: no operand is stored, the
values are eager's, on both code generators."""

from __future__ import annotations

import pytest
import torch

import strata


def stack_of_products(x, y):
    return torch.stack([x * y, x.exp() - y], dim=-1).flatten(-2)


def rotate_half(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


CASES = {
    "stack": (stack_of_products, lambda: (torch.randn(3, 8), torch.randn(3, 8))),
    "rotate_half": (rotate_half, lambda: (torch.randn(2, 5, 16), torch.randn(5, 16), torch.randn(5, 16))),
}


@pytest.mark.parametrize("codegen", ["llvm", "triton"])
@pytest.mark.parametrize("case", list(CASES))
def test_a_small_cat_is_one_kernel_with_its_operands(tmp_path, case, codegen):
    fn, make = CASES[case]
    args = make()
    compiled = strata.compile(fn, options={"codegen": codegen, "trace.enabled": True, "trace.dir": str(tmp_path),
                                           "graph_cache": False, "capture_cache": False, "dynamo_cache": False})
    torch.testing.assert_close(compiled(*args), fn(*args))
    (graph,) = tmp_path.iterdir()
    program = (graph / "2_kernel.mlir").read_text()
    assert program.count("kernel.func @") == 1, program
    assert "prim.cat" not in program
