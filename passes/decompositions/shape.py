"""Views and shape ops → prim.reshape / permute / broadcast_in_dim / slice / cat.

The target shape of a view is read off the op's declared result type, which already
has torch's -1 inference and symbolic sizes resolved.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import sympy
from xdsl.ir import Attribute, SSAValue

from strata.dialects import prim
from strata.dialects.aten import AtenOp
from strata.dialects.prim_data_dependent import CheckScalarIndexOp
from strata.dialects.types import Dim, is_signed, sym, symbol, torch_symbol_name
from strata.passes.decompositions.builder import Decline, PrimBuilder, tensor_of, wrap_dim
from strata.passes.decompositions.indexing import clamp_index, positions, read_at
from strata.passes.decompositions.rules import decomposes
from strata.passes.provenance import kernel_source_text


@decomposes(
    "aten::view",
    "aten::_unsafe_view",
    "aten::reshape",
    "aten::squeeze",
    "aten::squeeze.dim",
    "aten::squeeze.dims",
    "aten::unsqueeze",
)
def reshape(op: AtenOp, b: PrimBuilder) -> SSAValue:
    return b.reshape(b.arg("self"), b.out().dims)


@decomposes("aten::expand")
def expand(op: AtenOp, b: PrimBuilder) -> SSAValue:
    return b.broadcast(b.arg("self"), b.out().dims)


@decomposes("aten::permute")
def permute(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x = b.arg("self")
    rank = tensor_of(x).rank
    return b.permute(x, [wrap_dim(d, rank) for d in b.arg("dims")])


@decomposes("aten::t", "aten::transpose.int")
def transpose(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x = b.arg("self")
    rank = tensor_of(x).rank
    if op.overload_name == "aten::t":
        if rank > 2:
            raise Decline("t of a tensor of rank above 2 is an error in eager")
        d0, d1 = 0, rank - 1
    else:
        d0, d1 = (wrap_dim(b.arg(n), rank) for n in ("dim0", "dim1"))
    if rank < 2:
        return x
    perm = list(range(rank))
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return b.permute(x, perm)


# ---------------------------------------------------------------- slicing
def _holds(relation: sympy.Basic) -> bool:
    """Whether sympy proves `relation` for all values of the shape symbols."""
    return relation == sympy.true


def _is_negative(i: sympy.Expr) -> bool:
    """Whether index `i` counts from the end. Where sympy cannot tell, neither can
    the result length, so we decline rather than guess an offset."""
    if (i < 0) not in (sympy.true, sympy.false):
        raise Decline(f"cannot tell whether index {i} is negative")
    return _holds(i < 0)


# No size comes near this; open slice ends arrive as +-(2**63 - 1).
_HUGE = 2**62


def _unbounded(i: sympy.Expr, size: sympy.Expr) -> sympy.Expr:
    """An index beyond any size, clamped now: sympy cannot compare it with a symbol."""
    if i.is_Integer and i >= _HUGE:
        return size
    if i.is_Integer and i <= -_HUGE:
        return sympy.Integer(0)
    return i


def _clamps(i: sympy.Expr, lo: sympy.Expr, hi: sympy.Expr) -> list[sympy.Expr]:
    """i clamped to [lo, hi]: the value, where sympy can decide the comparisons, else
    every value it may take."""
    if _holds(i < lo):
        return [lo]
    if _holds(i > hi):
        return [hi]
    return [i] + [lo] * (not _holds(i >= lo)) + [hi] * (not _holds(i <= hi))


def _length(start: sympy.Expr, end: sympy.Expr, step: int) -> sympy.Expr:
    return end - start if step == 1 else sympy.floor((end - start + step - 1) / step)


def _slice_bounds(start, end, size: Dim, step: int, length: Dim) -> tuple[sympy.Expr, sympy.Expr]:
    """torch's slice bounds: negatives count from the end, then start clamps to
    [0, size] and end to [start, size]. Where sympy cannot decide a clamp, torch did,
    by a guard when it traced, and its decision shows in the declared `length`: the
    bounds are those that give it, provided they agree on where the slice starts."""
    size = sym(size)
    start = _unbounded(sym(0 if start is None else start), size)
    end = size if end is None else _unbounded(sym(end), size)
    if _is_negative(start):
        start = start + size
    if _is_negative(end):
        end = end + size
    fits = [
        (s, e)
        for s in _clamps(start, sympy.Integer(0), size)
        for e in _clamps(end, s, size)
        if sympy.simplify(_length(s, e, step) - sym(length)) == 0
    ]
    if len({s for s, _ in fits}) != 1:
        raise Decline(f"cannot tell where slice [{start}:{end}] of a dim of {size} starts")
    return fits[0]


@decomposes("aten::slice.Tensor")
def slice_(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x = b.arg("self")
    t = tensor_of(x)
    d = wrap_dim(b.arg("dim"), t.rank)
    step = b.arg("step")
    if not isinstance(step, int) or step <= 0:
        raise Decline(f"slice step {step}")
    start, end = _slice_bounds(b.arg("start"), b.arg("end"), t.dims[d], step, b.out().dims[d])
    return _slice_dim(b, x, d, start, end, step)


def _slice_dim(b: PrimBuilder, x: SSAValue, d: int, start: Dim, end: Dim, step: int = 1) -> SSAValue:
    t = tensor_of(x)
    starts: list[Dim] = [0] * t.rank
    limits: list[Dim] = list(t.dims)
    steps = [1] * t.rank
    starts[d], limits[d], steps[d] = start, end, step
    if starts == [0] * t.rank and limits == list(t.dims) and step == 1:
        return x
    return b.add(prim.SliceOp(x, starts, limits, steps))


@decomposes("aten::select.int")
def select(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x = b.arg("self")
    t = tensor_of(x)
    d = wrap_dim(b.arg("dim"), t.rank)
    start = select_start(b, b.arg("index"), t.dims[d], d)
    return b.reshape(_slice_dim(b, x, d, start, start + 1), b.out().dims)


def select_start(b: PrimBuilder, index: Dim, size: Dim, dim: int) -> sympy.Expr:
    """Where a select at `index` starts in dim `dim` (of `size`): the index, counted
    from the end where negative. Where sympy cannot prove an index over symbols in
    range, prim.check_scalar_index checks and wraps it at run time, and its symbol is
    the start: torch leaves an index over item()'s unbacked symbols unchecked, and
    torch 2.11's Dynamo one over a Python int too (`torch.arange(12.)[k]` at k = 14
    read past the end)."""
    index, size = sym(index), sym(size)
    low, high = _bounds(index)
    if _holds(low >= 0) and _holds(high < size):
        return index
    if _holds(high < 0) and _holds(low >= -size):
        return index + size
    if not index.free_symbols:
        return index + size if _is_negative(index) else index
    name = _fresh_index_symbol(b)
    check = CheckScalarIndexOp(index, size, name, dim, not b.index_bounds_checks, kernel_source_text(b.op))
    if "strata.source" in b.op.attributes:
        check.attributes["strata.source"] = b.op.attributes["strata.source"]
    b.ops.append(check)  # no result: PrimBuilder.add would return one
    return symbol(name)


def _ranges_over_sign(s: sympy.Symbol) -> bool:
    """An int value (a Python int, item()'s) or an unbacked size: no one value a call
    fixes that the guards compared."""
    return is_signed(s) or torch_symbol_name(s.name).startswith("u")


def _bounds(e: sympy.Expr) -> tuple[sympy.Expr, sympy.Expr]:
    """The least and the greatest value of an int expression, by intervals: an int
    symbol (`n…`, `m…`: a Python int, item()'s value) ranges over its sign, a size
    stands for itself (each call fixes it). Enough to prove a clamped index such as
    min(max(v, 0), 11), or s0 - 1 into a dim of s0."""
    if not any(_ranges_over_sign(s) for s in e.free_symbols):
        return e, e
    if e.is_Symbol:
        return (sympy.Integer(0) if e.is_nonnegative else -sympy.oo), (sympy.Integer(-1) if e.is_negative else sympy.oo)
    if isinstance(e, sympy.Add | sympy.Min | sympy.Max):
        lows, highs = zip(*(_bounds(a) for a in e.args))
        combine = sympy.Add if isinstance(e, sympy.Add) else type(e)
        return combine(*lows), combine(*highs)
    if isinstance(e, sympy.Mul) and e.as_coeff_Mul()[0] != 1:
        c, rest = e.as_coeff_Mul()
        low, high = _bounds(rest)
        return (c * low, c * high) if c > 0 else (c * high, c * low)
    if isinstance(e, sympy.Abs):
        low, high = _bounds(e.args[0])
        return sympy.Max(low, -high, 0), sympy.Max(-low, high)
    return -sympy.oo, sympy.oo


def _fresh_index_symbol(b: PrimBuilder) -> str:
    """A name no other prim.check_scalar_index of the graph binds."""
    block = b.op.parent_block()
    ops = [*(block.ops if block is not None else ()), *b.ops]
    taken = {o.symbol.data for o in ops if isinstance(o, CheckScalarIndexOp)}
    return next(f"idx{k}" for k in itertools.count() if f"idx{k}" not in taken)


@decomposes("aten::split_with_sizes", "aten::split.Tensor")
def split(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    # The pieces' sizes along `dim` are those of the declared results.
    x = b.arg("self")
    d = wrap_dim(b.arg("dim"), tensor_of(x).rank)
    pieces, offset = [], sympy.Integer(0)
    for r in op.results:
        size = sym(tensor_of(r).dims[d])
        pieces.append(_slice_dim(b, x, d, offset, offset + size))
        offset = offset + size
    return pieces


@decomposes("aten::cat")
def cat(op: AtenOp, b: PrimBuilder) -> SSAValue:
    out = b.out()
    # Eager skips 1-d empty tensors (a legacy rule) and promotes to one dtype.
    xs = [x for x in b.arg("tensors") if tensor_of(x).dims != (0,)] or list(b.arg("tensors"))
    if len(xs) > 1 and any(tensor_of(x).rank != out.rank for x in xs):
        # a 1-d tensor of a symbolic size beside others: eager skips it only where empty
        raise Decline("cat of a 1-d tensor that may be empty beside tensors of another rank")
    xs = [b.convert(x, out.dtype) for x in xs]
    if len(xs) == 1:
        return b.reshape(xs[0], out.dims)
    d = wrap_dim(b.arg("dim"), out.rank)
    if len(xs) <= POINTWISE_CAT_OPERANDS and all(_static_positive(tensor_of(x).dims[d]) for x in xs):
        return cat_as_reads(b, xs, d, out.dims)
    return b.add(prim.CatOp(xs, d))


def _static_positive(n: Dim) -> bool:
    # each operand is read (at a clamped coordinate) at every position: it must have
    # an element at every call, which a symbolic size does not promise
    return sym(n).is_Integer and int(sym(n)) >= 1


# A cat of a few operands is elementwise: each element of the result reads the operand
# its position along `dim` falls in, so fusion computes the cat inside the kernel that
# reads it, from its operands' producers, and no operand goes through memory (a rotary
# embedding's stack of two products, a partial rotary's cat). With more operands each
# element would read every one of them: those stay one library call.
POINTWISE_CAT_OPERANDS = 4


def cat_as_reads(b: PrimBuilder, xs: Sequence[SSAValue], d: int, dims: Sequence[Dim],
                 sources: Sequence[Attribute | None] = ()) -> SSAValue:
    """where(p < o1, x0[p], where(p < o2, x1[p - o1], ...)) along dim d, of `dims`,
    each operand read at its coordinate clamped into its size (the positions `where`
    discards, which a GPU kernel's masks then do not fetch: codegen/triton_guards.py).
    `sources`: the source to tag each operand's read with, if not the builder's."""
    p = positions(b, dims, d)
    reads, offsets, offset = [], [], sympy.Integer(0)
    for i, x in enumerate(xs):
        if i < len(sources):
            b.tag(sources[i])
        n = tensor_of(x).dims[d]
        at = p if offset == 0 else b.ew("sub", p, b.constant_like(p, offset))
        reads.append(read_at(b, x, {d: clamp_index(b, at, n)}, dims))
        offset = offset + sym(n)
        offsets.append(offset)
    value = reads[-1]
    for read, end in zip(reversed(reads[:-1]), reversed(offsets[:-1])):
        value = b.where(b.ew("lt", p, b.constant_like(p, end)), read, value)
    return value
