"""prim's data-dependent ops: results whose size or value only a run can tell.

With Dynamo's `capture_dynamic_output_shape_ops` and `capture_scalar_outputs`,
`torch.nonzero`, boolean-mask indexing and `Tensor.item()` stay in the graph, with
*unbacked* symbols (torch's `u0`, `zuf0`) for what they produce. Each op here runs
torch's kernel at run time (a library call) and binds its symbol, so that the kernels
after it, which take shape symbols as arguments, run with the right sizes:

- `prim.nonzero`: the i64 coordinates of x's nonzero elements, `[symbol, rank]`; it
  binds `symbol` to the count (torch.nonzero).
- `prim.item`: the value of a 0-d tensor (Tensor.item()), an `index` (integers and
  bools) or `f64` (floats) scalar; it binds `symbol` to the value. Decompositions read
  the value as the tensor itself where a fill value or an operand takes it
  (passes/decompositions/data_dependent.py), so a float never travels as a symbol.
- `prim.assert_scalar`: raises eager's "Runtime assertion failed" where a condition
  over symbols (torch's checks on unbacked sizes) is false.
- `prim.check_scalar_index`: an int index over unbacked symbols (a select at
  `x.sum().item()`), which torch leaves unchecked: raises eager's IndexError where it
  is out of range, and binds `symbol` to it wrapped into the dim, the start of the
  slice that the select reads.
- `prim.randperm`: torch.randperm, drawn from torch's default generator in program
  order, so that it follows `torch.manual_seed` as eager does.

None of them is Pure: a binding or a draw must neither be merged (cse) nor deleted
(dce) while something may read its symbol. Imported by dialects/prim.py, which
registers them in the prim dialect.
"""

from __future__ import annotations

import functools

import sympy
from strata.dialects.lazy_torch import torch
from xdsl.dialects.builtin import ArrayAttr, Float64Type, IndexType, IntegerAttr, NoneType, StringAttr, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def, traits_def
from xdsl.traits import MemoryWriteEffect
from xdsl.utils.exceptions import VerifyException

from strata.dialects.prim import CREATION_FORMAT, FORMAT, PrimOp, TensorOp, dims_attr, dims_of
from strata.dialects.prim_indexing import IndexOutOfBounds, out_of_bounds_message
from strata.dialects.types import _BINDINGS, DTYPES, Dim, TensorType, concrete, is_float, symbol, torch_symbol_name


def bind_symbol(name: str, value: int | float) -> None:
    """Binds an unbacked symbol in the bindings of the run in progress (those that
    `bound_symbols` set: the runtime's and the interpreters' own dict)."""
    env = _BINDINGS.get(None)
    if env is None:
        raise RuntimeError(f"prim: symbol {name} is bound outside a run (no bindings are set)")
    env[name] = value


def _check_symbol(op: PrimOp, name: str) -> None:
    if not name.isidentifier() or symbol(name).name != name:
        raise VerifyException(f"{op.name}: symbol {name!r} is not a shape symbol's name")


@irdl_op_definition
class NonzeroOp(TensorOp):
    """torch.nonzero(x): the i64 coordinates of x's nonzero elements in row-major order,
    one row each, `[symbol, rank of x]`; binds `symbol` to the number of rows."""

    name = "prim.nonzero"
    assembly_format = FORMAT
    x = operand_def()
    result = result_def()
    symbol = prop_def(StringAttr)
    traits = traits_def(MemoryWriteEffect())

    def __init__(self, x: SSAValue, name: str):
        super().__init__(
            operands=[x],
            result_types=[TensorType([symbol(name), x.type.rank], "i64")],
            properties={"symbol": StringAttr(name)},
        )

    def infer_type(self) -> Attribute:
        return TensorType([symbol(self.symbol.data), self.tensor(self.x).rank], "i64")

    def verify_(self) -> None:
        _check_symbol(self, self.symbol.data)
        super().verify_()

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.nonzero(x)
        bind_symbol(self.symbol.data, out.shape[0])
        return out


@irdl_op_definition
class ItemOp(PrimOp):
    """The value of a 0-d tensor (Tensor.item()): `index` for integer and bool tensors,
    `f64` for floating ones; binds `symbol` to it."""

    name = "prim.item"
    assembly_format = FORMAT
    x = operand_def()
    result = result_def()
    symbol = prop_def(StringAttr)
    traits = traits_def(MemoryWriteEffect())

    def __init__(self, x: SSAValue, name: str):
        super().__init__(operands=[x], result_types=[item_type(x.type.dtype)], properties={"symbol": StringAttr(name)})

    def infer_type(self) -> Attribute:
        t = self.x.type
        if not isinstance(t, TensorType) or t.rank != 0:
            raise VerifyException(f"prim.item: takes a 0-d tensor, got {t}")
        return item_type(t.dtype)

    def verify_(self) -> None:
        _check_symbol(self, self.symbol.data)
        super().verify_()

    def reference(self, x: torch.Tensor) -> int | float:
        value = x.item()
        value = int(value) if isinstance(value, bool) else value
        bind_symbol(self.symbol.data, value)
        return value


def item_type(dtype: str) -> Attribute:
    """The scalar type prim.item gives for a tensor of `dtype` (as torch's item()
    gives a Python float or int)."""
    return Float64Type() if is_float(dtype) else IndexType()


@irdl_op_definition
class AssertScalarOp(PrimOp):
    """Raises RuntimeError(`message`) where `condition`, a relation over shape symbols
    in sympy's syntax, is false under the run's bindings (torch's _assert_scalar)."""

    name = "prim.assert_scalar"
    assembly_format = "attr-dict"
    condition = prop_def(StringAttr)
    message = prop_def(StringAttr)
    traits = traits_def(MemoryWriteEffect())

    def __init__(self, condition: str, message: str):
        super().__init__(properties={"condition": StringAttr(condition), "message": StringAttr(message)})

    def infer_type(self) -> Attribute:
        return NoneType()  # no result: infer-shapes has nothing to reconcile

    def verify_(self) -> None:
        try:
            relation(self.condition.data)
        except (sympy.SympifyError, TypeError, ValueError) as e:
            raise VerifyException(f"prim.assert_scalar: cannot read condition {self.condition.data!r}: {e}") from None

    def reference(self) -> None:
        check_condition(self.condition.data, self.message.data, _BINDINGS.get(None) or {})


@functools.cache
def _functions() -> dict:
    """The names a condition may call: sympy's, and torch's ShapeEnv functions
    (FloorDiv, ModularIndexing, …), as torch prints them."""
    from torch.utils._sympy import functions as torch_sympy

    names = {"floor": sympy.floor, "ceiling": sympy.ceiling, "Mod": sympy.Mod, "Max": sympy.Max, "Min": sympy.Min}
    for name, value in vars(torch_sympy).items():
        if isinstance(value, type) and issubclass(value, sympy.Basic):
            names.setdefault(name, value)
    return names


@functools.lru_cache(maxsize=1024)
def relation(text: str) -> sympy.Basic:
    """The condition of prim.assert_scalar over plain integer symbols: no sign is
    assumed, since a symbol from item() may be negative."""
    expr = sympy.sympify(text, locals=_functions())
    return expr.xreplace({s: sympy.Symbol(s.name, integer=True) for s in expr.free_symbols})


def check_condition(text: str, message: str, env: dict) -> None:
    expr = relation(text)
    missing = sorted(s.name for s in expr.free_symbols if s.name not in env)
    if missing:
        raise RuntimeError(f"prim.assert_scalar: no value bound for {', '.join(missing)}")
    if not bool(expr.xreplace({s: sympy.sympify(env[s.name]) for s in expr.free_symbols})):
        raise RuntimeError(message)


@irdl_op_definition
class CheckScalarIndexOp(PrimOp):
    """`index`, an int over symbols bound before it, checked against `size` (of dim
    `dim` of the tensor that `indexing_op` indexes) as eager's select checks it: valid
    in [-size, size), a negative one counting from the end. Binds `symbol` (never
    negative) to it wrapped into [0, size); out of range it raises IndexOutOfBounds in
    eager's words, or with `clamps` (the option index_bounds_checks off) binds the
    nearest index in range. An empty dim has none: it raises either way."""

    name = "prim.check_scalar_index"
    assembly_format = "attr-dict"
    index = prop_def(Attribute)
    size = prop_def(Attribute)
    symbol = prop_def(StringAttr)
    dim = prop_def(IntegerAttr)
    clamps = prop_def(IntegerAttr)
    indexing_op = prop_def(StringAttr)
    traits = traits_def(MemoryWriteEffect())

    def __init__(self, index: Dim, size: Dim, name: str, dim: int, clamps: bool, indexing_op: str):
        index_attr, size_attr = dims_attr([index, size]).data
        super().__init__(properties={
            "index": index_attr, "size": size_attr, "symbol": StringAttr(name), "dim": IntegerAttr(dim, i64),
            "clamps": IntegerAttr(int(clamps), i64), "indexing_op": StringAttr(indexing_op),
        })

    @property
    def bounds(self) -> tuple[Dim, Dim]:
        """The index and the size it is checked against, as expressions."""
        index, size = dims_of(ArrayAttr([self.index, self.size]))
        return index, size

    def infer_type(self) -> Attribute:
        return NoneType()  # no result: what it gives is its symbol

    def verify_(self) -> None:
        _check_symbol(self, self.symbol.data)
        if symbol(self.symbol.data).is_nonnegative is not True:
            raise VerifyException(f"prim.check_scalar_index: symbol {self.symbol.data} must name a value never negative")

    def wrapped(self, index: int, size: int) -> int:
        """The index bound for `index` into a dim of `size`, or the error eager raises."""
        if -size <= index < size:
            return index + size if index < 0 else index
        if self.clamps.value.data and size > 0:
            return min(max(index + size if index < 0 else index, 0), size - 1)
        raise IndexOutOfBounds(out_of_bounds_message(index, self.dim.value.data, size, self.indexing_op.data))

    def reference(self) -> None:
        index, size = concrete(self.bounds, _BINDINGS.get(None) or {})
        bind_symbol(self.symbol.data, self.wrapped(index, size))


@irdl_op_definition
class RandpermOp(TensorOp):
    """torch.randperm(n) of `dtype`, drawn from torch's default generator for the
    graph's device each time the graph runs, in program order."""

    name = "prim.randperm"
    assembly_format = CREATION_FORMAT
    result = result_def()
    n = prop_def(Attribute)
    dtype = prop_def(StringAttr)
    traits = traits_def(MemoryWriteEffect())

    def __init__(self, n: Dim, dtype: str):
        super().__init__(
            result_types=[TensorType([n], dtype)],
            properties={"n": dims_attr([n]).data[0], "dtype": StringAttr(dtype)},
        )

    @property
    def length(self) -> Dim:
        return dims_of(ArrayAttr([self.n]))[0]

    def infer_type(self) -> Attribute:
        return TensorType([self.length], self.dtype.data)

    def verify_(self) -> None:
        if self.dtype.data not in DTYPES or self.dtype.data == "i1":
            raise VerifyException(f"prim.randperm: no permutation of dtype {self.dtype.data}")
        super().verify_()

    def reference(self, device: torch.device | None = None) -> torch.Tensor:
        (n,) = concrete([self.length])
        return torch.randperm(n, dtype=DTYPES[self.dtype.data], device=device)


DATA_DEPENDENT_OPS = (NonzeroOp, ItemOp, AssertScalarOp, CheckScalarIndexOp, RandpermOp)


def binds_symbols(op) -> bool:
    """Whether running `op` binds a symbol: prim.item, prim.check_scalar_index, or a
    result of a size torch named unbacked (`u0`: prim.nonzero, or such an op left to
    its eager kernel). No kernel scheduled before it may compute what comes after it
    (passes/fusion/plan.py): nor read at an index before it is checked."""
    if isinstance(op, ItemOp | CheckScalarIndexOp):
        return True
    return any(
        isinstance(d, sympy.Symbol) and torch_symbol_name(d.name).startswith("u")
        for r in op.results
        if isinstance(r.type, TensorType)
        for d in r.type.dims
    )
