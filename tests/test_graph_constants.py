"""A graph's tensor constants go to its device (frontend/compile_graph.py): torch makes
a tensor built in forward (`torch.tensor(3.0)`) on the CPU, eager mixes such a 0-d
tensor with CUDA tensors, and a kernel can read only its own device's memory (a CUDA
kernel given a CPU pointer failed to launch: `invalid argument`)."""

from __future__ import annotations

import pytest
import torch

import strata
from strata.dialects import kernel as kd
from strata.dialects.context import parse_module
from strata.frontend.compile_graph import constants_on_device

PROGRAM = """
kernel.program @graph attributes {function_type = (!strata.tensor<[2], f32>, !strata.tensor<[], f32>, !strata.tensor<[], f32>) -> (!strata.tensor<[2], f32>, !strata.tensor<[], f32>), arg_symbols = ["", "", ""], arg_strides = [[1 : i64], [], []]} {
^bb0(%x: !strata.tensor<[2], f32>, %c: !strata.tensor<[], f32>, %kept: !strata.tensor<[], f32>):
  %y = prim.mul %x, %c : (!strata.tensor<[2], f32>, !strata.tensor<[], f32>) -> !strata.tensor<[2], f32>
  kernel.return %y, %kept : !strata.tensor<[2], f32>, !strata.tensor<[], f32>
}
"""


def test_constants_move_to_the_graph_device_unless_returned_as_they_are():
    program = next(op for op in parse_module(PROGRAM).ops if isinstance(op, kd.ProgramOp))
    read, returned = torch.tensor(3.0), torch.tensor(4.0)
    moved = constants_on_device([read, returned], program, torch.device("meta"))
    assert moved[0].device.type == "meta" and moved[1] is returned


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cpu_scalar_made_in_forward_of_a_cuda_graph():
    def f(x):
        t = torch.tensor(3.0)  # a CPU 0-d tensor, a constant of the graph
        return x * t + 1, (t + 1) * x.sum()

    x = torch.randn(64, device="cuda")
    got = strata.compile(f)(x)
    want = f(x)
    for g, w in zip(got, want):
        assert g.device == w.device
        torch.testing.assert_close(g, w)


def test_moved_constants_are_real_tensors_under_a_fake_mode():
    """A compile runs under Dynamo's FakeTensorMode: a constant moved there must still
    be a real tensor that a kernel can read."""
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

    program = next(op for op in parse_module(PROGRAM).ops if isinstance(op, kd.ProgramOp))
    constants = [torch.tensor(3.0), torch.tensor(4.0)]
    with FakeTensorMode():
        moved = constants_on_device(constants, program, torch.device("meta"))
    assert not isinstance(moved[0], FakeTensor)
