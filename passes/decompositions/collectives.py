"""torch.distributed's functional collectives (`_c10d_functional::*`, what traced
FSDP2, DTensor and compiled-autograd DDP put in a graph) → prim collectives and
prim.wait (dialects/prim_collectives.py): library calls the program issues and waits
for, so that the rest of the graph compiles around them."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue

from strata.dialects.aten import AtenOp
from strata.dialects.prim_collectives import (
    AllGatherCoalescedOp,
    AllGatherOp,
    AllReduceCoalescedOp,
    AllReduceOp,
    AllToAllOp,
    BroadcastOp,
    ReduceScatterCoalescedOp,
    ReduceScatterOp,
    WaitOp,
)
from strata.passes.decompositions.builder import PrimBuilder
from strata.passes.decompositions.rules import decomposes


@decomposes("_c10d_functional::all_reduce")
def all_reduce(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return b.add_checked(AllReduceOp(b.arg("input"), b.arg("reduce_op"), b.arg("group_name")))


@decomposes("_c10d_functional::all_gather_into_tensor")
def all_gather(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return b.add_checked(AllGatherOp(b.arg("input"), int(b.arg("group_size")), b.arg("group_name")))


@decomposes("_c10d_functional::reduce_scatter_tensor")
def reduce_scatter(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return b.add_checked(ReduceScatterOp(b.arg("input"), b.arg("reduce_op"), int(b.arg("group_size")), b.arg("group_name")))


@decomposes("_c10d_functional::all_to_all_single")
def all_to_all(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return b.add_checked(AllToAllOp(b.arg("input"), b.arg("output_split_sizes"), b.arg("input_split_sizes"),
                                  b.arg("group_name")))


@decomposes("_c10d_functional::broadcast")
def broadcast(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return b.add_checked(BroadcastOp(b.arg("input"), int(b.arg("src")), b.arg("group_name")))


@decomposes("_c10d_functional::all_reduce_coalesced")
def all_reduce_coalesced(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return b.add_checked(AllReduceCoalescedOp(b.arg("inputs"), b.arg("reduce_op"), b.arg("group_name")))


@decomposes("_c10d_functional::all_gather_into_tensor_coalesced")
def all_gather_coalesced(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return b.add_checked(AllGatherCoalescedOp(b.arg("inputs"), int(b.arg("group_size")), b.arg("group_name")))


@decomposes("_c10d_functional::reduce_scatter_tensor_coalesced")
def reduce_scatter_coalesced(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return b.add_checked(ReduceScatterCoalescedOp(b.arg("inputs"), b.arg("reduce_op"), int(b.arg("group_size")),
                                                b.arg("group_name")))


@decomposes("_c10d_functional::wait_tensor")
def wait(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    return b.add_checked(WaitOp(b.arg("tensor")))
