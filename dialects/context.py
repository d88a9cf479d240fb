"""The xDSL context with every dialect strata's IR may contain."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func


def strata_dialects():
    from strata.dialects.aten import Aten
    from strata.dialects.kernel import Kernel
    from strata.dialects.prim import Prim
    from strata.dialects.types import Strata

    return [Strata, Aten, Prim, Kernel]


def strata_context() -> Context:
    ctx = Context(allow_unregistered=False)
    for d in (builtin.Builtin, func.Func, arith.Arith, *strata_dialects()):
        ctx.load_dialect(d)
    return ctx


def parse_module(text: str) -> builtin.ModuleOp:
    from xdsl.parser import Parser

    return Parser(strata_context(), text).parse_module()
