"""matmul-to-dot: matrix products (prim.mm, prim.bmm, prim.addmm) and 2-d convolutions
(passes/convolution_to_dot.py) as sums over k of f32 products, which fusion makes one
kernel with what surrounds them and the Triton generator runs as a tiled `tl.dot`
template (codegen/triton_matmul.py).

A library call runs alone: the bias, activation, residual add or cast that follows it
is another kernel that reads the product back from memory. Written as
`convert(sum(a32[m, k, ·] · b32[·, k, n], k), dtype)` and marked `strata.dot`, the
product is a reduction kernel whose epilogue is fused like any reduction's; the
template keeps the f32 accumulator on chip and rounds once, where it stores, as cuBLAS
does. max-autotune puts this pass in the pipeline, and the template's launcher times
its tile configurations against cuBLAS followed by the same epilogue, so the library
call still wins where it is faster.

`epilogue_fusion=False`: the product (rounded to its dtype) is realized as it is, and
what reads it runs in other kernels, as with a library call. `target`: "" rewrites a
graph whose `strata.device` is cuda (the CPU's LLVM generator has no template: oneDNN
stays); "triton" rewrites any graph (Triton's interpreter runs CPU tensors).

f16, bf16 and f32 products are rewritten; an f32 product is marked "tf32" when torch
allows TF32 in matmuls (torch.backends.cuda.matmul.allow_tf32), as eager's cuBLAS then
rounds its inputs, else "ieee". Products of one row are left to matvec-to-reduction.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from strata.dialects.lazy_torch import torch
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp, StringAttr, UnitAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriter, PatternRewriteWalker
from xdsl.pattern_rewriter import RewritePattern, op_type_rewrite_pattern

from strata.dialects import prim
from strata.dialects.attributes import DOT_ATTR, NO_EPILOGUE_ATTR, graph_device
from strata.dialects.types import TensorType, sym
from strata.passes import convolution_to_dot
from strata.passes.provenance import inserter

MUL, ADD = prim.ELEMENTWISE_OPS["mul"], prim.ELEMENTWISE_OPS["add"]
SUM = prim.REDUCTION_OPS["sum"]
DTYPES = ("f16", "bf16", "f32")


def precision(dtype: str) -> str:
    """How a template multiplies inputs of `dtype`: "tf32" only for f32 where torch allows it."""
    return "tf32" if dtype == "f32" and torch.backends.cuda.matmul.allow_tf32 else "ieee"


def products_summed(add, a: SSAValue, b: SSAValue, rows: list | None = None) -> Operation:
    """The prim.sum over k of a[.., m, k] · b[.., k, n] in f32, of shape [.., m, n];
    with `rows` (a 2-d product only), m split into those dims: [*rows, n]."""
    ta, tb = a.type, b.type
    *batch, m, k = ta.dims
    n = tb.dims[-1]
    if rows is not None:
        a = _unflattened(add, a, [*rows, k]) or add(prim.ReshapeOp(a, [*rows, k]))
    a32 = a if ta.dtype == "f32" else add(prim.ConvertElementTypeOp(a, "f32"))
    b32 = b if tb.dtype == "f32" else add(prim.ConvertElementTypeOp(b, "f32"))
    if rows is not None:
        full = [*rows, k, n]
        lead = len(rows)
        wide_a = add(prim.BroadcastInDimOp(a32, full, list(range(lead + 1))))
        wide_b = add(prim.BroadcastInDimOp(b32, full, [lead, lead + 1]))
        total = SUM(add(MUL(wide_a, wide_b)), [lead])
        add(total)
        return total
    full = [*batch, m, k, n]
    lead = list(range(len(batch)))
    wide_a = add(prim.BroadcastInDimOp(a32, full, [*lead, len(batch), len(batch) + 1]))
    wide_b = add(prim.BroadcastInDimOp(b32, full, [*lead, len(batch) + 1, len(batch) + 2]))
    total = SUM(add(MUL(wide_a, wide_b)), [len(batch) + 1])
    add(total)
    return total


def _unflattened(add, a: SSAValue, dims: list) -> SSAValue | None:
    """`a` ([m, k]) computed from the 3-d value the product's view flattened, where it
    is that view, maybe converted (autocast's cast of a linear layer's input): read as
    it is, so that the operand keeps the shape its producer's kernel has."""
    op = a.owner
    if isinstance(op, prim.ReshapeOp) and [sym(d) for d in op.x.type.dims] == [sym(d) for d in dims]:
        return op.x
    if isinstance(op, prim.ConvertElementTypeOp):
        inner = _unflattened(add, op.x, dims)
        return None if inner is None else add(prim.ConvertElementTypeOp(inner, a.type.dtype))
    return None


def split_rows(op: Operation) -> tuple[list, list[prim.ReshapeOp]] | None:
    """Where every reader of a 2-d product reshapes it to one shape [*rows, n] (a
    linear layer of a 3-d input: view, product, view back), those rows and readers."""
    if isinstance(op, prim.BmmOp) or not op.result.uses:
        return None
    m, n = op.result.type.dims
    readers = [u.operation for u in op.result.uses]
    shapes = {tuple(r.result.type.dims) for r in readers if isinstance(r, prim.ReshapeOp)}
    if len(shapes) != 1 or not all(isinstance(r, prim.ReshapeOp) for r in readers):
        return None
    (shape,) = shapes
    if len(shape) < 3 or sym(shape[-1]) != sym(n) or sympy.simplify(sympy.Mul(*map(sym, shape[:-1])) - sym(m)) != 0:
        return None
    return list(shape[:-1]), readers


@dataclass
class ProductToDot(RewritePattern):
    target: str = ""
    epilogue_fusion: bool = True

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: prim.MmOp | prim.BmmOp | prim.AddmmOp, rewriter: PatternRewriter) -> None:
        """The product rounded once after its bias; computed in the shape its readers
        view it in (so that what follows a linear layer of a 3-d input, which reads it
        through that view, fuses as its epilogue)."""
        a, b = op.a, op.b
        if not _eligible(op, a, b, self.target):
            return
        add = inserter(rewriter, op)
        split = split_rows(op)
        rows, readers = split if split is not None else (None, [])
        total = products_summed(add, a, b, rows)
        total.attributes[DOT_ATTR] = StringAttr(precision(a.type.dtype))
        result = total.results[0]
        dims = list(result.type.dims)
        marked = [total]
        if isinstance(op, prim.AddmmOp):  # the bias added in f32, before the one rounding
            bias = op.bias
            if bias.type.dtype != "f32":
                bias = add(prim.ConvertElementTypeOp(bias, "f32"))
            if rows is not None and bias.type.rank == 2:  # [m, n] or [1, n]: as the result's rows split m
                bias = add(prim.ReshapeOp(bias, dims if sym(bias.type.dims[0]) != 1 else [bias.type.dims[-1]]))
            if tuple(bias.type.dims) != tuple(dims):
                bias = add(prim.BroadcastInDimOp(bias, dims, list(range(len(dims) - bias.type.rank, len(dims)))))
            result = add(ADD(result, bias))
            marked.append(result.owner)
        if a.type.dtype != "f32":
            result = add(prim.ConvertElementTypeOp(result, op.result.type.dtype))
            marked.append(result.owner)
        if not self.epilogue_fusion:
            for m in marked:
                m.attributes[NO_EPILOGUE_ATTR] = UnitAttr()
        if rows is None:
            rewriter.replace(op, [], [result])
            return
        for reader in readers:
            rewriter.replace(reader, [], [result])
        rewriter.erase(op)


@dataclass
class ConvolutionToDot(RewritePattern):
    target: str = ""
    epilogue_fusion: bool = True

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: prim.ConvolutionOp, rewriter: PatternRewriter) -> None:
        """A 2-d convolution as an implicit GEMM (passes/convolution_to_dot.py)."""
        if convolution_to_dot.eligible(op, self.target):
            convolution_to_dot.rewrite(op, rewriter, self.epilogue_fusion)


def _eligible(op: Operation, a: SSAValue, b: SSAValue, target: str) -> bool:
    ta, tb = a.type, b.type
    if not (isinstance(ta, TensorType) and isinstance(tb, TensorType)) or ta.dtype not in DTYPES:
        return False
    if target != "triton" and graph_device(op) != "cuda":
        return False
    # one row times a matrix is matvec-to-reduction's (a bandwidth-bound reduction)
    return not (sym(ta.dims[-2]) == 1 and not isinstance(op, prim.BmmOp) and precision(ta.dtype) == "ieee")


@dataclass(frozen=True)
class MatmulToDotPass(ModulePass):
    name = "matmul-to-dot"
    target: str = ""
    epilogue_fusion: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.target not in ("", "triton"):
            raise ValueError(f"matmul-to-dot: target must be '' (the graph's device) or 'triton', not {self.target!r}")
        PatternRewriteWalker(GreedyRewritePatternApplier([
            ProductToDot(self.target, self.epilogue_fusion), ConvolutionToDot(self.target, self.epilogue_fusion),
        ])).rewrite_module(op)
