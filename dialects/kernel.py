"""The kernel dialect: the loop level that both code generators start from.

A `kernel.func` is one fused kernel. Its iteration domain is a list of pointwise dims
(loop variables x0, x1, …) and an optional list of reduction dims (r0, r1, …), each a
sympy expression over shape symbols. Its entry block takes buffers (`!kernel.buffer<T>`:
a pointer to elements of T); the first `num_inputs` are read, the rest written.

Semantics. For each point x of the pointwise domain (in any order, in parallel) the
body runs once, top to bottom, on scalars. A value that depends, through loads, on a
reduction variable is a *row*: it stands for one scalar per point r of the reduction
domain. `kernel.reduce` turns a row into one scalar; an op between a row and a scalar
broadcasts the scalar; a `kernel.store` whose index names r writes the whole row. So a
softmax is one kernel: amax(row) → exp(row - max) → sum → exp(row - max) / sum, stored
as a row. How a back end walks rows (one block, or loops with recomputation) is its
own business.

Indices are sympy expressions over loop variables and shape symbols, in elements,
relative to the buffer's first element: they carry the buffers' strides, so views and
transposes cost no copy.

Rounding. Every op of a body rounds its result, except where a float product
(`prim.mul`) and the `prim.add`, `prim.sub` or `kernel.reduce "sum"` that reads it both
carry the unit attribute `strata.contract`: a back end may compute that pair as one
fused multiply-add (fusion marks only pairs decomposed from one aten op).

A `kernel.program` is the compiled graph: kernel launches (tensor values in, freshly
allocated contiguous tensors out), library calls (prim.mm, …, views feeding them) and
eager fallbacks (aten ops no lowering covers), ending in `kernel.return`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import sympy
from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FunctionType,
    IntegerAttr,
    IntegerType,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    i64,
)
from xdsl.ir import Attribute, Block, Dialect, Operation, ParametrizedAttribute, Region, SSAValue, TypeAttribute
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.traits import IsTerminator, NoTerminator, Pure, SymbolOpInterface
from xdsl.utils.exceptions import VerifyException

from strata.dialects.attributes import SYMBOL_VALUES_ATTR, UPDATES_ATTR
from strata.dialects.prim import dims_attr, dims_of
from strata.dialects.kernel_random import PhiloxOp
from strata.dialects.types import Dim, TensorType, scalar_dtype, sym

REDUCE_KINDS = ("sum", "prod", "amax", "amin")
CONTRACT = "strata.contract"  # see "Rounding" above


def contracts(op: Operation) -> bool:
    """Whether a body op may be fused with the product it reads, or the add reading it."""
    return CONTRACT in op.attributes


@irdl_attr_definition
class BufferType(ParametrizedAttribute, TypeAttribute):
    """`!kernel.buffer<f32>`: the elements of one tensor, addressed by index expressions."""

    name = "kernel.buffer"
    element: Attribute

    def __init__(self, element: Attribute):
        super().__init__(element)


def loop_vars(kind: str, n: int) -> list[sympy.Symbol]:
    """The loop variables x0… (kind "x") or r0… (kind "r") as sympy symbols."""
    return [sym(f"{kind}{i}") for i in range(n)]


def parse_index(text: str) -> sympy.Expr:
    return sym(text)


@functools.lru_cache(maxsize=8192)
def stride_along(index: str, var: str) -> sympy.Expr | None:
    """How far `index` moves when loop variable `var` grows by one: 0 if it does not
    name var, an expression free of var if index is affine in it, else None. (Asked
    for every access and candidate variable of every kernel: with symbolic sizes the
    general difference below was most of the CPU back end's planning time.)"""
    expr = sym(index)
    v = sym(var)
    if v not in expr.free_symbols:
        return sympy.Integer(0)
    if any(v in f.free_symbols for f in expr.atoms(*_PIECEWISE)):
        return None  # v under a floor, Mod, …: the step changes with v
    step = _affine_coefficient(expr, v)
    if step is None:
        step = sympy.expand(expr.subs(v, v + 1) - expr)
    if v in step.free_symbols or step.atoms(*_PIECEWISE):
        return None
    return step


_PIECEWISE = (sympy.floor, sympy.ceiling, sympy.Mod, sympy.Max, sympy.Min)


def _affine_coefficient(expr: sympy.Expr, v: sympy.Symbol) -> sympy.Expr | None:
    """The c of `expr = c*v + rest` when every term naming v is a product of v and
    factors free of it (the common case, answered without expanding); else None."""
    step = sympy.Integer(0)
    for term in sympy.Add.make_args(expr):
        if v not in term.free_symbols:
            continue
        coefficient, rest = term.as_independent(v, as_Add=False)
        if rest != v:
            return None
        step += coefficient
    return step


class IndexedOp(IRDLOperation):
    """An op with a sympy `index` property."""

    index = prop_def(StringAttr)

    @property
    def index_expr(self) -> sympy.Expr:
        return parse_index(self.index.data)

    def verify_index(self) -> None:
        try:
            e = parse_index(self.index.data)
        except Exception as exc:  # sympy raises many types
            raise VerifyException(f"{self.name}: bad index '{self.index.data}': {exc}") from None
        if not isinstance(e, sympy.Expr):
            raise VerifyException(f"{self.name}: index '{self.index.data}' is not an expression")


@irdl_op_definition
class LoadOp(IndexedOp):
    """One element of a buffer (a row, if the index names a reduction variable or a
    value that is a row).

    A *data-dependent* load (a gather) also takes i64 scalar `values`: its index may
    name `v0`, `v1`, … for them (`kernel.load %b["4*x0 + v0"](%i : i64)`). Whoever
    builds one keeps those values within the buffer (fusion clamps gather indices,
    passes/fusion/gather.py): no back end checks them."""

    name = "kernel.load"
    buffer = operand_def(BufferType)
    values = var_operand_def()
    result = result_def()
    assembly_format = (
        "$buffer `[` $index `]` (`(` $values^ `:` type($values) `)`)? attr-dict `:` type($buffer) `->` type($result)"
    )

    def __init__(self, buffer: SSAValue, index: sympy.Expr, values: Sequence[SSAValue] = ()):
        super().__init__(
            operands=[buffer, list(values)],
            result_types=[buffer.type.element],
            properties={"index": StringAttr(sympy.sstr(index))},
        )

    @property
    def value_names(self) -> dict[str, SSAValue]:
        """`v0`, `v1`, … → the values a data-dependent index names."""
        return {f"v{i}": v for i, v in enumerate(self.values)}

    def verify_(self) -> None:
        self.verify_index()
        if self.result.type != self.buffer.type.element:
            raise VerifyException("kernel.load: result type must be the buffer's element type")
        for v in self.values:
            if v.type != i64:
                raise VerifyException(f"kernel.load: index values must be i64, got {v.type}")


@irdl_op_definition
class StoreOp(IndexedOp):
    """Writes a value (or a row) into a buffer.

    A *data-dependent* store (a scatter) also takes i64 scalar `values`, which its index
    names `v0`, `v1`, … (`kernel.store %x, %b["128*v0 + x0"](%i : i64)`), as a gather's
    load does. Whoever builds one keeps those values within the buffer (the indices a
    scatter stores at were checked before: passes/fusion/scatter_stores.py)."""

    name = "kernel.store"
    value = operand_def()
    buffer = operand_def(BufferType)
    values = var_operand_def()
    assembly_format = (
        "$value `,` $buffer `[` $index `]` (`(` $values^ `:` type($values) `)`)? attr-dict `:` type($value) `,` "
        "type($buffer)"
    )

    def __init__(self, value: SSAValue, buffer: SSAValue, index: sympy.Expr, values: Sequence[SSAValue] = ()):
        super().__init__(operands=[value, buffer, list(values)], properties={"index": StringAttr(sympy.sstr(index))})

    @property
    def value_names(self) -> dict[str, SSAValue]:
        """`v0`, `v1`, … → the values a data-dependent index names."""
        return {f"v{i}": v for i, v in enumerate(self.values)}

    def verify_(self) -> None:
        self.verify_index()
        if self.value.type != self.buffer.type.element:
            raise VerifyException(
                f"kernel.store: storing {self.value.type} into {self.buffer.type}"
            )
        for v in self.values:
            if v.type != i64:
                raise VerifyException(f"kernel.store: index values must be i64, got {v.type}")


@irdl_op_definition
class ReduceOp(IRDLOperation):
    """Reduces a row over the whole reduction domain to one value."""

    name = "kernel.reduce"
    value = operand_def()
    result = result_def()
    kind = prop_def(StringAttr)
    assembly_format = "$kind $value attr-dict `:` type($value) `->` type($result)"
    traits = traits_def(Pure())

    def __init__(self, value: SSAValue, kind: str):
        super().__init__(operands=[value], result_types=[value.type], properties={"kind": StringAttr(kind)})

    def verify_(self) -> None:
        if self.kind.data not in REDUCE_KINDS:
            raise VerifyException(f"kernel.reduce: unknown kind '{self.kind.data}' (one of {REDUCE_KINDS})")
        if self.result.type != self.value.type:
            raise VerifyException("kernel.reduce: result type must equal the operand type")


@irdl_op_definition
class IndexOp(IndexedOp):
    """The value of an index expression over loop variables and shape symbols."""

    name = "kernel.index"
    result = result_def()
    assembly_format = "$index attr-dict `:` type($result)"
    traits = traits_def(Pure())

    def __init__(self, index: sympy.Expr, result_type: Attribute = i64):
        super().__init__(result_types=[result_type], properties={"index": StringAttr(sympy.sstr(index))})

    def verify_(self) -> None:
        self.verify_index()
        if not isinstance(self.result.type, IntegerType):
            raise VerifyException("kernel.index: result must be an integer type")


@irdl_op_definition
class FuncOp(IRDLOperation):
    """One fused kernel: its iteration domain, buffers and scalar body."""

    name = "kernel.func"
    sym_name = prop_def(SymbolNameConstraint())
    pointwise = prop_def(ArrayAttr)
    reduction = prop_def(ArrayAttr)
    num_inputs = prop_def(IntegerAttr)
    symbols = prop_def(ArrayAttr)
    sources = prop_def(ArrayAttr)
    body = region_def("single_block")
    traits = traits_def(SymbolOpInterface(), NoTerminator())
    assembly_format = "$sym_name attr-dict-with-keyword $body"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(
        self,
        name: str,
        buffers: Sequence[Attribute],
        num_inputs: int,
        pointwise: Sequence[Dim],
        reduction: Sequence[Dim],
        symbols: Sequence[str],
        sources: Sequence[str],
    ):
        super().__init__(
            regions=[Region(Block(arg_types=buffers))],
            properties={
                "sym_name": StringAttr(name),
                "pointwise": dims_attr(pointwise),
                "reduction": dims_attr(reduction),
                "num_inputs": IntegerAttr(num_inputs, i64),
                "symbols": ArrayAttr([StringAttr(s) for s in symbols]),
                "sources": ArrayAttr([StringAttr(s) for s in sources]),
            },
        )

    @property
    def block(self) -> Block:
        return self.body.block

    @property
    def pointwise_dims(self) -> tuple[Dim, ...]:
        return dims_of(self.pointwise)

    @property
    def reduction_dims(self) -> tuple[Dim, ...]:
        return dims_of(self.reduction)

    @property
    def symbol_names(self) -> list[str]:
        return [s.data for s in self.symbols.data]

    @property
    def source_ops(self) -> list[str]:
        return [s.data for s in self.sources.data]

    @property
    def num_buffers(self) -> int:
        """Inputs and outputs: what a launch passes."""
        return len(self.block.args)

    @property
    def inputs(self) -> list[SSAValue]:
        return list(self.block.args[: self.num_inputs.value.data])

    @property
    def outputs(self) -> list[SSAValue]:
        return list(self.block.args[self.num_inputs.value.data :])

    def verify_(self) -> None:
        n = self.num_inputs.value.data
        if not 0 <= n <= len(self.block.args):
            raise VerifyException("kernel.func: num_inputs out of range")
        for a in self.block.args:
            if not isinstance(a.type, BufferType):
                raise VerifyException(f"kernel.func @{self.sym_name.data}: arguments must be buffers")
        allowed = {f"x{i}" for i in range(len(self.pointwise.data))}
        allowed |= {f"r{i}" for i in range(len(self.reduction.data))}
        for name in self.symbol_names:
            if name[:1] in ("x", "r", "v") and name[1:].isdigit():
                raise VerifyException(f"kernel.func @{self.sym_name.data}: shape symbol '{name}' looks like a loop variable")
        allowed |= set(self.symbol_names)
        for dim in (*self.pointwise_dims, *self.reduction_dims):
            _check_free(self, sym(dim), set(self.symbol_names), "domain")
        for op in self.block.ops:
            if isinstance(op, IndexedOp):
                named = set(op.value_names) if isinstance(op, LoadOp | StoreOp) else set()
                _check_free(self, op.index_expr, allowed | named, op.name)
            if isinstance(op, LoadOp) and op.buffer in self.outputs:
                raise VerifyException(f"kernel.func @{self.sym_name.data}: loads from an output buffer")
            if isinstance(op, StoreOp) and op.buffer in self.inputs:
                raise VerifyException(f"kernel.func @{self.sym_name.data}: stores into an input buffer")
            if isinstance(op, ReduceOp) and not self.reduction.data:
                raise VerifyException(f"kernel.func @{self.sym_name.data}: kernel.reduce without a reduction domain")


def _check_free(func: FuncOp, expr: sympy.Expr, allowed: set[str], where: str) -> None:
    unknown = {s.name for s in expr.free_symbols} - allowed
    if unknown:
        raise VerifyException(
            f"kernel.func @{func.sym_name.data}: {where} uses unknown symbols {sorted(unknown)}"
        )


@irdl_op_definition
class ProgramOp(IRDLOperation):
    """The compiled graph: tensor arguments in, launches and library calls, results out.

    `arg_symbols` names, for each argument of `index` type, the shape symbol it binds
    ("" for the others); `arg_strides` gives, for each tensor argument, the strides the
    kernels were compiled for (the runtime copies an input laid out otherwise)."""

    name = "kernel.program"
    sym_name = prop_def(SymbolNameConstraint())
    function_type = prop_def(FunctionType)
    arg_symbols = prop_def(ArrayAttr)
    arg_strides = prop_def(ArrayAttr)
    body = region_def("single_block")
    traits = traits_def(SymbolOpInterface())
    assembly_format = "$sym_name attr-dict-with-keyword $body"
    irdl_options = (ParsePropInAttrDict(),)

    def __init__(
        self,
        name: str,
        inputs: Sequence[Attribute],
        outputs: Sequence[Attribute],
        arg_symbols: Sequence[str],
        arg_strides: Sequence[Sequence[Dim]],
    ):
        super().__init__(
            regions=[Region(Block(arg_types=inputs))],
            properties={
                "sym_name": StringAttr(name),
                "function_type": FunctionType.from_lists(list(inputs), list(outputs)),
                "arg_symbols": ArrayAttr([StringAttr(s) for s in arg_symbols]),
                "arg_strides": ArrayAttr([dims_attr(s) for s in arg_strides]),
            },
        )

    @property
    def symbol_names(self) -> list[str]:
        return [s.data for s in self.arg_symbols.data]

    @property
    def strides(self) -> list[tuple[Dim, ...]]:
        return [dims_of(a) for a in self.arg_strides.data]

    @property
    def symbol_values(self) -> dict[str, int]:
        """The values of the shape symbols this program is specialized to, if any
        (passes/specialize_symbols.py): its launches pass them to their kernels."""
        attr = self.attributes.get(SYMBOL_VALUES_ATTR)
        return {k: v.value.data for k, v in attr.data.items()} if isinstance(attr, DictionaryAttr) else {}

    @property
    def block(self) -> Block:
        return self.body.block


@irdl_op_definition
class LaunchOp(IRDLOperation):
    """Runs a kernel.func on input tensors; returns its freshly allocated outputs.

    Under the attribute `strata.updates` (one operand index per output, -1 for a fresh
    one) an output starts as that operand's elements, and the kernel writes only some
    of them: a scatter stored by the kernel of its rows (passes/fusion/scatter_stores.py).
    The runtime writes it into the operand's memory where nothing else reads it and the
    caller writes the result back into it (runtime/in_place.py), into a copy otherwise."""

    name = "kernel.launch"
    callee = prop_def(SymbolRefAttr)
    args = var_operand_def()
    outs = var_result_def()
    assembly_format = "$callee `(` $args `)` attr-dict `:` functional-type($args, $outs)"

    def __init__(self, callee: str, args: Sequence[SSAValue], result_types: Sequence[Attribute]):
        super().__init__(
            operands=[list(args)],
            result_types=[list(result_types)],
            properties={"callee": SymbolRefAttr(callee)},
        )

    def verify_(self) -> None:
        for v in (*self.args, *self.outs):
            if not isinstance(v.type, TensorType):
                raise VerifyException("kernel.launch: operands and results are tensors")
        updates = self.updates
        if updates is None:
            return
        if len(updates) != len(self.outs):
            raise VerifyException(f"kernel.launch: {UPDATES_ATTR} names {len(updates)} outputs, the launch has {len(self.outs)}")
        for out, j in zip(self.outs, updates):
            if j != -1 and not (0 <= j < len(self.args) and self.args[j].type == out.type):
                raise VerifyException(f"kernel.launch: an output updates operand {j}, which is not one of its type")

    @property
    def updates(self) -> list[int] | None:
        """For each output, the operand it updates (-1: a fresh output), or None if
        every output is fresh (UPDATES_ATTR)."""
        attr = self.attributes.get(UPDATES_ATTR)
        if not isinstance(attr, ArrayAttr):
            return None
        return [a.value.data for a in attr.data]


@irdl_op_definition
class ReturnOp(IRDLOperation):
    """The results of a kernel.program."""

    name = "kernel.return"
    values = var_operand_def()
    assembly_format = "$values attr-dict `:` type($values)"
    traits = traits_def(IsTerminator())

    def __init__(self, values: Sequence[SSAValue]):
        super().__init__(operands=[list(values)])


def element_of(buffer: SSAValue) -> str:
    """The dtype name of a buffer's elements."""
    return scalar_dtype(buffer.type.element)


Kernel = Dialect(
    "kernel",
    [LoadOp, StoreOp, ReduceOp, IndexOp, FuncOp, ProgramOp, LaunchOp, ReturnOp, PhiloxOp],
    [BufferType],
)
