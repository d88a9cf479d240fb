"""Importing the FX nodes of data-dependent values (Dynamo's
`capture_scalar_outputs` / `capture_dynamic_output_shape_ops`).

- `_local_scalar_dense` (Tensor.item()) gives a SymInt or SymFloat, an unbacked symbol
  (`u0`, `zuf0`) that later nodes name: it becomes `aten._local_scalar_dense` with an
  `index` or `f64` result and the symbol as `strata.symbol`, which its decomposition
  binds at run time (passes/decompositions/data_dependent.py).
- `_assert_scalar` (torch's checks on unbacked values, `u0 <= 20`) keeps its condition
  as `strata.condition`, over symbols of no assumed sign: the check itself is what
  gives a value from item() its range, so it must not be assumed while checking.
- `sym_constrain_range_for_size` (torch._check_is_size) is the same check, `0 <= u0`.
"""

from __future__ import annotations

from typing import Any

import sympy
import torch
import torch.fx
from xdsl.builder import Builder
from xdsl.dialects.builtin import StringAttr

from strata.dialects import aten
from strata.dialects.prim_data_dependent import item_type, relation
from strata.dialects.types import dtype_name, from_torch_sympy
from strata.passes.decompositions.data_dependent import CONDITION, ITEM_SYMBOL

TARGETS = (
    torch.ops.aten._local_scalar_dense.default,
    torch.ops.aten._assert_scalar.default,
    torch.ops.aten.sym_constrain_range_for_size.default,
)


class UnsupportedValue(Exception):
    """A data-dependent value strata cannot hold; the importer runs the graph eagerly."""


def import_data_dependent(builder: Builder, env: dict, n: torch.fx.Node, source: str) -> None:
    if n.target is torch.ops.aten._local_scalar_dense.default:
        op = _item(env, n)
    else:
        op = _check(n)
    op.attributes["strata.source"] = StringAttr(source)
    builder.insert(op)
    env[n] = op.outs[0] if op.outs else None


def _item(env: dict, n: torch.fx.Node) -> aten.AtenOp:
    x = n.args[0]
    val, tensor = n.meta.get("val"), x.meta.get("val") if isinstance(x, torch.fx.Node) else None
    if not isinstance(tensor, torch.Tensor) or x not in env:
        raise UnsupportedValue(f"item() of {x}, which is not a tensor of the graph")
    if not isinstance(val, torch.SymInt | torch.SymFloat | torch.SymBool):
        raise UnsupportedValue(f"item() whose value torch fixed at {val}")
    expr = val.node.expr
    if isinstance(expr, sympy.Eq) and expr.rhs == 1 and isinstance(expr.lhs, sympy.Symbol):
        expr = expr.lhs  # a bool: torch's symbol is the 0 or 1 it reads as
    expr = from_torch_sympy(expr)
    if not isinstance(expr, sympy.Symbol):
        raise UnsupportedValue(f"item() whose value torch expresses as {expr}")
    try:
        dtype = dtype_name(tensor.dtype)
    except ValueError as e:
        raise UnsupportedValue(str(e)) from None
    op = aten.build("aten::_local_scalar_dense", {"self": env[x]}, [item_type(dtype)])
    op.attributes[ITEM_SYMBOL] = StringAttr(expr.name)
    return op


def _check(n: torch.fx.Node) -> aten.AtenOp:
    if n.target is torch.ops.aten._assert_scalar.default:
        condition = _condition(_value(n.args[0]))
        message = n.args[1] if len(n.args) > 1 else n.kwargs.get("assert_msg", "")
    else:  # sym_constrain_range_for_size(size, min=None, max=None)
        size = _value(n.args[0])
        low, high = n.kwargs.get("min"), n.kwargs.get("max")
        condition = _condition(size >= (0 if low is None else max(low, 0)))
        if high is not None:
            upper = _condition(size <= high)
            condition = condition if upper == "True" else upper if condition == "True" else f"({condition}) & ({upper})"
        message = f"Runtime assertion failed: {size} is not a size in range"
    named = set() if condition == "True" else {s.name for s in relation(condition).free_symbols}
    unbound = sorted(named - _bound_symbols(n.graph))
    if unbound:
        raise UnsupportedValue(f"an assertion on {', '.join(unbound)}, a value no op of the graph gives "
                               f"(a storage offset or stride of a result)")
    op = aten.build("aten::_assert_scalar", {"self": True, "assert_msg": str(message)}, [])
    op.attributes[CONDITION] = StringAttr(condition)
    return op


def _bound_symbols(graph: torch.fx.Graph) -> set[str]:
    """The names of the symbols a compiled graph has values for when it runs: sizes of
    its inputs and of the tensors it makes, its int inputs, item()'s."""
    exprs: list[sympy.Expr] = []
    for node in graph.nodes:
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor):
            exprs += [d.node.expr for d in val.shape if isinstance(d, torch.SymInt)]
            if node.op == "placeholder":
                exprs += [d.node.expr for d in (*val.stride(), val.storage_offset()) if isinstance(d, torch.SymInt)]
        elif isinstance(val, torch.SymInt | torch.SymFloat | torch.SymBool) and (
            node.op == "placeholder" or node.target is torch.ops.aten._local_scalar_dense.default
        ):
            exprs.append(val.node.expr)
    return {from_torch_sympy(s).name for e in exprs for s in e.free_symbols}


def _value(a: Any) -> Any:
    if isinstance(a, torch.fx.Node):
        a = a.meta.get("val")
    if isinstance(a, torch.SymInt | torch.SymFloat | torch.SymBool):
        return a.node.expr
    return sympy.sympify(a)


def _condition(expr: Any) -> str:
    """torch's relation as text over plain integer symbols (no sign assumed), named as
    strata names them elsewhere (`nu0` for a value of either sign)."""
    expr = sympy.sympify(expr)
    if expr is sympy.true:
        return "True"
    if expr is sympy.false:
        raise UnsupportedValue("an assertion torch knows to fail")
    expr = expr.xreplace({s: sympy.Symbol(from_torch_sympy(s).name, integer=True) for s in expr.free_symbols})
    return sympy.sstr(expr)
