"""Graph results that must not share memory they do not share in eager.

Tensors have value semantics inside a program, so `x.clone()` is `x` there, and a
graph returning `x.clone()`, or `y` and `y.clone()`, would hand the caller its own
input, or one tensor twice: a write into one result would change the input or the
other result, where eager's are separate tensors. Eager's views are another matter:
`x.t()` is a view of the input, `(y, y.t())` two views of one tensor, and AOTAutograd
and the caller expect them to be.

So the importer records, for each result, what eager's result is a view of
(`RESULT_BASES`, frontend/capture/importer.py): [-1, _] for a graph input, else [number, is
the base itself], the number shared by the results with one base node of the trace.
Here a result whose base is not an input but whose memory, under its chain of prim
views, is a graph argument or the memory of a result with another base gets memory of
its own, through a copy (an identity `prim.convert_element_type`, which fusion makes a
kernel writing a new, contiguous buffer; this runs after simplification, which would
fold it): a result that is its base is copied itself (`x.t().contiguous()` is then
contiguous, as eager's); a view of a base is its chain of prim views made again on a
copy of the memory under it, one copy for the results of one base, which so stay views
of each other (`c = x.clone(); return c, c.t()`). A result that is its base and a view
of it both (`c = x.t().contiguous(); return c, c.t()`) get two copies: their values are
eager's, but they no longer share memory.
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, i64
from xdsl.ir import BlockArgument, Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from strata.dialects import prim
from strata.dialects.types import TensorType
from strata.passes.fusion.plan import VIEW_OPS, view_root

RESULT_BASES = "strata.result_bases"
INPUT = -1  # eager's result is a view of a graph input


def result_bases_attr(bases: list[tuple[int, bool]]) -> ArrayAttr:
    return ArrayAttr([ArrayAttr([IntegerAttr(b, i64), IntegerAttr(int(own), i64)]) for b, own in bases])


def copy_fresh_results(fn: func.FuncOp) -> int:
    """Gives results the memory eager gives them (module docstring); returns how many
    copies it made."""
    attr = fn.attributes.get(RESULT_BASES)
    ret = fn.body.block.last_op
    if not isinstance(attr, ArrayAttr) or not isinstance(ret, func.ReturnOp):
        return 0
    bases = [(pair.data[0].value.data, bool(pair.data[1].value.data)) for pair in attr.data]
    operands = list(ret.operands)
    if len(bases) != len(operands):
        return 0
    owner: dict[SSAValue, int] = {}  # memory → the base of the first result holding it
    copies: dict[tuple[int, SSAValue], SSAValue] = {}

    def copy_of(base: int, v: SSAValue) -> SSAValue:
        if (base, v) not in copies:
            copy = prim.ConvertElementTypeOp(v, v.type.dtype)
            Rewriter.insert_op(copy, InsertPoint.before(ret))
            copies[(base, v)] = copy.results[0]
        return copies[(base, v)]

    for i, (v, (base, is_base)) in enumerate(zip(operands, bases)):
        root = view_root(v)
        if base == INPUT or not isinstance(v.type, TensorType):
            owner.setdefault(root, INPUT)
        elif isinstance(root, BlockArgument) or owner.setdefault(root, base) != base:
            operands[i] = copy_of(base, v) if is_base and v is not root else _views_again(v, root, copy_of(base, root), ret)
    if copies:
        ret.operands = operands
    return len(copies)


def _views_again(v: SSAValue, root: SSAValue, copy: SSAValue, before: Operation) -> SSAValue:
    """v's chain of views from `root`, made again on `copy` (before `before`)."""
    chain: list[Operation] = []
    while v is not root:
        assert isinstance(v.owner, VIEW_OPS)
        chain.append(v.owner)
        v = v.owner.operands[0]
    value = copy
    for op in reversed(chain):
        again = op.clone(value_mapper={op.operands[0]: value})
        Rewriter.insert_op(again, InsertPoint.before(before))
        value = again.results[0]
    return value
