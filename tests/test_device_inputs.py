"""Inputs on another device than the graph's (frontend/device_inputs.py): copied at each
call, except a 0-d input the program only reads, whose copy is kept while its value
repeats (a Python float Dynamo passes as a tensor: an RMSNorm's eps)."""

from __future__ import annotations

import torch

from strata.dialects import kernel as kd
from strata.dialects.context import parse_module, strata_context
from strata.frontend.device_inputs import on_device
from strata.passes.fuse import FusePass

META = torch.device("meta")
T, S = "!strata.tensor<[3, 4], f32>", "!strata.tensor<[], f32>"


def _program(returns_scalar: bool):
    """A fused program of x * c + 1 (c 0-d, read by the kernel); `returns_scalar`: c is
    also returned as it came."""
    results = f"{T}, {S}" if returns_scalar else T
    text = f"""func.func @graph(%x: {T}, %c: {S}) -> ({results}) attributes {{strata.device = "cuda"}} {{
  %b = prim.broadcast_in_dim %c {{shape = [3, 4], broadcast_dimensions = array<i64>}} : ({S}) -> {T}
  %y = prim.mul %x, %b : ({T}, {T}) -> {T}
  func.return %y{", %c" if returns_scalar else ""} : {results}
}}"""
    module = parse_module(text)
    FusePass().apply(strata_context(), module)
    return next(op for op in module.ops if isinstance(op, kd.ProgramOp))


def _calls(program):
    seen = []

    def call(args):
        seen.append(args[1])
        return args

    example = [torch.empty(3, 4, device=META), torch.tensor(1e-5, dtype=torch.float64)]
    return on_device(call, example, META, program), seen


def test_a_read_only_scalar_keeps_its_copy_while_its_value_repeats():
    program = _program(returns_scalar=False)
    assert all(isinstance(use.operation, kd.LaunchOp) for use in program.block.args[1].uses)
    moved, seen = _calls(program)
    x = torch.empty(3, 4, device=META)
    for value in (1e-5, 1e-5, 2e-5, 2e-5, -0.0, 0.0, float("nan"), float("nan")):
        moved([x, torch.tensor(value, dtype=torch.float64)])
    assert all(s.device == META and s.dtype == torch.float64 for s in seen)
    assert seen[0] is seen[1] and seen[2] is seen[3] and seen[6] is seen[7]  # the same value: the same copy
    assert len({id(s) for s in seen}) == 5  # 1e-5, 2e-5, -0.0, 0.0 and NaN each made one


def test_a_scalar_the_program_returns_is_copied_at_every_call():
    moved, seen = _calls(_program(returns_scalar=True))
    x = torch.empty(3, 4, device=META)
    for _ in range(2):
        moved([x, torch.tensor(1e-5, dtype=torch.float64)])
    assert seen[0] is not seen[1]


def test_without_the_program_every_input_is_copied():
    moved, seen = _calls(None)
    x = torch.empty(3, 4, device=META)
    for _ in range(2):
        moved([x, torch.tensor(1e-5, dtype=torch.float64)])
    assert seen[0] is not seen[1] and seen[0].device == META
