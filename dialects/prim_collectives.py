"""Collectives: torch.distributed's functional collectives as prim ops.

Traced FSDP2, DTensor tensor parallel and compiled-autograd DDP put
`_c10d_functional` ops in the graphs a backend receives. Each becomes one prim op here,
run by the program as torch's functional collective (a library call on the process
group named by `group`), so that the graph around it compiles:

- a collective (prim.all_reduce, prim.all_gather, prim.reduce_scatter, prim.all_to_all,
  prim.broadcast, and the coalesced forms) *issues* the communication and gives its
  result, which may be read only through prim.wait;
- prim.wait is where the program waits for it.

Every rank runs the same program, so the collectives are issued in the same order
everywhere, as the process group requires; between an issue and its wait the program
computes whatever does not depend on the result (passes/schedule_collectives.py moves
issues early and waits late). The reference of a collective issues and waits at once;
that of prim.wait is the identity: an interpreter computes the same values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import sympy
from strata.dialects.lazy_torch import torch
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, StringAttr, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, opt_prop_def, prop_def, result_def, var_operand_def, var_result_def
from xdsl.utils.exceptions import VerifyException

from strata.dialects.prim import TensorOp, dims_attr, dims_of
from strata.dialects.types import Dim, TensorType, sym

REDUCE_OPS = ("sum", "avg", "product", "min", "max", "band", "bor", "bxor", "premul_sum")


def functional(name: str):
    """torch's functional collective `name` (torch.ops._c10d_functional)."""
    import torch.distributed  # noqa: F401  (registers the _c10d_functional ops)

    return getattr(torch.ops._c10d_functional, name).default


class CollectiveOp(TensorOp):
    """A collective over the process group `group` (its registered name)."""

    group = prop_def(StringAttr)

    FUNCTIONAL: ClassVar[str] = ""  # its name in torch.ops._c10d_functional
    ARGS: ClassVar[tuple[str, ...]] = ()  # the properties it passes, before the group's name
    COALESCED: ClassVar[bool] = False  # several tensors in one call

    def call_args(self) -> tuple:
        """The arguments of the functional collective after the tensor operands."""
        values = [self.properties[name] for name in self.ARGS]
        return (*(v.data if isinstance(v, StringAttr) else v.value.data for v in values), self.group.data)

    def issue(self, *xs: torch.Tensor):
        """Starts the collective (torch's functional op); its result is read after wait_tensor."""
        return functional(self.FUNCTIONAL)(*([list(xs)] if self.COALESCED else xs), *self.call_args())

    def reference(self, *xs: torch.Tensor):
        out = self.issue(*xs)
        wait = functional("wait_tensor")
        return [wait(t) for t in out] if self.COALESCED else wait(out)


def _reduce_op(op: CollectiveOp) -> None:
    if op.reduce_op.data not in REDUCE_OPS:
        raise VerifyException(f"{op.name}: no reduction {op.reduce_op.data!r} (one of {', '.join(REDUCE_OPS)})")


def _tensor(v: SSAValue) -> TensorType:
    if not isinstance(v.type, TensorType):
        raise VerifyException(f"a collective takes tensors, got {v.type}")
    return v.type


def _first_dim_times(t: TensorType, factor: int) -> TensorType:
    if t.rank == 0:
        raise VerifyException("a gather or scatter along dim 0 needs a tensor of rank 1 or more")
    return t.with_dims([sym(t.dims[0]) * factor, *t.dims[1:]])


def _first_dim_over(t: TensorType, factor: int) -> TensorType:
    if t.rank == 0:
        raise VerifyException("a gather or scatter along dim 0 needs a tensor of rank 1 or more")
    first = sym(t.dims[0])
    if first.is_Integer and int(first) % factor:
        raise VerifyException(f"dim 0 ({first}) is not a multiple of the group's size {factor}")
    return t.with_dims([first / factor if not first.is_Integer else int(first) // factor, *t.dims[1:]])


@irdl_op_definition
class AllReduceOp(CollectiveOp):
    """x reduced elementwise over the group with `reduce_op`; same type as x."""

    name = "prim.all_reduce"
    x = operand_def()
    result = result_def()
    reduce_op = prop_def(StringAttr)
    FUNCTIONAL: ClassVar[str] = "all_reduce"
    ARGS: ClassVar[tuple[str, ...]] = ("reduce_op",)

    def __init__(self, x: SSAValue, reduce_op: str, group: str):
        super().__init__(operands=[x], result_types=[x.type],
                         properties={"reduce_op": StringAttr(reduce_op), "group": StringAttr(group)})

    def infer_type(self) -> Attribute:
        return _tensor(self.x)

    def verify_(self) -> None:
        _reduce_op(self)
        super().verify_()


@irdl_op_definition
class AllGatherOp(CollectiveOp):
    """The group's xs concatenated along dim 0, in rank order: dim 0 × group_size."""

    name = "prim.all_gather"
    x = operand_def()
    result = result_def()
    group_size = prop_def(IntegerAttr)
    FUNCTIONAL: ClassVar[str] = "all_gather_into_tensor"
    ARGS: ClassVar[tuple[str, ...]] = ("group_size",)

    def __init__(self, x: SSAValue, group_size: int, group: str):
        super().__init__(operands=[x], result_types=[_first_dim_times(_tensor(x), group_size)],
                         properties={"group_size": IntegerAttr(group_size, i64), "group": StringAttr(group)})

    def infer_type(self) -> Attribute:
        return _first_dim_times(_tensor(self.x), self.group_size.value.data)


@irdl_op_definition
class ReduceScatterOp(CollectiveOp):
    """x reduced over the group, then this rank's block of dim 0: dim 0 ÷ group_size."""

    name = "prim.reduce_scatter"
    x = operand_def()
    result = result_def()
    reduce_op = prop_def(StringAttr)
    group_size = prop_def(IntegerAttr)
    FUNCTIONAL: ClassVar[str] = "reduce_scatter_tensor"
    ARGS: ClassVar[tuple[str, ...]] = ("reduce_op", "group_size")

    def __init__(self, x: SSAValue, reduce_op: str, group_size: int, group: str):
        super().__init__(operands=[x], result_types=[_first_dim_over(_tensor(x), group_size)],
                         properties={"reduce_op": StringAttr(reduce_op), "group_size": IntegerAttr(group_size, i64),
                                     "group": StringAttr(group)})

    def infer_type(self) -> Attribute:
        return _first_dim_over(_tensor(self.x), self.group_size.value.data)

    def verify_(self) -> None:
        _reduce_op(self)
        super().verify_()


@irdl_op_definition
class AllToAllOp(CollectiveOp):
    """Blocks of dim 0 exchanged between ranks: `input_split_sizes` rows go to each
    rank, `output_split_sizes` rows come from each (equal blocks where absent)."""

    name = "prim.all_to_all"
    x = operand_def()
    result = result_def()
    output_split_sizes = opt_prop_def(ArrayAttr)
    input_split_sizes = opt_prop_def(ArrayAttr)
    FUNCTIONAL: ClassVar[str] = "all_to_all_single"

    def __init__(self, x: SSAValue, output_split_sizes: Sequence[Dim] | None, input_split_sizes: Sequence[Dim] | None,
                 group: str):
        props: dict[str, Attribute] = {"group": StringAttr(group)}
        if output_split_sizes is not None:
            props["output_split_sizes"] = dims_attr(output_split_sizes)
        if input_split_sizes is not None:
            props["input_split_sizes"] = dims_attr(input_split_sizes)
        t = _tensor(x)
        dims = t.dims if output_split_sizes is None else [sympy.Add(*[sym(d) for d in output_split_sizes]), *t.dims[1:]]
        super().__init__(operands=[x], result_types=[t.with_dims(dims)], properties=props)

    def infer_type(self) -> Attribute:
        t = _tensor(self.x)
        if self.output_split_sizes is None:
            return t
        return t.with_dims([sympy.Add(*[sym(d) for d in dims_of(self.output_split_sizes)]), *t.dims[1:]])

    def call_args(self) -> tuple:
        from strata.dialects.types import concrete

        sizes = [None if a is None else concrete(dims_of(a)) for a in (self.output_split_sizes, self.input_split_sizes)]
        return sizes[0], sizes[1], self.group.data


@irdl_op_definition
class BroadcastOp(CollectiveOp):
    """Rank `src`'s x on every rank."""

    name = "prim.broadcast"
    x = operand_def()
    result = result_def()
    src = prop_def(IntegerAttr)
    FUNCTIONAL: ClassVar[str] = "broadcast"
    ARGS: ClassVar[tuple[str, ...]] = ("src",)

    def __init__(self, x: SSAValue, src: int, group: str):
        super().__init__(operands=[x], result_types=[x.type],
                         properties={"src": IntegerAttr(src, i64), "group": StringAttr(group)})

    def infer_type(self) -> Attribute:
        return _tensor(self.x)


class _Coalesced(CollectiveOp):
    """One collective of several tensors, issued as one call."""

    xs = var_operand_def()
    outs = var_result_def()
    COALESCED: ClassVar[bool] = True

    def infer_types(self) -> list[Attribute]:
        """Each result's type: its operand's (an all_reduce's); gathers and scatters say otherwise."""
        return [_tensor(x) for x in self.xs]

    def infer_type(self) -> Attribute:
        raise VerifyException(f"{self.name} has several results")

    def verify_(self) -> None:
        wanted = self.infer_types()
        if len(wanted) != len(self.outs) or any(r.type != w for r, w in zip(self.outs, wanted)):
            raise VerifyException(f"{self.name}: result types {[r.type for r in self.outs]} are not {wanted}")


@irdl_op_definition
class AllReduceCoalescedOp(_Coalesced):
    name = "prim.all_reduce_coalesced"
    reduce_op = prop_def(StringAttr)
    FUNCTIONAL: ClassVar[str] = "all_reduce_coalesced"
    ARGS: ClassVar[tuple[str, ...]] = ("reduce_op",)

    def __init__(self, xs: Sequence[SSAValue], reduce_op: str, group: str):
        super().__init__(operands=[list(xs)], result_types=[[x.type for x in xs]],
                         properties={"reduce_op": StringAttr(reduce_op), "group": StringAttr(group)})


@irdl_op_definition
class AllGatherCoalescedOp(_Coalesced):
    name = "prim.all_gather_coalesced"
    group_size = prop_def(IntegerAttr)
    FUNCTIONAL: ClassVar[str] = "all_gather_into_tensor_coalesced"
    ARGS: ClassVar[tuple[str, ...]] = ("group_size",)

    def __init__(self, xs: Sequence[SSAValue], group_size: int, group: str):
        super().__init__(operands=[list(xs)], result_types=[[_first_dim_times(_tensor(x), group_size) for x in xs]],
                         properties={"group_size": IntegerAttr(group_size, i64), "group": StringAttr(group)})

    def infer_types(self) -> list[Attribute]:
        return [_first_dim_times(_tensor(x), self.group_size.value.data) for x in self.xs]


@irdl_op_definition
class ReduceScatterCoalescedOp(_Coalesced):
    name = "prim.reduce_scatter_coalesced"
    reduce_op = prop_def(StringAttr)
    group_size = prop_def(IntegerAttr)
    FUNCTIONAL: ClassVar[str] = "reduce_scatter_tensor_coalesced"
    ARGS: ClassVar[tuple[str, ...]] = ("reduce_op", "group_size")

    def __init__(self, xs: Sequence[SSAValue], reduce_op: str, group_size: int, group: str):
        super().__init__(operands=[list(xs)], result_types=[[_first_dim_over(_tensor(x), group_size) for x in xs]],
                         properties={"reduce_op": StringAttr(reduce_op), "group_size": IntegerAttr(group_size, i64),
                                     "group": StringAttr(group)})

    def infer_types(self) -> list[Attribute]:
        return [_first_dim_over(_tensor(x), self.group_size.value.data) for x in self.xs]


@irdl_op_definition
class WaitOp(TensorOp):
    """x once the collective that made it has completed; same type."""

    name = "prim.wait"
    x = operand_def()
    result = result_def()

    def __init__(self, x: SSAValue):
        super().__init__(operands=[x], result_types=[x.type])

    def infer_type(self) -> Attribute:
        return _tensor(self.x)

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        return x


COLLECTIVE_OPS = (AllReduceOp, AllGatherOp, ReduceScatterOp, AllToAllOp, BroadcastOp, AllReduceCoalescedOp,
                  AllGatherCoalescedOp, ReduceScatterCoalescedOp)
COMMUNICATION_OPS = (*COLLECTIVE_OPS, WaitOp)
