"""A 2-d convolution as a matrix product (implicit GEMM), for matmul-to-dot.

    y[n, o, i, j] = Σ_{p, q, c} x[n, c, i·s + p·d − pad, j·s' + q·d' − pad'] · w[o, c, p, q]

is a product of an [N·OH·OW, KH·KW·C] matrix that is never materialized (each element
read from x where the window puts it, zero in the padding) with the weight as a
[KH·KW·C, C_out] matrix. Written that way it is a marked sum like a linear layer's
(passes/matmul_to_dot.py), so fusion takes the batch norm, activation and residual add
after it as its epilogue and the matmul template computes it in one kernel; the
template's library tile is the convolution itself (cuDNN), so the tuner keeps cuDNN
where it is faster, with the epilogue's cost counted.

The window read is a prim.gather of x, viewed as [N, H·W, C], at the flat position
(i·s + p·d − pad)·W + (j·s' + q·d' − pad') computed from iotas, under a `where` that
is zero outside the input: fusion computes it where the template reads it (a gather at
positions from iotas, passes/fusion/gather.py), and the template evaluates it on each
[BLOCK_M, BLOCK_K] tile. k runs over (p, q, c), channels innermost: in a channels-last
input consecutive k are consecutive addresses.

The sum carries CONVOLUTION_ATTR (stride, padding, dilation, x's and w's shapes), from
which the template builds the library call and the layout pass lays x and the result
out channels-last, as for cuDNN.
"""

from __future__ import annotations

from xdsl.dialects.builtin import DictionaryAttr, StringAttr, UnitAttr
from xdsl.ir import Operation, SSAValue
from xdsl.pattern_rewriter import PatternRewriter

from strata.dialects import prim
from strata.dialects.prim_indexing import GatherOp
from strata.dialects.attributes import CONVOLUTION_ATTR, DOT_ATTR, NO_EPILOGUE_ATTR, graph_device
from strata.dialects.lazy_torch import torch
from strata.dialects.types import TensorType, sym
from strata.passes.provenance import inserter

DTYPES = ("f16", "bf16", "f32")
EW = prim.ELEMENTWISE_OPS


def precision(dtype: str) -> str:
    """How the template multiplies inputs of `dtype`: "tf32" for f32 where torch lets
    cuDNN use it (torch.backends.cudnn.allow_tf32, on by default), as eager then does."""
    return "tf32" if dtype == "f32" and torch.backends.cudnn.allow_tf32 else "ieee"


def eligible(op: prim.ConvolutionOp, target: str) -> bool:
    """A plain 2-d convolution of one group, static sizes, f16/bf16/f32, on the GPU (or
    any device for target "triton")."""
    x, w = op.x.type, op.w.type
    if not (isinstance(x, TensorType) and isinstance(w, TensorType)) or x.rank != 4 or x.dtype not in DTYPES:
        return False
    if op.transposed is not None or op.groups.value.data != 1 or w.dtype != x.dtype:
        return False
    if any(not sym(d).is_Integer for d in (*x.dims, *w.dims, *op.result.type.dims)):
        return False
    return target == "triton" or graph_device(op) == "cuda"


def convolution_attr(op: prim.ConvolutionOp) -> DictionaryAttr:
    def ints(values) -> StringAttr:
        return StringAttr(",".join(str(int(v)) for v in values))

    return DictionaryAttr({
        "stride": ints(prim.ints_of(op.stride)), "padding": ints(prim.ints_of(op.padding)),
        "dilation": ints(prim.ints_of(op.dilation)), "x": ints(op.x.type.dims), "w": ints(op.w.type.dims),
    })


EPILOGUE_OPS = (prim.ElementwiseOp, prim.WhereOp, prim.ConvertElementTypeOp, prim.BroadcastInDimOp, prim.ReshapeOp,
                 prim.PermuteOp, prim.SliceOp)
# What may move above the convolution: values of their operands alone (no random draw,
# no eager fallback, whose order eager's generator or a side effect could see).
MOVABLE_OPS = (*EPILOGUE_OPS, prim.FullOp, prim.IotaOp, prim.ReductionOp, prim.ConvolutionOp, prim.MmOp, prim.BmmOp,
               prim.AddmmOp)


def hoist_epilogue_operands(op: Operation) -> None:
    """Moves above op what its epilogue reads besides it (a batch norm's per-channel
    scale, computed after the convolution in the graph): the elementwise ops and views
    that follow op and read it, up to the first that is not one, may then join its
    kernel (fusion joins a node to a kernel only where what it reads is ready before).
    An operand whose computation holds anything but MOVABLE_OPS stays where it is."""
    block = op.parent_block()
    after = set()
    at = op.next_op
    while at is not None:
        after.add(at)
        at = at.next_op
    dependent = set(op.results)
    moved: set[Operation] = set()

    def cone(v: SSAValue, found: set[Operation]) -> bool:
        owner = v.owner
        if owner not in after or owner in moved or owner in found:
            return True
        if not isinstance(owner, MOVABLE_OPS):
            return False
        found.add(owner)
        return all(cone(x, found) for x in owner.operands)

    at = op.next_op
    while at is not None:
        if any(x in dependent for x in at.operands):
            if not isinstance(at, EPILOGUE_OPS):
                break
            dependent.update(at.results)
            for x in at.operands:
                found: set[Operation] = set()
                if x not in dependent and cone(x, found):
                    moved |= found
        at = at.next_op
    for m in [o for o in block.ops if o in moved]:
        m.detach()
        block.insert_op_before(m, op)


def rewrite(op: prim.ConvolutionOp, rewriter: PatternRewriter, epilogue_fusion: bool) -> None:
    hoist_epilogue_operands(op)
    add = inserter(rewriter, op)
    x, w = op.x, op.w
    n, c, h, wd = (int(sym(d)) for d in x.type.dims)
    co, _, kh, kw = (int(sym(d)) for d in w.type.dims)
    _, _, oh, ow = (int(sym(d)) for d in op.result.type.dims)
    (sh, sw), (ph, pw), (dh, dw) = (prim.ints_of(a) for a in (op.stride, op.padding, op.dilation))
    full = [n, co, oh, ow, kh, kw, c]  # the product; k = (kh, kw, c), channels innermost
    window = [n, 1, oh, ow, kh, kw, c]  # x's side, before it meets the output channels
    if kh == kw == 1 and ph == pw == 0:  # a 1×1 window inside the input: a strided view
        nhwc = add(prim.PermuteOp(x, [0, 2, 3, 1]))
        taken = add(prim.SliceOp(nhwc, [0, 0, 0, 0], [n, (oh - 1) * sh + 1, (ow - 1) * sw + 1, c], [1, sh, sw, 1]))
        read = add(prim.BroadcastInDimOp(taken, window, [0, 2, 3, 6]))
    else:
        read = _window(add, x, window, (oh, ow, kh, kw), (sh, sw, ph, pw, dh, dw))
    a32 = read if x.type.dtype == "f32" else add(prim.ConvertElementTypeOp(read, "f32"))
    wk = add(prim.PermuteOp(w, [0, 2, 3, 1]))  # [co, kh, kw, c]
    b32 = wk if w.type.dtype == "f32" else add(prim.ConvertElementTypeOp(wk, "f32"))
    wide_a = add(prim.BroadcastInDimOp(a32, full, list(range(7))))
    wide_b = add(prim.BroadcastInDimOp(b32, full, [1, 4, 5, 6]))
    total_op = prim.REDUCTION_OPS["sum"](add(EW["mul"](wide_a, wide_b)), [4, 5, 6])
    total_op.attributes[DOT_ATTR] = StringAttr(precision(x.type.dtype))
    total_op.attributes[CONVOLUTION_ATTR] = convolution_attr(op)
    result = add(total_op)
    marked: list[Operation] = [total_op]
    if op.bias is not None:  # added in f32, before the one rounding, as eager's kernels do
        bias = op.bias if op.bias.type.dtype == "f32" else add(prim.ConvertElementTypeOp(op.bias, "f32"))
        result = add(EW["add"](result, add(prim.BroadcastInDimOp(bias, [n, co, oh, ow], [1]))))
        marked.append(result.owner)
    if x.type.dtype != "f32":
        result = add(prim.ConvertElementTypeOp(result, x.type.dtype))
        marked.append(result.owner)
    if not epilogue_fusion:
        for m in marked:
            m.attributes[NO_EPILOGUE_ATTR] = UnitAttr()
    rewriter.replace(op, [], [result])


def _window(add, x: SSAValue, window: list[int], sizes, steps) -> SSAValue:
    """x [n, c, h, w] read at each output position's window, [n, 1, oh, ow, kh, kw, c]:
    a gather of x viewed as [n, h·w, c] at positions computed from iotas, zero where
    the window leaves the input."""
    n, c, h, wd = (int(sym(d)) for d in x.type.dims)
    oh, ow, kh, kw = sizes
    sh, sw, ph, pw, dh, dw = steps

    def along(dim: int, size: int, scale: int) -> SSAValue:
        """i64 of `window`'s shape: scale × the coordinate along dim."""
        iota = add(prim.IotaOp(size, 0, scale, "i64"))
        return add(prim.BroadcastInDimOp(iota, window, [dim]))

    made: dict[int, SSAValue] = {}

    def const(value: int) -> SSAValue:
        if value not in made:
            made[value] = add(prim.FullOp(window, value, "i64"))
        return made[value]

    def inside(v: SSAValue, size: int) -> SSAValue:
        return add(EW["logical_and"](add(EW["ge"](v, const(0))), add(EW["lt"](v, const(size)))))

    row = add(EW["add"](along(2, oh, sh), along(4, kh, dh)))
    if ph:
        row = add(EW["sub"](row, const(ph)))
    col = add(EW["add"](along(3, ow, sw), along(5, kw, dw)))
    if pw:
        col = add(EW["sub"](col, const(pw)))
    flat = add(EW["add"](add(EW["mul"](row, const(wd))), col)) if wd != 1 else add(EW["add"](row, col))
    nhwc = add(prim.ReshapeOp(add(prim.PermuteOp(x, [0, 2, 3, 1])), [n, h * wd, c]))
    spread = add(prim.BroadcastInDimOp(nhwc, [n, 1, h * wd, ow, kh, kw, c], [0, 2, 6]))
    read = add(GatherOp(spread, flat, 2))
    if not (ph or pw):
        return read
    valid = add(EW["logical_and"](inside(row, h), inside(col, wd)))
    return add(prim.WhereOp(valid, read, add(prim.FullOp(window, 0, x.type.dtype))))


def convolution_operands(total: Operation) -> list[SSAValue]:
    """x and w of the convolution a marked sum computes: the operands of the first
    permute to [n, h, w, c] (and [c_out, kh, kw, c]) below each side of its product;
    none where another pass has rewritten what this one wrote."""
    product = total.operands[0].owner if total.operands else None

    def below(v: SSAValue) -> SSAValue | None:
        while not (isinstance(v.owner, prim.PermuteOp) and tuple(prim.ints_of(v.owner.dims)) == (0, 2, 3, 1)):
            op = v.owner
            if not isinstance(op, Operation) or not op.operands:
                return None
            v = op.operands[1] if isinstance(op, prim.WhereOp) else op.operands[0]
        return v.owner.x

    if not isinstance(product, prim.ElementwiseOp) or product.name != "prim.mul":
        return []
    return [x for x in map(below, product.operands) if x is not None]
