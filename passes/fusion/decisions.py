"""How fusion's log lines name things: values, domains and kernels.

Fusion logs under `strata.fusion` (see frontend/inspection/logs.py): at INFO each kernel formed
and the bytes it saves, at DEBUG every decision (why a value is realized, which kernel
a node joins, what kept it out of the others). Text is built only when the level is on.
"""

from __future__ import annotations

import logging

from xdsl.ir import Operation, SSAValue

from strata.dialects.types import Dim, TensorType
from strata.passes.provenance import source_of

log = logging.getLogger("strata.fusion")


def debug_enabled() -> bool:
    return log.isEnabledFor(logging.DEBUG)


def info_enabled() -> bool:
    return log.isEnabledFor(logging.INFO)


def dims_text(dims: tuple[Dim, ...] | list[Dim]) -> str:
    return "[" + ", ".join(str(d) for d in dims) + "]"


def type_text(v: SSAValue) -> str:
    t = v.type
    return f"{dims_text(t.dims)} {t.dtype}" if isinstance(t, TensorType) else str(t)


def describe_op(op: Operation) -> str:
    """`prim.sum (aten._softmax.default @ f.py:3)`."""
    source = source_of(op)
    if source is None:
        return op.name
    where = source.short_location
    origin = source.op + (f" @ {where}" if where else "")
    return f"{op.name} ({origin})" if origin != op.name else op.name


def describe_value(v: SSAValue) -> str:
    """`prim.sum [4] f32 (aten._softmax.default @ f.py:3)`; graph inputs as `input #i`."""
    op = v.owner
    if not isinstance(op, Operation):
        return f"input #{v.index} {type_text(v)}"
    text = describe_op(op)
    name, _, origin = text.partition(" ")
    return f"{name} {type_text(v)}" + (f" {origin}" if origin else "")


def domain_text(domain) -> str:
    """`[4, 6]`, or `[4] x reduce [6]` for a reduction domain."""
    if not domain.reduced:
        return dims_text(domain.full)
    return f"{dims_text(domain.kept)} x reduce {dims_text(domain.reduction_dims)}"


def kernel_name(schedule: list, kernel) -> str:
    """The name lowering will give the kernel: k<its position among the kernels>."""
    from strata.passes.fusion.plan import Kernel

    n = 0
    for item in schedule:
        if item is kernel:
            return f"k{n}"
        if isinstance(item, Kernel):
            n += 1
    return f"k{n}"
