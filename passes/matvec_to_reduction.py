"""matvec-to-reduction: a matrix product of one row, [1, k] × [k, n], on a GPU, as a
sum over k of products in f32 — a reduction kernel instead of a cuBLAS call.

Batch-1 decoding runs every linear layer on one row: each weight element is read once
and used once, so the product is bound by the weight's bytes, not by arithmetic, and
cuBLAS's GEMM tiles (built for many rows) leave much of the bandwidth unused. Written
as `convert(sum(convert(a, f32) * convert(b, f32), k), dtype)`, the product becomes
one of strata's reduction kernels, which reads the weight as rows along k and fuses
what surrounds it (a bias, SwiGLU's product, a residual add) as an epilogue. The
products of two f16/bf16 or f32 numbers summed in f32 are what cuBLAS computes before
its one rounding; only the order of the sum differs.

Sibling products of one row by weights of different widths (q, k and v) become one
product over the weights side by side first (passes/row_product_siblings.py).

Only on CUDA (the graph's `strata.device`; on the CPU oneDNN's GEMV stays), only for
one row (with m rows the weight would be read m times over), and only for f16, bf16,
and f32 where TF32 is off (with TF32 on, eager's product rounds its inputs to TF32,
which this sum would not).
"""

from __future__ import annotations

from dataclasses import dataclass

from strata.dialects.lazy_torch import torch
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker
from xdsl.pattern_rewriter import RewritePattern, op_type_rewrite_pattern

from strata.dialects import prim
from strata.dialects.attributes import graph_device
from strata.passes.matmul_to_dot import products_summed
from strata.passes.provenance import inserter
from strata.passes.row_product_siblings import merge_sibling_row_products
from strata.dialects.types import TensorType, sym

MUL, ADD = prim.ELEMENTWISE_OPS["mul"], prim.ELEMENTWISE_OPS["add"]
SUM = prim.REDUCTION_OPS["sum"]
DTYPES = ("f16", "bf16", "f32")


def _eligible(op: Operation, a: SSAValue, b: SSAValue, device: str) -> bool:
    ta, tb = a.type, b.type
    if not (isinstance(ta, TensorType) and isinstance(tb, TensorType)) or ta.dtype not in DTYPES:
        return False
    if sym(ta.dims[0]) != 1 or (device or graph_device(op)) != "cuda":
        return False
    return not (ta.dtype == "f32" and torch.backends.cuda.matmul.allow_tf32)


def _row_product(rewriter: PatternRewriter, op: Operation, a: SSAValue, b: SSAValue) -> SSAValue:
    """sum_k a[0, k] · b[k, n] in f32, as [1, n] (not yet rounded): summed over the
    middle dim of [1, k, n], so that the sum has the product's own shape and what reads
    it (a bias, an activation) fuses into its kernel, with no reshape between."""
    return products_summed(inserter(rewriter, op), a, b).results[0]


@dataclass
class RowProductToReduction(RewritePattern):
    """mm, or addmm (bias + a × b, the bias added in f32 before the one rounding, as
    eager's addmm adds it), of one row."""

    device: str = ""

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: prim.MmOp | prim.AddmmOp, rewriter: PatternRewriter) -> None:
        if not _eligible(op, op.a, op.b, self.device):
            return
        total = _row_product(rewriter, op, op.a, op.b)
        add = inserter(rewriter, op)
        if isinstance(op, prim.AddmmOp):
            bias = op.bias
            if bias.type.dtype != "f32":
                bias = add(prim.ConvertElementTypeOp(bias, "f32"))
            if tuple(bias.type.dims) != tuple(total.type.dims):
                bias = add(prim.BroadcastInDimOp(bias, list(total.type.dims), list(range(2 - bias.type.rank, 2))))
            total = add(ADD(total, bias))
        if op.a.type.dtype != "f32":
            total = add(prim.ConvertElementTypeOp(total, op.result.type.dtype))
        rewriter.replace(op, [], [total])


@dataclass(frozen=True)
class MatvecToReductionPass(ModulePass):
    """`device`: the device to rewrite for, instead of the graph's own `strata.device`
    ("cuda" rewrites a program that names none, as strata-opt's input may)."""

    name = "matvec-to-reduction"
    device: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        merge_sibling_row_products(op, lambda mm: _eligible(mm, mm.a, mm.b, self.device))
        PatternRewriteWalker(RowProductToReduction(self.device)).rewrite_module(op)
