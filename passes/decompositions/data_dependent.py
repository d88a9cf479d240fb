"""Data-dependent results → prim.nonzero / prim.item / prim.assert_scalar / prim.randperm
(dialects/prim_data_dependent.py).

- nonzero → prim.nonzero, whose count is the unbacked symbol of the result's first dim.
- masked_select(x, mask) → x and mask broadcast and flattened, a gather at
  nonzero(mask); x[mask] (index.Tensor with one bool index) → a gather at the
  coordinates nonzero(mask) gives (`mask_indexed`, called by indexing.py's rule).
- _local_scalar_dense (Tensor.item()) → prim.item, which binds the value's symbol.
  Where an op then takes that value as a scalar (a fill value, an operand), the
  builder reads the 0-d tensor itself (`item_source`): an f32 item as the fill of an
  f16 tensor rounds once, as eager's Python float does, and a float never becomes a
  shape symbol. Integer arithmetic on item() values (`n // 2 - 3`, `abs(n)`, `n % 3`,
  `max(n, 4)`) is exact in any order: it is computed on the host from the values the
  program's prim.item ops bind, as a shape expression is (the builder's
  `_symbolic_scalar`), with Python's own floor division and modulo. Float arithmetic on
  the value (`s * 2.0 + 1`) declines: sympy would reorder it, and eager rounds each step
  in double.
- _assert_scalar → prim.assert_scalar, checked at run time (or nothing, where the
  condition holds whatever the values).
- randperm → prim.randperm: torch's kernel on the default generator, in program order.
"""

from __future__ import annotations

import sympy
from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Operation, SSAValue

from strata.dialects import prim
from strata.dialects.aten import AtenOp
from strata.dialects.prim_indexing import NonzeroStaticOp
from strata.dialects.prim_data_dependent import AssertScalarOp, ItemOp, NonzeroOp, RandpermOp, item_type
from strata.dialects.types import Dim, numel, sym, torch_symbol_name
from strata.passes.decompositions.builder import Decline, PrimBuilder, broadcast_dims, tensor_of
from strata.passes.decompositions.rules import decomposes

# The attributes the importer (frontend/capture/data_dependent.py) puts on the aten ops: the
# symbol item() binds, and an assertion's condition over plain (signed) symbols.
ITEM_SYMBOL = "strata.symbol"
CONDITION = "strata.condition"


def unbacked_symbol(d: Dim) -> str:
    """The name of the symbol that a data-dependent size is."""
    if not isinstance(d, sympy.Symbol):
        raise Decline(f"a data-dependent size {d} that is not one symbol")
    return d.name


def is_float_symbolic(e: sympy.Expr) -> bool:
    """Whether a symbolic scalar is a float: torch names its float symbols zf…
    (inputs) and zuf… (unbacked, from item())."""
    return any(s.name.startswith(("zf", "zuf")) for s in e.free_symbols)


# ---------------------------------------------------------------- nonzero, masks
def _nonzero(b: PrimBuilder, x: SSAValue, count: Dim) -> SSAValue:
    """prim.nonzero binding `count`; where torch knew the count (an input of no
    elements), prim.nonzero_static of that many rows."""
    if isinstance(count, int):
        return b.add(NonzeroStaticOp(x, count, -1))
    return b.add(NonzeroOp(x, unbacked_symbol(count)))


def _nonzero_rows(b: PrimBuilder, mask: SSAValue, count: Dim, rank: int) -> list[SSAValue]:
    """The coordinates of mask's nonzero elements, one i64 [count] tensor per dim."""
    nz = _nonzero(b, mask, count)
    n = count
    cols = []
    for j in range(rank):
        col = b.add(prim.SliceOp(nz, [0, j], [n, j + 1], [1, 1]))
        cols.append(b.reshape(col, [n]))
    return cols


@decomposes("aten::nonzero")
def nonzero(op: AtenOp, b: PrimBuilder) -> SSAValue:
    return _nonzero(b, b.arg("self"), b.out().dims[0])


@decomposes("aten::masked_select")
def masked_select(op: AtenOp, b: PrimBuilder) -> SSAValue:
    from strata.passes.decompositions.indexing import take

    x, mask = b.arg("self"), b.arg("mask")
    if tensor_of(mask).dtype != "i1":
        raise Decline("masked_select by a mask that is not bool (an error in eager)")
    dims = broadcast_dims("masked_select", tensor_of(x).dims, tensor_of(mask).dims)
    total = numel(dims)
    if sym(total) == 0:
        raise Decline("masked_select of no elements")
    flat_x = b.reshape(b.broadcast(x, dims), [total])
    flat_mask = b.reshape(b.broadcast(mask, dims), [total])
    (rows,) = _nonzero_rows(b, flat_mask, b.out().dims[0], 1)
    return take(b, flat_x, 0, rows)


def mask_indexed(b: PrimBuilder) -> tuple[SSAValue, list[int], list[SSAValue], bool] | None:
    """For index.Tensor whose one index is a bool mask over dims p…p+k-1 of x (x[mask],
    x[:, mask]): x, those dims, the mask's coordinates (i64, one tensor per dim) and
    True (adjacent dims), as indexing.py's `_indexed` gives them; None without a mask."""
    given = list(b.arg("indices"))
    present = [(k, i) for k, i in enumerate(given) if i is not None]
    masks = [(k, i) for k, i in present if tensor_of(i).dtype in ("i1", "u8")]
    if not masks:
        return None
    if len(present) != 1 or tensor_of(masks[0][1]).dtype != "i1":
        raise Decline("a mask beside other indices, or a byte mask")
    p, mask = masks[0]
    x = b.arg("self")
    t, m = tensor_of(x), tensor_of(mask)
    if m.rank == 0 or p + m.rank > t.rank or any(sym(a) != sym(c) for a, c in zip(m.dims, t.dims[p : p + m.rank])):
        raise Decline(f"a mask of shape {list(m.dims)} over dims {p}… of {list(t.dims)}")
    coords = _nonzero_rows(b, mask, b.out().dims[p], m.rank)
    return x, list(range(p, p + m.rank)), coords, True


# ---------------------------------------------------------------- item()
@decomposes("aten::_local_scalar_dense")
def local_scalar_dense(op: AtenOp, b: PrimBuilder) -> SSAValue:
    name = op.attributes.get(ITEM_SYMBOL)
    if not isinstance(name, StringAttr):
        raise Decline("item() whose value has no symbol")
    x = b.arg("self")
    t = tensor_of(x)
    if t.rank != 0:
        if sym(numel(t.dims)) != 1:
            raise Decline("item() of a tensor that may not have one element")
        x = b.reshape(x, [])
    if op.results[0].type != item_type(t.dtype):
        raise Decline(f"item() of {t.dtype} declared as {op.results[0].type}")
    return b.add(ItemOp(x, name.data))


def item_source(op: Operation, expr: sympy.Expr) -> SSAValue | None:
    """The 0-d tensor whose item() `expr` is, when expr is an item() symbol; None when
    it names no such symbol (a shape symbol), or is integer arithmetic on such symbols
    (evaluated on the host once the program binds them). Float arithmetic declines."""
    if isinstance(expr, sympy.Eq) and expr.rhs == 1 and isinstance(expr.lhs, sympy.Symbol):
        expr = expr.lhs  # a bool item(): the 0 or 1 its symbol holds
    names = {s.name for s in expr.free_symbols}
    if not names or all(torch_symbol_name(n).startswith("s") for n in names):  # torch's backed symbols: s0, ns1, …
        return None
    items = _items_before(op)
    if not names & items.keys():
        if is_float_symbolic(expr):  # never a shape symbol (an integer, by its assumptions)
            raise Decline(f"a float value {expr} that no item() in the graph read")
        return None
    if not isinstance(expr, sympy.Symbol):
        if _host_integer(expr):
            return None  # exact in any order: a host expression, as shapes are
        raise Decline(f"arithmetic on a value item() read ({expr}) is not lowered")
    return items[expr.name].x


# What the runtime evaluates exactly for integers (runtime/index_values.py): no float
# symbol (zuf0) and no conversion (FloorToInt(zuf0) is an integer of a float).
HOST_INTEGER_HEADS = (sympy.Symbol, sympy.Integer, sympy.Rational, sympy.Add, sympy.Mul, sympy.Pow, sympy.Mod,
                      sympy.floor, sympy.ceiling, sympy.Abs, sympy.Max, sympy.Min)


def _host_integer(expr: sympy.Expr) -> bool:
    """Whether expr is integer arithmetic on integer symbols only."""
    return bool(expr.is_integer) and all(
        isinstance(e, HOST_INTEGER_HEADS) and (not isinstance(e, sympy.Symbol) or e.is_integer)
        and (not isinstance(e, sympy.Pow) or (e.exp.is_Integer and e.exp >= 0))
        for e in sympy.preorder_traversal(expr)
    )


def _items_before(op: Operation) -> dict[str, ItemOp]:
    block = op.parent_block()
    found: dict[str, ItemOp] = {}
    if block is None:
        return found
    for other in block.ops:
        if other is op:
            break
        if isinstance(other, ItemOp):
            found[other.symbol.data] = other
    return found


# ---------------------------------------------------------------- checks, randperm
@decomposes("aten::_assert_scalar")
def assert_scalar(op: AtenOp, b: PrimBuilder) -> list[SSAValue]:
    condition = op.attributes.get(CONDITION)
    if not isinstance(condition, StringAttr):
        raise Decline("an assertion whose condition the importer did not record")
    if condition.data == "True":
        return []
    check = AssertScalarOp(condition.data, str(b.arg("assert_msg")))
    if "strata.source" in op.attributes:
        check.attributes["strata.source"] = op.attributes["strata.source"]
    b.ops.append(check)  # no result: PrimBuilder.add would return one
    return []


@decomposes("aten::randperm")
def randperm(op: AtenOp, b: PrimBuilder) -> SSAValue:
    layout = b.arg("layout")
    if layout is not None and str(layout) != "torch.strided":
        raise Decline(f"layout {layout}")
    out = b.out()
    if out.dtype == "i1":
        raise Decline("randperm of bools")
    return b.add(RandpermOp(out.dims[0], out.dtype))
