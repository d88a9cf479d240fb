"""The xDSL context with every dialect strata's IR may contain."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects import arith, builtin, func


def strata_dialect(name: str):
    """One of strata's dialects by name, importing only its module."""
    if name == "aten":
        return _aten()
    if name == "kernel":
        from strata.dialects.kernel import Kernel

        return Kernel
    if name == "prim":
        from strata.dialects.prim import Prim

        return Prim
    if name == "strata":
        from strata.dialects.types import Strata

        return Strata
    raise KeyError(f"strata has no dialect {name!r}")


def strata_dialects():
    from strata.dialects.aten import Aten
    from strata.dialects.kernel import Kernel
    from strata.dialects.prim import Prim
    from strata.dialects.types import Strata

    return [Strata, Aten, Prim, Kernel]


def _aten():
    from strata.dialects.aten import Aten

    return Aten


def strata_context() -> Context:
    """builtin, func, arith and strata's dialects; aten loads at its first op (its op
    classes are made from torch's schemas, which needs torch: a prim or kernel program
    parses without it, dialects/lazy_torch.py)."""
    from strata.dialects.kernel import Kernel
    from strata.dialects.prim import Prim
    from strata.dialects.types import Strata

    ctx = Context(allow_unregistered=False)
    for d in (builtin.Builtin, func.Func, arith.Arith, Strata, Prim, Kernel):
        ctx.load_dialect(d)
    ctx.register_dialect("aten", _aten)
    return ctx


def parse_module(text: str) -> builtin.ModuleOp:
    from xdsl.parser import Parser

    return Parser(strata_context(), text).parse_module()
