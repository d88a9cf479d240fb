"""The non-functional batch norms, `_native_batch_norm_legit` and its `.no_stats`
overload, through batch_norm.py's rule for the functional one.

Functionalization turns a training-mode `_native_batch_norm_legit` (which updates the
running statistics in place) into `_native_batch_norm_legit_functional`; what is left
here is what writes nothing: eval mode (it reads the running statistics) and
`.no_stats` (instance norm, or F.batch_norm without running statistics: there are none
to update). A training-mode op that would write into its running statistics has no
value-semantic form, so it stays aten (its eager kernel does the write).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from xdsl.ir import SSAValue

from strata.dialects.aten import AtenOp
from strata.passes.decompositions.batch_norm import _batch_norm
from strata.passes.decompositions.builder import Decline, PrimBuilder, tensor_of
from strata.passes.decompositions.rules import decomposes


@decomposes("aten::_native_batch_norm_legit")
def batch_norm_legit(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    if b.arg("training"):
        raise Decline("a training-mode batch norm that updates its running statistics in place")
    # running=(1, 2): the rule's new running statistics equal the old ones in eval
    # mode; they are typed like the saved ones and left unused.
    return _batch_norm(b, False, running=(1, 2))[:3]


@decomposes("aten::_native_batch_norm_legit.no_stats")
def batch_norm_no_stats(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    if not b.arg("training"):
        raise Decline("an eval-mode batch norm without running statistics")
    return _batch_norm(_WithoutRunningStats(b), True, running=(1, 2))[:3]


class _WithoutRunningStats(PrimBuilder):
    """b, whose running statistics are stand-ins (zeros and ones of the input's dtype,
    so that they change no dtype decision): the functional rule blends them into new
    running statistics, which nothing reads and simplify removes. Ops are collected
    into b's own list."""

    def __init__(self, b: PrimBuilder):
        self.__dict__.update(b.__dict__)
        t = tensor_of(b.arg("input"))
        if t.rank < 2:
            raise Decline("batch norm of [n, c, …]")
        self._stats = {
            "running_mean": b.full([t.dims[1]], 0.0, t.dtype),
            "running_var": b.full([t.dims[1]], 1.0, t.dtype),
        }

    def arg(self, name: str) -> Any:
        if name in self._stats:
            return self._stats[name]
        return super().arg(name)
