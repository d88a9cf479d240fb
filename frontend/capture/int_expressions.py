"""An int the graph computes with Python's operators, as a sympy expression rebuilt from
its FX nodes.

torch records each such int with a ShapeEnv expression, simplified as it goes; one of
its rules folds a floor division of a floor division into one
(`FloorDiv(FloorDiv(x, 3), -3)` becomes `x // -9`), which is exact only for positive
divisors: for x = 10, (10 // 3) // -3 is -1 and 10 // -9 is -2. torch itself runs the
graph's operator nodes, so its results are right; strata, which evaluates the recorded
expression of a value item() read, returned -2 (found by the differential fuzzer).
Rebuilt from the nodes, each floor division and modulo is its own, with Python's
semantics for either sign.
"""

from __future__ import annotations

import operator
from typing import Any

import sympy
import torch

from strata.dialects.types import from_torch_sympy

_OPERATORS = {
    operator.add: lambda a, b: a + b,
    operator.sub: lambda a, b: a - b,
    operator.mul: lambda a, b: a * b,
    operator.floordiv: lambda a, b: sympy.floor(a / b),
    operator.mod: lambda a, b: a - b * sympy.floor(a / b),  # Python's: the sign of b
    operator.neg: lambda a: -a,
    operator.pos: lambda a: a,
    operator.abs: sympy.Abs,
    abs: sympy.Abs,
    torch.sym_max: sympy.Max,
    torch.sym_min: sympy.Min,
}


def int_expression(v: Any) -> sympy.Expr | None:
    """v's value (an FX node computing an int, or an int) as an expression over the
    symbols its leaves are (item()'s results, sizes); None where a node is not one of
    the operators above over such values."""
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return sympy.Integer(v)
    if not isinstance(v, torch.fx.Node):
        return None
    val = v.meta.get("val")
    if not isinstance(val, torch.SymInt | int):
        return None
    if v.op == "call_function" and v.target in _OPERATORS:
        args = [int_expression(a) for a in v.args]
        if v.kwargs or any(a is None for a in args):
            return None
        return _OPERATORS[v.target](*args)
    expr = from_torch_sympy(val.node.expr) if isinstance(val, torch.SymInt) else sympy.Integer(val)
    return expr if expr.is_Symbol or expr.is_Integer else None  # a leaf: a symbol, or a constant


def misrecorded(graph: torch.fx.Graph) -> str | None:
    """Why torch's recorded expressions of this graph may be wrong where strata reads
    them, or None. A floor division by a divisor not known to be positive, of a value
    torch recorded as a floor division, is folded wrongly (above), and so is every int
    computed from it. Such an int is exact where the graph only returns it and strata
    computes it from the graph's operators (IntComputation for sizes, int_expression for
    what item() read); anything else reading it (a tensor's size, an argument) would
    take torch's expression. Such a graph runs as torch runs it."""
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    suspect: set[torch.fx.Node] = set()
    for n in graph.nodes:
        if n.op != "call_function" or isinstance(n.meta.get("val"), torch.Tensor):
            continue
        if n.target is operator.floordiv and len(n.args) == 2 and _folded_wrongly(*n.args):
            suspect.add(n)
        elif any(a in suspect for a in n.all_input_nodes):
            suspect.add(n)  # int arithmetic on it: as exact as its input, no more
    for n in suspect:
        for user in n.users:
            if user in suspect:
                continue
            if user.op == "output" and (int_expression(n) is not None or not free_unbacked_symbols(n.meta.get("val"))):
                continue
            return (f"{user.format_node()} reads {n.name}, computed from a floor division of a floor division by a "
                    "divisor not known to be positive, which torch records wrongly (as one division)")
    return None


def _folded_wrongly(dividend: Any, divisor: Any) -> bool:
    val = dividend.meta.get("val") if isinstance(dividend, torch.fx.Node) else None
    if not isinstance(val, torch.SymInt):
        return False
    from torch.utils._sympy.functions import FloorDiv

    if not isinstance(val.node.expr, FloorDiv):
        return False
    if isinstance(divisor, int):
        return divisor < 0
    d = divisor.meta.get("val") if isinstance(divisor, torch.fx.Node) else None
    return not (isinstance(d, torch.SymInt) and d.node.expr.is_positive)  # a size is positive
