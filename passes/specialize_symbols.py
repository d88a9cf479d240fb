"""specialize-symbols: a kernel.program with given values for its shape symbols.

A graph compiled under dynamic shapes runs with symbolic sizes: each output's dims,
each view's shape, each launch's tile and grid are worked out from the symbols' values
at every call, and no memory plan can place a value whose size is unknown. Most such
graphs meet the same few bindings again and again (a training step's batch, a server's
usual prompt lengths), so the runtime compiles a program specialized to a binding it
has seen before (runtime/specialized_graphs.py): this pass writes the values into every
type and every dims property of the program's steps, and the steps of static size take
the static paths (precomputed sizes, the memory plan, launches with their grid bound).

The kernel.funcs are left as they are: they were compiled for any value and take the
symbols' values as arguments, which the program keeps (`strata.symbol_values`) for its
launches. A symbol without a value
here (one a data-dependent op binds, like nonzero's count) stays symbolic, and so does
an expression outside an array property (a scalar argument of an eager op): the
runtime evaluates what remains with the same binding, so the values stay consistent.

`strata-opt -p 'specialize-symbols{bindings="s0=4,s1=8"}'`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sympy
from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, FunctionType, IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import PassFailedException

from strata.dialects import kernel as kd
from strata.dialects.attributes import SYMBOL_VALUES_ATTR
from strata.dialects.types import TensorType, dim_attr, parse_dim, symbol


@dataclass(frozen=True)
class SpecializeSymbolsPass(ModulePass):
    """`bindings`: comma-separated `symbol=value` pairs."""

    name = "specialize-symbols"
    bindings: str = ""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        binding = parse_bindings(self.bindings)
        for program in [o for o in op.ops if isinstance(o, kd.ProgramOp)]:
            specialize_in_place(program, binding)


def parse_bindings(text: str) -> dict[str, int]:
    binding = {}
    for pair in filter(None, (p.strip() for p in text.split(","))):
        name, _, value = pair.partition("=")
        try:
            binding[name.strip()] = int(value)
        except ValueError:
            raise PassFailedException(f"specialize-symbols: '{pair}' is not symbol=integer") from None
    return binding


def specialized(program: kd.ProgramOp, binding: dict[str, int]) -> kd.ProgramOp:
    """A copy of `program` with the values of `binding` in place of its symbols."""
    copy = program.clone()
    specialize_in_place(copy, binding)
    return copy


def specialize_in_place(program: kd.ProgramOp, binding: dict[str, int]) -> None:
    if not binding:
        return
    dims = _Dims(binding)
    block = program.block
    for arg in list(block.args):
        new = dims.attribute(arg.type)
        if new is not arg.type:
            Rewriter.replace_value_with_new_type(arg, new)
    for op in block.walk():
        _specialize_op(op, dims)
    # The program's own dims (arg_strides, result strides); arg_symbols are names.
    _specialize_attributes(program, dims, keep={"arg_symbols", "function_type"})
    values = {**program.symbol_values, **binding}
    program.attributes[SYMBOL_VALUES_ATTR] = DictionaryAttr({n: IntegerAttr(v, i64) for n, v in sorted(values.items())})
    outputs = block.last_op.operand_types if isinstance(block.last_op, kd.ReturnOp) else program.function_type.outputs.data
    program.function_type = FunctionType.from_lists([a.type for a in block.args], list(outputs))


def _specialize_op(op: Operation, dims: _Dims) -> None:
    for result in list(op.results):
        new = dims.attribute(result.type)
        if new is not result.type:
            Rewriter.replace_value_with_new_type(result, new)
    _specialize_attributes(op, dims)
    for region in op.regions:
        for block in region.blocks:
            for arg in list(block.args):
                new = dims.attribute(arg.type)
                if new is not arg.type:
                    Rewriter.replace_value_with_new_type(arg, new)


def _specialize_attributes(op: Operation, dims: _Dims, keep: set[str] = frozenset()) -> None:
    for table in (op.properties, op.attributes):
        for name, value in list(table.items()):
            new = value if name in keep else dims.attribute(value)
            if new is not value:
                table[name] = new


class _Dims:
    """Substitutes a binding into attributes: tensor types, and the dims in array
    properties (a prim op's shape, a launch's strides). Returns the attribute itself
    where nothing changes, so that callers can tell by identity."""

    def __init__(self, binding: dict[str, int]):
        self.values = {symbol(n): sympy.Integer(v) for n, v in binding.items()}
        # Only a text naming a bound symbol is parsed (an array may hold other strings).
        self.names = re.compile(r"\b(" + "|".join(re.escape(n) for n in sorted(binding)) + r")\b")
        self.texts: dict[str, sympy.Expr | None] = {}

    def value(self, text: str) -> sympy.Expr | None:
        """The expression `text` with the binding substituted; None if it names no bound symbol."""
        if text not in self.texts:
            out = None
            if self.names.search(text):
                try:
                    d = parse_dim(text)
                except Exception:  # a string that is not a dim
                    d = None
                if isinstance(d, sympy.Expr):
                    out = d.xreplace(self.values)
            self.texts[text] = out
        return self.texts[text]

    def attribute(self, attr: Attribute) -> Attribute:
        if isinstance(attr, TensorType):
            changed = False
            new_dims = []
            for a, d in zip(attr.shape.data, attr.dims):
                v = self.value(a.data) if isinstance(a, StringAttr) else None
                changed |= v is not None
                new_dims.append(d if v is None else _dim(v))
            return TensorType(new_dims, attr.dtype) if changed else attr
        if isinstance(attr, ArrayAttr):
            items = [self._item(a) for a in attr.data]
            return attr if all(n is a for n, a in zip(items, attr.data)) else ArrayAttr(items)
        return attr

    def _item(self, attr: Attribute) -> Attribute:
        if isinstance(attr, StringAttr):
            v = self.value(attr.data)
            if v is None:
                return attr
            a = dim_attr(_dim(v))
            return IntegerAttr(a.data, i64) if not isinstance(a, StringAttr) else a  # as prim.dims_attr writes ints
        return self.attribute(attr)


def _dim(e: sympy.Expr) -> int | sympy.Expr:
    return int(e) if e.is_Integer else e
