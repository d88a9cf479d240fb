"""Memory layouts of the buffers inside a program: channels-last around convolutions.

A 2-D convolution in oneDNN (CPU) and cuDNN runs faster on NHWC tensors than on NCHW
ones (a quarter faster for a 3×3, 64-channel convolution on this machine's CPU,
docs/performance.md), but a conversion on each side costs more than it saves. So a
convolution's result is laid out channels-last, and so is a kernel output that a
convolution reads: the kernels between two convolutions (batch norm, activation,
residual add) read and write NHWC through their index expressions, and no copy is made.
A value the graph returns keeps the contiguous layout eager gives it.

The layout travels in the program as attributes the runtime and the interpreters read:
`strata.layout = "channels_last"` on a convolution, `strata.strides` (the strides of
each output) on a kernel.launch whose outputs are not contiguous.
"""

from __future__ import annotations

from collections.abc import Sequence

import sympy

from xdsl.ir import Operation, SSAValue

from strata.dialects import prim
from strata.dialects.types import Dim, TensorType, sym
from strata.passes.fusion.plan import Plan, view_root

CHANNELS_LAST = "channels_last"
LAYOUT_ATTR = "strata.layout"
STRIDES_ATTR = "strata.strides"


def channels_last_strides(dims: Sequence[Dim]) -> tuple[Dim, ...]:
    n, c, h, w = (sym(d) for d in dims)
    return tuple(_dim(e) for e in (c * h * w, 1, w * c, c))


def _dim(e) -> Dim:
    e = sympy.sympify(e)
    return int(e) if e.is_Integer else e


def choose_layouts(ops: list[Operation], outputs: list[SSAValue], plan: Plan, stored: set[SSAValue]) -> dict[SSAValue, tuple[Dim, ...]]:
    """The values laid out other than contiguously, with their strides."""
    returned = {view_root(v) for v in outputs}
    convolutions = [op for op in ops if isinstance(op, prim.ConvolutionOp) and _rank(op.results[0]) == 4]
    layouts: dict[SSAValue, tuple[Dim, ...]] = {}
    if not convolutions:
        return layouts
    # Kernel outputs a convolution reads: its input, and its weight where a kernel
    # makes that (autocast's cast of an f32 weight to bf16), which would otherwise be
    # reordered by a copy on every call.
    for op in convolutions:
        for x in op.operands[:2]:
            if x in stored and x in plan.kernel_of and x not in returned and _rank(x) == 4:
                layouts[x] = channels_last_strides(x.type.dims)
    # Convolution results, where what reads them goes on in NHWC: another convolution,
    # or a kernel that writes NHWC. A kernel that reads one layout and writes the other
    # gathers across channels on every element, which costs more than oneDNN's own
    # reorder (the last convolution before a graph result stays contiguous).
    readers = _kernels_reading(plan)
    for op in convolutions:
        r = op.results[0]
        if r in returned:
            continue
        direct = any(isinstance(u.operation, prim.ConvolutionOp) for u in r.uses)
        kernels = readers.get(r, [])
        if direct or any(any(n in layouts for n in k.nodes) for k in kernels):
            layouts[r] = channels_last_strides(r.type.dims)
    return layouts


def _kernels_reading(plan: Plan) -> dict[SSAValue, list]:
    """For each realized value, the kernels whose nodes read it."""
    from strata.passes.fusion.plan import is_reduction, operand_indices, reads

    out: dict[SSAValue, list] = {}
    for v, k in plan.kernel_of.items():
        op = v.owner
        leaves: list = []
        if is_reduction(op):
            reads(op.x, k.domain.full_index(), plan.realized, leaves)
        else:
            index = k.domain.index_for(v.type.dims)
            for operand, idx in zip(op.operands, operand_indices(op, index)):
                reads(operand, idx, plan.realized, leaves)
        for value, _ in leaves:
            out.setdefault(value, []).append(k)
    return out


def _rank(v: SSAValue) -> int:
    return len(v.type.dims) if isinstance(v.type, TensorType) else -1
