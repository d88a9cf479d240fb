"""Which multiply-adds of a kernel body may become one fused multiply-add.

Eager rounds the result of every aten op to its dtype; what happens inside one op is
the op's own business, and ATen's vectorized CPU kernels use FMA there (its layer norm
computes `(x * rstd + shift) * gamma + beta` with fmadd). A kernel.func body keeps that
line: a float product and the add, subtract or sum that consumes it are marked
`strata.contract` when both were decomposed from the same aten op (the same
`strata.source`), so a code generator may fuse them (one rounding instead of two: never
less accurate); a product that is an aten op's result, read by another op, is never
fused. An add is marked only if every product it reads is of its own op, so no two
marked ops of different sources meet (the mark's meaning: dialects/kernel.py). The
LLVM generator turns the mark into LLVM's `contract` flag; the Triton generator has
its own rule (codegen/triton_scalar_ops.py).
"""

from __future__ import annotations

from xdsl.dialects.builtin import UnitAttr
from xdsl.ir import Operation, SSAValue

from strata.dialects.kernel import CONTRACT
from strata.dialects.types import is_float

_ADDS = ("prim.add", "prim.sub")


class Contractions:
    """Marks the kernel ops built for one kernel.func as they are made."""

    def __init__(self, enabled: bool = True):
        self.enabled = enabled
        self._products: dict[SSAValue, str] = {}  # a float product -> its aten source

    def built(self, source_op: Operation, result: SSAValue) -> None:
        """`result` was built in the kernel for the graph op `source_op`."""
        source = _source(source_op)
        if not self.enabled or source is None or not _is_float(result):
            return
        name = result.owner.name
        if name == "prim.mul":
            self._products[result] = source
        elif name in _ADDS:
            self._mark(result.owner, result.owner.operands, source)

    def reduced(self, source_op: Operation, row: SSAValue, reduce_op: Operation) -> None:
        """`reduce_op` sums `row` for the graph's reduction `source_op`."""
        source = _source(source_op)
        if self.enabled and source is not None and reduce_op.kind.data == "sum" and _is_float(row):
            self._mark(reduce_op, [row], source)

    def _mark(self, op: Operation, operands, source: str) -> None:
        products = [v for v in operands if v in self._products]
        if products and all(self._products[v] == source for v in products):
            op.attributes[CONTRACT] = UnitAttr()
            for v in products:
                v.owner.attributes[CONTRACT] = UnitAttr()


def _source(op: Operation) -> str | None:
    attr = op.attributes.get("strata.source")
    return getattr(attr, "data", None)


def _is_float(v: SSAValue) -> bool:
    return is_float(str(v.type))
