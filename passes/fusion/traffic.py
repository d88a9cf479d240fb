"""Estimated memory traffic: the bytes a program reads and writes, by a simple model.

Each op that runs as a kernel of its own reads each tensor operand once and writes each
result once; a view (reshape, permute, broadcast, slice, and aten's view overloads)
moves nothing. A fused kernel reads each input buffer once and writes each stored
value once. So `graph_bytes` of the prim level is the unfused program (one kernel per
prim op), of the aten level what eager PyTorch moves, and `program_bytes` of the
kernel.program what strata's kernels move. Sizes are sympy expressions over the shape
symbols; `concrete_bytes` evaluates one under bindings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import sympy
from xdsl.dialects import func
from xdsl.ir import Attribute, Operation, SSAValue

from strata.dialects import kernel as kd
from strata.dialects import prim
from strata.dialects.types import TensorType, itemsize, sym

STRUCTURAL = ("func.return", "kernel.return")


def tensor_bytes(t: Attribute) -> sympy.Expr:
    if not isinstance(t, TensorType):
        return sympy.Integer(0)
    n = sympy.Integer(itemsize(t.dtype))
    for d in t.dims:
        n = n * sym(d)
    return n


def values_bytes(values: Iterable[SSAValue]) -> sympy.Expr:
    return sympy.Add(*[tensor_bytes(v.type) for v in values])


def is_view(op: Operation) -> bool:
    if isinstance(op, prim.VIEW_OPS):
        return True
    from strata.dialects.aten import AtenOp, torch_overload

    if isinstance(op, AtenOp):
        try:
            return bool(torch_overload(op.overload_name).is_view)
        except (AttributeError, RuntimeError):
            return False
    return False


def op_bytes(op: Operation) -> sympy.Expr:
    """What `op` moves when it runs by itself."""
    if op.name in STRUCTURAL or is_view(op):
        return sympy.Integer(0)
    return values_bytes(op.operands) + values_bytes(op.results)


def graph_bytes(fn: func.FuncOp) -> sympy.Expr:
    """A func.func at the aten or prim level, one kernel per op."""
    return sympy.Add(*[op_bytes(op) for op in fn.body.block.ops])


def program_bytes(program: kd.ProgramOp) -> sympy.Expr:
    """A kernel.program: launches move their inputs and outputs; library calls and
    eager fallbacks move theirs; views nothing."""
    return sympy.Add(*[op_bytes(op) for op in program.block.ops])


def concrete_bytes(n: sympy.Expr, bindings: Mapping[str, int] | None = None) -> int | sympy.Expr:
    """An int where the size is known (under `bindings`), else the expression."""
    n = sym(n)
    if bindings and n.free_symbols:
        n = n.subs({s: bindings[s.name] for s in n.free_symbols if s.name in bindings})
    return int(n) if n.is_Integer else n


def human_bytes(n: object) -> str:
    """1536 -> "1.5 KiB"; a symbolic size (a sympy expression) as "<expr> B"."""
    try:
        value = int(n)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return f"{n} B"
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(value) >= size:
            return f"{value / size:.1f} {unit}"
    return f"{value} B"
