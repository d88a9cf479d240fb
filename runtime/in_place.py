"""Writes into the graph's own inputs: a KV cache updated at `input_pos`.

AOTAutograd hands a backend a functional graph: `cache[:, :, pos] = k` becomes a
scatter into a new tensor that the graph returns, and AOTAutograd's wrapper then
copies it back into the cache (`cache.copy_(new)`). For a cache of a few MiB written
one row per decoded token that is two whole copies of the cache a step, where the
write itself moves a few KiB.

`written_back(kind)` reads, from AOTAutograd's metadata for the graph being compiled,
which outputs are new values of which inputs (data mutations only). `in_place_scatters`
then picks the prim.scatter ops that may write into that input's memory instead:
  - the scatter's destination is the program argument itself (not a view of it);
  - nothing else reads that argument (so no read can see it already written);
  - its result is returned as that input's new value;
  - it overwrites (reduce "none"): writing the same values twice leaves the same
    tensor, so the warm-up run a CUDA graph recording makes (runtime/cuda_graphs.py)
    cannot change the result.
The scatter then runs as `x.scatter_(...)` and the graph returns `x` itself, whose
copy into itself AOTAutograd's `copy_` skips (ATen returns early when source and
destination are the same memory with the same layout).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from xdsl.ir import BlockArgument

from strata.dialects import kernel as kd
from strata.dialects.prim_indexing import ScatterOp
from strata.runtime.graph_runner import InlineStep


def written_back(kind: str) -> dict[int, int]:
    """{graph output index: graph input index} for the inputs whose new data the
    forward graph being compiled returns (AOTAutograd's metadata), or {}."""
    if kind != "forward":
        return {}
    try:
        from torch._guards import TracingContext

        context = TracingContext.try_get()
        meta = context.fw_metadata if context is not None else None
        if meta is None:
            return {}
        pairs = {}
        for out, j in enumerate(meta.mutated_inp_runtime_indices):
            info = meta.input_info[j]
            if info.mutates_data and not info.mutates_metadata and not info.mutates_storage_metadata:
                pairs[out] = j
        return pairs
    except (AttributeError, IndexError, TypeError):  # another torch's metadata
        return {}


def in_place_scatters(program: kd.ProgramOp, written: dict[int, int]) -> set[ScatterOp]:
    """The scatters of `program` that may write into their destination argument;
    `written`: {program result index: program argument index}."""
    ret = program.block.last_op
    if not written or not isinstance(ret, kd.ReturnOp):
        return set()
    results: Sequence = list(ret.operands)
    out = set()
    for r, j in written.items():
        if r >= len(results) or j >= len(program.block.args):
            continue
        op = results[r].owner
        arg = program.block.args[j]
        if (
            isinstance(op, ScatterOp)
            and op.reduce.data == "none"
            and isinstance(op.operands[0], BlockArgument)
            and op.operands[0] is arg
            and sum(1 for _ in arg.uses) == 1
            and op.results[0].type == arg.type
        ):
            out.add(op)
    return out


def in_place_updates(program: kd.ProgramOp, written: dict[int, int]) -> set:
    """The launch outputs that may be written in the memory of the operand they update
    (UPDATES_ATTR; passes/fusion/scatter_stores.py), on the conditions above: the
    operand is a program argument, the launch is its only reader, and the output is
    returned as that input's new value."""
    ret = program.block.last_op
    if not written or not isinstance(ret, kd.ReturnOp):
        return set()
    returned = {j: ret.operands[r] for r, j in written.items() if r < len(ret.operands)}
    out = set()
    for op in program.block.ops:
        if not isinstance(op, kd.LaunchOp) or not op.updates:
            continue
        for result, j in zip(op.outs, op.updates):
            arg = op.args[j] if j != -1 else None
            if (
                isinstance(arg, BlockArgument)
                and returned.get(arg.index) is result
                and sum(1 for _ in arg.uses) == 1
                and result.type == arg.type
            ):
                out.add(result)
    return out


def update_step(op: kd.LaunchOp, slot, in_place: set) -> InlineStep:
    """The step before a launch that updates some of its operands: each such output's
    register is the operand itself (written in place), or a copy of it."""
    pairs = [(slot(r), slot(op.args[j]), r in in_place) for r, j in zip(op.outs, op.updates) if j != -1]

    def step(regs: list, env: dict) -> None:
        for result, operand, own in pairs:
            regs[result] = regs[operand] if own else regs[operand].clone(memory_format=torch.preserve_format)

    code = [
        f"regs[{result}] = regs[{operand}]" if own else f"regs[{result}] = regs[{operand}].clone(memory_format={{keep}})"
        for result, operand, own in pairs
    ]
    return InlineStep(code, {"keep": torch.preserve_format}, step, f"{op.callee.string_value()}'s updated operands")


def scatter_into(x, dim: int, index, src):
    """`x.scatter_(dim, index, src)`, returning x: the in-place form of prim.scatter."""
    return x.scatter_(dim, index.to(torch.int64), src)


def scatter_into_step(op: ScatterOp, slot) -> InlineStep:
    """The step running `op` into its destination argument's memory."""
    x, index, src = (slot(v) for v in op.operands)
    result, dim = slot(op.results[0]), op.dim.value.data

    def step(regs: list, env: dict) -> None:
        regs[result] = scatter_into(regs[x], dim, regs[index], regs[src])

    code = [f"regs[{result}] = {{f}}(regs[{x}], {dim}, regs[{index}], regs[{src}])"]
    return InlineStep(code, {"f": scatter_into}, step, f"{op.name} into its argument")
