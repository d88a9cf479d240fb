"""A graph's inputs that live on another device than the graph, moved before each call.

Eager takes a CPU index tensor or a 0-d CPU tensor beside CUDA ones (index_put's
indices; a Python float that Dynamo passes as a tensor, as it does for every float it
does not specialize: an RMSNorm's eps under `dynamic=True`); a kernel cannot read CPU
memory. So each such input is copied to the graph's device at each call. A copy is a
host-side transfer of ~10 µs, and a Llama's prefill took 33 a call (one eps a norm).

A 0-d input that the program only reads (kernels read it; nothing writes it in place,
returns it or hands it to a library) keeps its device copy while its value stays the
same: the next call with that value reuses it, and a new value makes a new copy (the
old one is never written, so a kernel still reading it is safe). Graphs on one device
pay nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from xdsl.ir import BlockArgument

from strata.dialects import kernel as kd


def on_device(call: Callable[[list], list], example_inputs: Sequence[Any], device: torch.device,
              program: kd.ProgramOp | None = None) -> Callable[[list], list]:
    """`call`, moving the inputs that live elsewhere than `device` first; with the
    program, reusing the device copy of a 0-d input it only reads while its value
    repeats."""
    elsewhere = [i for i, x in enumerate(example_inputs) if isinstance(x, torch.Tensor) and x.device != device]
    if not elsewhere:
        return call
    kept = {i for i in elsewhere if example_inputs[i].dim() == 0 and _only_read(program, i, len(example_inputs))}
    copies: dict[int, tuple[tuple, torch.Tensor]] = {}

    def moved(args: list) -> list:
        args = list(args)
        for i in elsewhere:
            x = args[i]
            if i in kept and x.dim() == 0 and x.device.type == "cpu":
                key = (x.dtype, repr(x.item()))  # repr tells -0.0 from 0.0, and NaN from any number
                held = copies.get(i)
                if held is None or held[0] != key:
                    held = copies[i] = (key, x.to(device, non_blocking=True))
                args[i] = held[1]
            else:
                args[i] = x.to(device, non_blocking=True)
        return call(args)

    return moved


def _only_read(program: kd.ProgramOp | None, index: int, inputs: int) -> bool:
    """Whether the program's argument `index` is read only by kernel launches, as an
    operand no output updates. Unknown (no program, or arguments that do not line up
    with the inputs one to one, as with effect tokens): no."""
    if program is None:
        return False
    args = program.block.args
    if index >= len(args) or len(args) < inputs:
        return False
    arg: BlockArgument = args[index]
    for use in arg.uses:
        op = use.operation
        if not isinstance(op, kd.LaunchOp):
            return False
        if use.index in (op.updates or ()):
            return False
    return True
