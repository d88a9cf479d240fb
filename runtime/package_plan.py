"""A kernel.program as data: the steps an ahead-of-time package runs.

runtime/compiled_graph.py turns a kernel.program into closures over xDSL ops; a package
must run where xDSL is not even imported, so its program is written out as JSON
(program.json), which runtime/package_runner.py reads. Each decision the JIT runtime
makes from the IR (which layout a result keeps, which operands an eager kernel gets
contiguous, which results eager lays out otherwise) is made here by the same functions
(compiled_graph's), and written down as its outcome.

Shape arithmetic (a result's sizes, a reshape's shape) is written as Python integer
expressions over `env`, the symbol bindings, with the floor division and remainder the
index evaluator uses (runtime/index_values.py): the loader evaluates them with no sympy.

What a package cannot hold yet raises PackagingError naming the op and its source line:
random ops (their seeds), data-dependent ops (nonzero, item: sizes known only at run
time), and prim ops whose only run-time form is their reference implementation.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import sympy
import torch
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import SSAValue

from strata.dialects import aten, prim
from strata.dialects import kernel as kd
from strata.dialects.prim_attention import ScaledDotProductAttentionOp
from strata.dialects.prim_data_dependent import DATA_DEPENDENT_OPS
from strata.dialects.prim_random import RandomSeedOp
from strata.dialects.types import DTYPES, TensorType, sym
from strata.runtime.compiled_graph import (
    _layout_free,
    _only_viewed_by_library_calls,
    eager_result_handling,
    relayout_results,
)
from strata.runtime.cpu_linear import onednn_product
from strata.runtime.data_dependent import unbound_result_dims
from strata.runtime.index_values import exact_fraction, sum_divides
from strata.runtime.layouts import launch_strides, result_format, sequence_major
from strata.runtime.package_format import PackagingError


def int_code(expr: Any) -> str:
    """A Python expression of `env` computing the integer `expr` exactly as
    runtime/index_values.evaluate does."""
    e = sym(expr) if not isinstance(expr, sympy.Basic) else expr
    if e.is_Integer:
        return str(int(e))
    if e.is_Symbol:
        return f"env[{e.name!r}]"
    if sum_divides(e):  # an exact division spread over a sum (x0*(s + 1)/2): one quotient
        return _floor_code(e)
    if isinstance(e, sympy.Add):
        return "(" + " + ".join(int_code(a) for a in e.args) + ")"
    if isinstance(e, sympy.Mul):
        if any((a.is_Rational and not a.is_Integer) or (isinstance(a, sympy.Pow) and a.exp.is_negative) for a in e.args):
            return _floor_code(e)
        return "(" + " * ".join(int_code(a) for a in e.args) + ")"
    if isinstance(e, sympy.Pow) and e.exp.is_Integer and e.exp > 0:
        return f"({int_code(e.base)} ** {int(e.exp)})"
    if isinstance(e, sympy.floor):
        return _floor_code(e.args[0])
    if isinstance(e, sympy.ceiling):
        return f"(-{_floor_code(-e.args[0])})"
    if isinstance(e, sympy.Mod):
        a, b = (int_code(x) for x in e.args)
        return f"_mod({a}, {b})"
    if isinstance(e, sympy.Abs):
        return f"abs({int_code(e.args[0])})"
    if isinstance(e, sympy.Max | sympy.Min):
        return ("max(" if isinstance(e, sympy.Max) else "min(") + ", ".join(int_code(a) for a in e.args) + ")"
    raise PackagingError(f"the size expression {e} has no packaged form")


def _floor_code(e: sympy.Expr) -> str:
    p, q = exact_fraction(e)
    return f"_floordiv({int_code(p)}, {int_code(q)})"


def dims_code(dims: Sequence[Any]) -> list[str]:
    return [int_code(d) for d in dims]


def dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


class ProgramPlan:
    """The JSON form of one kernel.program (`plan`), and the kernels its launches name."""

    def __init__(self, program: kd.ProgramOp, funcs: dict[str, Any], kernels: dict[str, Any], device: torch.device):
        self.program, self.device = program, device
        self._slots: dict[Any, int] = {}
        self.kernel_names: dict[int, str] = {}  # id(compiled) -> the name it is packaged as
        self.kernels: dict[str, tuple[Any, Any]] = {}  # packaged name -> (compiled, its kernel.func)
        args = list(program.block.args)
        symbols = program.symbol_names
        arguments = []
        for i, (a, t, strides) in enumerate(zip(args, [a.type for a in args], program.strides)):
            if isinstance(t, TensorType):
                arguments.append({
                    "slot": self._slot(a), "rank": t.rank, "dtype": dtype_name(DTYPES[t.dtype]),
                    "bind": [[k, d.name] for k, d in enumerate(t.dims) if isinstance(d, sympy.Symbol)],
                    "sizes": dims_code(t.dims), "strides": dims_code(strides),
                })
            else:
                arguments.append({"slot": self._slot(a), "symbol": symbols[i] if i < len(symbols) else None})
        steps, step_ops = [], []
        for op in program.block.ops:
            if isinstance(op, kd.ReturnOp):
                results = list(op.values)
                continue
            if isinstance(op, RandomSeedOp):
                raise PackagingError(f"{_where(op)}: random ops are not packaged yet (their seeds are drawn per call)")
            if isinstance(op, DATA_DEPENDENT_OPS):
                raise PackagingError(f"{_where(op)}: {op.name} makes sizes known only at run time; "
                                     "a package needs every size to follow from its inputs'")
            if isinstance(op, kd.LaunchOp):
                name = op.callee.string_value()
                steps.append(self._launch(op, funcs[name], kernels[name]))
            elif isinstance(op, aten.AtenOp):
                steps.append(self._eager(op))
            elif isinstance(op, prim.PrimOp):
                steps.append(self._library(op))
            else:
                raise PackagingError(f"{_where(op)}: {op.name} has no packaged form")
            step_ops.append(op)
        for step, dead in zip(steps, _frees(step_ops, self._slot, results, args)):
            step["free"] = dead
        self.plan = {
            "registers": None,  # set below, once every slot is numbered
            "arguments": arguments,
            "steps": steps,
            "results": [self._slot(v) for v in results],
            "relayouts": [{"slot": self._slot(v), "sizes": dims_code(v.type.dims), "strides": dims_code(strides)}
                          for v, strides in relayout_results(program, results)],
        }
        self.plan["registers"] = len(self._slots)

    def _slot(self, v: Any) -> int:
        return self._slots.setdefault(v, len(self._slots))

    def _kernel_input_slot(self, v: SSAValue) -> int:
        copy = self._slots.get(("contiguous", v))
        return self._slot(v) if copy is None else copy

    def _launch(self, op: kd.LaunchOp, func: Any, compiled: Any) -> dict:
        name = self.kernel_names.setdefault(id(compiled), op.callee.string_value())
        self.kernels.setdefault(name, (compiled, func))
        outs = [{"slot": self._slot(v), "sizes": dims_code(v.type.dims),
                 "strides": None if st is None else dims_code(st), "dtype": dtype_name(DTYPES[v.type.dtype])}
                for v, st in zip(op.outs, launch_strides(op))]
        for out, j in zip(outs, op.updates or ()):
            out["updates"] = j  # starts as operand j's elements (UPDATES_ATTR), -1: fresh
        return {"op": "launch", "kernel": name, "ins": [self._kernel_input_slot(v) for v in op.args], "outs": outs,
                "symbols": list(func.symbol_names), "source": op.callee.string_value()}

    def _eager(self, op: aten.AtenOp) -> dict:
        given = {s.name for a in self.program.block.args if isinstance(a.type, TensorType)
                 for d in a.type.dims if isinstance(d, sympy.Expr) for s in d.free_symbols}
        if unbound_result_dims(op, given | set(filter(None, self.program.symbol_names))):
            raise PackagingError(f"{_where(op)}: {op.overload_name} makes a result whose size is known only at run time")
        layout_free, as_made, wants_copy = eager_result_handling(op)
        operands = list(op.args)
        bound = op.bind()
        args, kwargs = [], {}
        for a in op.signature.args:
            value = bound[a.name]
            if a.is_tensor:
                if isinstance(value, list):
                    enc = {"tensors": [None if v is None else operands.index(v) for v in value]}
                else:
                    enc = None if value is None else {"tensor": operands.index(value)}
            else:
                enc = encode_value(a.default) if value is None else _encode_attr(value, a.kind, op)
            (kwargs.__setitem__(a.name, enc) if a.kwarg_only else args.append(enc))
        results = []
        for v, keep, copy in zip(op.results, as_made, wants_copy):
            results.append({"slot": self._slot(v), "keep": keep,
                            "copy": self._slots.setdefault(("contiguous", v), len(self._slots)) if copy else None})
        return {"op": "eager", "overload": op.overload_name, "ins": [self._slot(v) for v in operands],
                "args": args, "kwargs": kwargs, "contiguous_operands": layout_free, "results": results}

    def _library(self, op: prim.PrimOp) -> dict:
        ins = [self._slot(v) for v in op.operands]
        if len(op.results) != 1:
            raise PackagingError(f"{_where(op)}: {op.name} has no packaged form yet")
        step = {"op": "library", "ins": ins, "out": self._slot(op.results[0])}
        made = op.results[0]
        memory_format = result_format(op)
        then = "channels_last" if memory_format == torch.channels_last else "contiguous"
        if onednn_product(op, self.device) is not None:
            return {**step, "call": "onednn_" + ("addmm" if isinstance(op, prim.AddmmOp) else "mm")}
        if isinstance(op, prim.MmOp | prim.BmmOp | prim.AddmmOp):
            return {**step, "call": {prim.MmOp: "mm", prim.BmmOp: "bmm", prim.AddmmOp: "addmm"}[type(op)]}
        if isinstance(op, prim.ConvolutionOp):
            stride, padding, dilation, transposed, output_padding, groups = op.params()
            as_made = _only_viewed_by_library_calls(made) or _layout_free(made)
            return {**step, "call": "convolution", "channels_last": memory_format == torch.channels_last,
                    "params": [stride, padding, dilation, transposed, output_padding, groups],
                    "then": then if memory_format == torch.channels_last or not as_made else "keep"}
        if isinstance(op, ScaledDotProductAttentionOp):
            as_made = _only_viewed_by_library_calls(made)
            then = "sequence_major" if sequence_major(op) else "keep" if as_made else "contiguous"
            return {**step, "call": "sdpa", "scale": op.scale.value.data if op.scale is not None else None,
                    "causal": bool(op.is_causal.value.data), "then": then}
        if isinstance(op, prim.CatOp):
            return {**step, "call": "cat", "dim": op.dim.value.data, "then": then}
        if isinstance(op, prim.PermuteOp):
            return {**step, "call": "permute", "dims": list(prim.ints_of(op.dims))}
        if isinstance(op, prim.ReshapeOp):
            return {**step, "call": "reshape", "shape": dims_code(prim.dims_of(op.shape))}
        if isinstance(op, prim.SliceOp):
            return {**step, "call": "slice", "start": dims_code(prim.dims_of(op.start)),
                    "limit": dims_code(prim.dims_of(op.limit)), "step": list(prim.ints_of(op.step))}
        if isinstance(op, prim.BroadcastInDimOp):
            return {**step, "call": "broadcast_in_dim", "shape": dims_code(prim.dims_of(op.shape)),
                    "dims": list(prim.ints_of(op.broadcast_dimensions))}
        raise PackagingError(f"{_where(op)}: {op.name} runs as its reference implementation, which a package does not hold")


def _frees(step_ops: list, slot: Callable[[Any], int], results: list, args: list) -> list[list[int]]:
    """The registers each step is the last reader of (compiled_graph's _with_frees)."""
    last: dict[int, int] = {}
    for i, op in enumerate(step_ops):
        for v in op.operands:
            last[slot(v)] = i
        for v in op.results:
            last.setdefault(slot(v), i)
    keep = {slot(v) for v in results} | {slot(a) for a in args}
    frees: list[list[int]] = [[] for _ in step_ops]
    for s, i in last.items():
        if s not in keep:
            frees[i].append(s)
    return frees


def encode_value(value: Any) -> Any:
    """A non-tensor argument of an eager kernel as JSON (tagged where JSON has no type)."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"float": repr(value)}
    if isinstance(value, list | tuple):
        return {"list": [encode_value(v) for v in value]}
    if isinstance(value, torch.dtype):
        return {"dtype": dtype_name(value)}
    if isinstance(value, torch.device):
        return {"device": str(value)}
    if isinstance(value, torch.layout | torch.memory_format):
        return {"torch": str(value).removeprefix("torch.")}
    if isinstance(value, sympy.Basic):
        if value.free_symbols:
            raise PackagingError(f"the argument {value} has no packaged form")
        return int(value) if value.is_Integer else encode_value(float(value))
    raise PackagingError(f"an eager kernel's argument {value!r} has no packaged form")


def _encode_attr(attr: Any, kind: str, op: aten.AtenOp) -> Any:
    """An aten op's encoded argument (aten.decode's input) as JSON; a symbolic int as
    code over `env`."""
    base = kind.rstrip("?")
    if base.endswith("[]"):
        return {"list": [_encode_attr(a, base[:-2], op) for a in attr.data]}
    if isinstance(attr, StringAttr) and base not in ("ScalarType", "Layout", "MemoryFormat", "Device", "str"):
        e = sym(attr.data)
        if e.free_symbols:
            if any(s.name.startswith("z") for s in e.free_symbols) or base in ("Scalar", "float") and not e.is_integer:
                raise PackagingError(f"{_where(op)}: a float computed at run time ({e}) has no packaged form")
            return {"int": int_code(e)}
    return encode_value(aten.decode(attr, kind, {}))


def _where(op: Any) -> str:
    source = op.attributes.get("strata.source")
    return f"{op.name} ({source.data})" if isinstance(source, StringAttr) else op.name
