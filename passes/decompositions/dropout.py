"""Dropout where it draws no random numbers: in eval mode, or with p = 0, the output is
the input and the mask all true. Training-mode dropout stays aten (and runs eagerly)
until prim has a random-number op."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue

from strata.dialects.aten import AtenOp
from strata.passes.decompositions.builder import Decline, PrimBuilder
from strata.passes.decompositions.rules import decomposes


@decomposes("aten::native_dropout")
def native_dropout(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    if b.arg("train") is not False and b.arg("p") != 0:
        raise Decline("dropout in training mode draws random numbers")
    mask = b.out(1)
    return [b.arg("input"), b.full(mask.dims, True, mask.dtype)]
