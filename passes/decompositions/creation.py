"""Tensor creation → prim.full / prim.iota. Shapes and dtypes come from the declared
result type; devices are ignored, since a graph's tensors live on one device and the
runtime places what it allocates."""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.ir import SSAValue

from strata.dialects import prim
from strata.dialects.aten import AtenOp
from strata.passes.decompositions.builder import Decline, PrimBuilder
from strata.passes.decompositions.rules import decomposes


def _strided(b: PrimBuilder) -> None:
    layout = b.arg("layout")
    if layout is not None and str(layout) != "torch.strided":
        raise Decline(f"layout {layout}")


@decomposes("aten::full", "aten::full_like")
def full(op: AtenOp, b: PrimBuilder) -> SSAValue:
    _strided(b)
    out = b.out()
    return b.full(out.dims, b.arg("fill_value"), out.dtype)


@decomposes("aten::scalar_tensor")
def scalar_tensor(op: AtenOp, b: PrimBuilder) -> SSAValue:
    _strided(b)
    return b.full([], b.arg("s"), b.out().dtype)


@decomposes("aten::fill.Scalar")
def fill(op: AtenOp, b: PrimBuilder) -> SSAValue:
    out = b.out()
    return b.full(out.dims, b.arg("value"), out.dtype)


@decomposes("aten::arange.start_step", "prims::iota")
def arange(op: AtenOp, b: PrimBuilder) -> SSAValue:
    if op.overload_name != "prims::iota":
        _strided(b)
    start, step = b.arg("start"), b.arg("step")
    if not all(type(v) is int for v in (start, step)):
        # Float (or symbolic) starts and steps accumulate in eager's own way.
        raise Decline(f"arange with start {start} and step {step}")
    out = b.out()
    return b.add(prim.IotaOp(out.dims[0], start, step, out.dtype))


# What an aten op reads of these arguments is only their shape and dtype.
SHAPE_ONLY_USES = {
    "aten::fill.Scalar": "self",
    "aten::copy": "self",
    "aten::full_like": "self",
    "aten::empty_like": "self",
}


# Ops that move elements without computing on them, by the arguments they move:
# uninitialized elements pass through them (and reach, at worst, the graph's results,
# where any value is right), so their results are followed on.
ELEMENT_MOVES = {
    "aten::slice.Tensor": ("self",),
    "aten::slice_scatter": ("self", "src"),
    "aten::select_scatter": ("self", "src"),
    "aten::copy": ("src",),
}


def _only_overwritten(result: SSAValue, seen: set[SSAValue] | None = None) -> str | None:
    """None if `result`'s elements reach nothing but ops that read only its shape,
    element moves (followed on) and the graph's results; else the first other user."""
    seen = set() if seen is None else seen
    if result in seen:
        return None
    seen.add(result)
    for use in result.uses:
        user = use.operation
        if isinstance(user, func.ReturnOp):
            continue  # the graph returns uninitialized memory: zeros are as good as any
        name = getattr(user, "overload_name", None)
        bound = user.bind() if name is not None else {}
        args = [a for a, v in bound.items() if v is result]
        if not args or list(user.operands).count(result) != len(args):
            return user.name
        if all(a == SHAPE_ONLY_USES.get(name) for a in args):
            continue
        if not all(a == SHAPE_ONLY_USES.get(name) or a in ELEMENT_MOVES.get(name, ()) for a in args):
            return user.name
        reader = _only_overwritten(user.results[0], seen)
        if reader is not None:
            return reader
    return None


@decomposes(
    "aten::empty.memory_format",
    "aten::empty_strided",
    "aten::empty_permuted",
    "aten::empty_like",
    "aten::new_empty_strided",
)
def empty(op: AtenOp, b: PrimBuilder) -> SSAValue:
    # Uninitialized memory may only reach ops that overwrite all of it, or that move
    # its elements into such ops (nn.functional.pad's circular mode fills an empty
    # tensor slice by slice); any value is then right, and the full it becomes is
    # dead or overwritten once those ops are lowered.
    reader = _only_overwritten(op.results[0])
    if reader is not None:
        raise Decline(f"an uninitialized tensor read by {reader}")
    _strided(b)
    out = b.out()
    return b.full(out.dims, 0, out.dtype)
