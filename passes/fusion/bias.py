"""A linear layer's bias added in the kernel that reads its product, where that is
faster: f32 on a GPU.

prim.addmm is one cuBLAS call with the bias in its epilogue, which rounds once, as
eager's addmm does. In f32, cuBLAS picks slower kernels for some shapes when asked for
that epilogue (H200, 6304×1536 @ 1536×384: 240 µs against 193 µs for the plain
product; docs/performance-history.md), and where only kernels read the result (a residual add,
an activation) the add costs nothing there: TorchInductor makes the same choice. The
product is then rounded to f32 before the add, a difference of an f32 rounding.
16-bit addmm stays whole: rounding the product to bf16 first would round twice.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.ir import SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from strata.dialects import prim
from strata.dialects.attributes import graph_device


def add_biases_in_kernels(fn: func.FuncOp) -> int:
    """Rewrites each f32 prim.addmm of a 1-d bias whose result only kernels read into
    prim.mm and an elementwise add; returns how many. CUDA graphs only."""
    if graph_device(fn) != "cuda":
        return 0
    done = 0
    for op in [o for o in fn.walk() if isinstance(o, prim.AddmmOp)]:
        out = op.results[0]
        if out.type.dtype != "f32" or op.bias.type.rank != 1 or not _only_kernels_read(out):
            continue
        product = prim.MmOp(op.a, op.b)
        bias = prim.BroadcastInDimOp(op.bias, out.type.dims, [1])
        total = prim.ELEMENTWISE_OPS["add"](product.results[0], bias.results[0])
        Rewriter.insert_op([product, bias, total], InsertPoint.before(op))
        for k in ("strata.source",):
            if k in op.attributes:
                for new in (product, bias, total):
                    new.attributes[k] = op.attributes[k]
        op.results[0].replace_all_uses_with(total.results[0])
        Rewriter.erase_op(op)
        done += 1
    return done


def _only_kernels_read(v: SSAValue) -> bool:
    """Every reader is an elementwise op, or a reshape only elementwise ops read."""
    if not v.uses:
        return False
    for use in v.uses:
        user = use.operation
        if isinstance(user, prim.ElementwiseOp):
            continue
        if isinstance(user, prim.ReshapeOp) and _only_kernels_read(user.results[0]):
            continue
        return False
    return True
