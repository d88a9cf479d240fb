"""The order of a kernel's pointwise loop variables, for Triton.

Triton's generator flattens the pointwise domain row-major onto one program axis, so
the last loop variable is the one consecutive lanes walk. A kernel over [N, C, H, W]
whose buffers are channels-last (passes/fusion/layouts.py) walks memory contiguously
along C, not W: flattened as it is, each lane of a warp would touch its own 32-byte
sector. Renaming the loop variables so that C comes last makes those accesses
coalesced. The kernel is the same computation either way: the domain's dims are
permuted and every index rewritten with the renamed variables.
"""

from __future__ import annotations

import sympy
from xdsl.dialects.builtin import StringAttr

from strata.dialects.kernel import FuncOp, IndexedOp, loop_vars
from strata.dialects.prim import dims_attr


def contiguous_last(func: FuncOp) -> FuncOp:
    """`func`, or a copy of it whose last pointwise variable is the one the most
    full-size accesses (loads and stores that depend on every non-unit dim, not
    broadcast parameters) walk with stride 1."""
    dims = func.pointwise_dims
    n = len(dims)
    if n < 2:
        return func
    xs = loop_vars("x", n)
    varying = {x for x, d in zip(xs, dims) if d != 1}
    score = [0] * n
    for op in func.block.ops:
        if not isinstance(op, IndexedOp) or op.name == "kernel.index":
            continue
        e = sympy.expand(op.index_expr)
        if not varying or not varying <= e.free_symbols:
            continue
        for i, x in enumerate(xs):
            if x in varying and e.coeff(x) == 1:
                score[i] += 1
    best = max(range(n), key=lambda i: (score[i], i))
    if best == n - 1 or score[best] <= score[n - 1]:
        return func
    order = [i for i in range(n) if i != best] + [best]  # new position -> old variable
    renamed = {xs[old]: xs[new] for new, old in enumerate(order)}
    out = func.clone()
    out.properties["pointwise"] = dims_attr([dims[old] for old in order])
    for op in out.walk():
        if isinstance(op, IndexedOp):
            op.properties["index"] = StringAttr(sympy.sstr(op.index_expr.xreplace(renamed)))
    return out
