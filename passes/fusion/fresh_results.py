"""Graph results that must be tensors of their own.

Tensors have value semantics inside a program, so `x.clone()` is `x` there, and a
graph returning `x.clone()`, or `y` and `y.clone()`, would hand the caller its own
input, or one tensor twice: a write into the result would then change the input, or
the other result, where eager's results are separate tensors. Eager's aliases are
another matter: a result made by view ops from an input (`x.t()`) is one, and
AOTAutograd expects it to be.

The importer records which results the traced graph makes fresh (`FRESH_RESULTS`: not
a chain of view ops from a graph input, frontend/importer.py); here each such result
that is a view of a graph argument, or of a value an earlier result already returns,
gets a copy: an identity `prim.convert_element_type`, which fusion makes a kernel that
writes a new buffer (this runs after simplification, which would fold it).
"""

from __future__ import annotations

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, i64
from xdsl.ir import BlockArgument, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from strata.dialects import prim
from strata.dialects.types import TensorType
from strata.passes.fusion.plan import view_root

FRESH_RESULTS = "strata.fresh_results"


def fresh_results_attr(indices: list[int]) -> ArrayAttr:
    return ArrayAttr([IntegerAttr(i, i64) for i in indices])


def copy_fresh_results(fn: func.FuncOp) -> int:
    """Copies the results that would alias an input or an earlier result though the
    traced graph made them fresh; returns how many."""
    attr = fn.attributes.get(FRESH_RESULTS)
    ret = fn.body.block.last_op
    if not isinstance(attr, ArrayAttr) or not isinstance(ret, func.ReturnOp):
        return 0
    fresh = {a.value.data for a in attr.data}
    returned: set[SSAValue] = set()
    copies = 0
    operands = list(ret.operands)
    for i, v in enumerate(operands):
        root = view_root(v)
        if i in fresh and isinstance(v.type, TensorType) and (isinstance(root, BlockArgument) or root in returned):
            copy = prim.ConvertElementTypeOp(v, v.type.dtype)
            Rewriter.insert_op(copy, InsertPoint.before(ret))
            operands[i] = copy.results[0]
            copies += 1
            continue
        returned.add(root)
    if copies:
        ret.operands = operands
    return copies
