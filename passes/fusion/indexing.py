"""Index arithmetic for fusion: how an element index of a view maps to its input.

Each function takes the index of one element of an op's result (a tuple of sympy
expressions over loop variables) and gives the index of the operand element it reads.
Reshape is the only hard one: instead of linearizing over all dims and delinearizing
again (floor/Mod everywhere), dims are matched in groups of equal size, so a split or a
merge of dims gives affine indices where it can.
"""

from __future__ import annotations

from collections.abc import Sequence

import sympy

from strata.dialects.types import Dim, sym

Index = tuple[sympy.Expr, ...]


def equal(a: Dim, b: Dim) -> bool:
    return is_zero(sym(a) - sym(b))


def is_zero(e: sympy.Expr) -> bool:
    """Whether e is identically 0. A polynomial in the shape symbols and loop variables
    is zero exactly when its expansion is (sympy.simplify, tried only where floor or
    Mod appear, costs a hundred times more: it was most of a dynamic-shape compile)."""
    e = sympy.expand(e)
    if e == 0:
        return True
    if e.is_number or not e.has(sympy.floor, sympy.Mod):
        return False
    return sympy.simplify(e) == 0


def contiguous_strides(dims: Sequence[Dim]) -> list[sympy.Expr]:
    strides: list[sympy.Expr] = []
    acc = sympy.Integer(1)
    for d in reversed(dims):
        strides.append(acc)
        acc = acc * sym(d)
    return strides[::-1]


def offset(index: Index, dims: Sequence[Dim], strides: Sequence[Dim]) -> sympy.Expr:
    """The element offset of `index` in a buffer with these strides; a dim of size 1
    contributes nothing whatever its stride (torch leaves such strides arbitrary)."""
    total = sympy.Integer(0)
    for i, d, s in zip(index, dims, strides):
        if d == 1:
            continue
        total += i * sym(s)
    return sympy.expand(total)


def empty_row_guard(index: Index, dims: Sequence[Dim], strides: Sequence[Dim]) -> sympy.Expr:
    """A term to add to a load's offset, zero wherever the load runs, that puts back
    the reduction variables a stride of 0 took out of it where their (symbolic) dim
    may be empty at run time.

    A load whose index names no reduction variable runs once per point, before the
    row's loop, even when the row is empty; but a tensor with an empty dim may have no
    storage at all, so that load would read outside its buffer. Naming the variable
    keeps the load inside the (empty) loop."""
    extra = sympy.Integer(0)
    for i, d, s in zip(index, dims, strides):
        if sym(s) == 0 and not sym(d).is_number and any(_is_reduction_variable(v) for v in i.free_symbols):
            extra += sympy.floor(i / sym(d))  # 0 for every index within the dim
    return extra


def _is_reduction_variable(s: sympy.Symbol) -> bool:
    return s.name[0] == "r" and s.name[1:].isdigit()


def broadcast_index(index: Index, operand_dims: Sequence[Dim], broadcast_dimensions: Sequence[int]) -> Index:
    return tuple(
        sympy.Integer(0) if (d == 1) else index[b]
        for d, b in zip(operand_dims, broadcast_dimensions)
    )


def permute_index(index: Index, dims: Sequence[int]) -> Index:
    out: list[sympy.Expr] = [sympy.Integer(0)] * len(dims)
    for i, d in enumerate(dims):
        out[d] = index[i]
    return tuple(out)


def slice_index(index: Index, start: Sequence[Dim], step: Sequence[int]) -> Index:
    return tuple(sym(a) + i * s for i, a, s in zip(index, start, step))


def reshape_index(index: Index, result_dims: Sequence[Dim], operand_dims: Sequence[Dim]) -> Index:
    """The operand index read by element `index` of a row-major reshape."""
    if any(d == 0 for d in (*result_dims, *operand_dims)):
        return tuple(sympy.Integer(0) for _ in operand_dims)  # no element is ever read
    groups = match_groups(result_dims, operand_dims)
    if groups is None:
        groups = [(list(range(len(result_dims))), list(range(len(operand_dims))))]
    out: list[sympy.Expr] = [sympy.Integer(0)] * len(operand_dims)
    for res, opd in groups:
        linear = sympy.Integer(0)
        for k, stride in zip(res, contiguous_strides([result_dims[k] for k in res])):
            linear += index[k] * stride
        linear = rejoined(linear)
        # a dim of size 1 is at 0; the others split the group's linear index (so a
        # group [1, 4] of [4] reads x at (0, x), not at (x // 4, x % 4))
        kept = [m for m in opd if operand_dims[m] != 1]
        inner = contiguous_strides([operand_dims[m] for m in kept])
        for pos, (m, st) in enumerate(zip(kept, inner)):
            v = linear if st == 1 else sympy.floor(linear / st)
            if pos > 0:  # the outermost dim of a group needs no wrap-around
                v = sympy.Mod(v, sym(operand_dims[m]))
            out[m] = v
    return tuple(sympy.expand(v) if v.is_Add else v for v in out)


def rejoined(e: sympy.Expr) -> sympy.Expr:
    """e with each `c*floor(a/c) + Mod(a, c)` written as `a`: a dim split by one reshape
    and merged again by the next (a [1, 512] row read as [1, 4, 1, 128] and back) is
    the index it started as, which sympy does not see by itself."""
    if not e.is_Add:
        return e
    terms = list(e.args)
    for t in terms:
        if isinstance(t, sympy.Mod):
            a, c = t.args
            whole = c * sympy.floor(a / c)
            if whole in terms:
                rest = [u for u in terms if u is not t]
                rest.remove(whole)
                return rejoined(sympy.Add(*rest, a))
    return e


def match_groups(a: Sequence[Dim], b: Sequence[Dim]) -> list[tuple[list[int], list[int]]] | None:
    """Split both dim lists into consecutive groups of equal element count."""
    groups: list[tuple[list[int], list[int]]] = []
    i = j = 0
    while i < len(a) or j < len(b):
        ga, gb = [], []
        pa, pb = sympy.Integer(1), sympy.Integer(1)
        if i < len(a):
            ga.append(i)
            pa *= sym(a[i])
            i += 1
        if j < len(b):
            gb.append(j)
            pb *= sym(b[j])
            j += 1
        while not equal(pa, pb):
            grow_a = i < len(a) and (j >= len(b) or _smaller(pa, pb))
            if grow_a:
                ga.append(i)
                pa *= sym(a[i])
                i += 1
            elif j < len(b):
                gb.append(j)
                pb *= sym(b[j])
                j += 1
            else:
                return None
        # Trailing size-1 dims join the current group.
        while i < len(a) and a[i] == 1 and (j >= len(b) or b[j] != 1):
            ga.append(i)
            i += 1
        while j < len(b) and b[j] == 1 and (i >= len(a) or a[i] != 1):
            gb.append(j)
            j += 1
        groups.append((ga, gb))
    return groups


def _smaller(x: sympy.Expr, y: sympy.Expr) -> bool:
    """Whether x is known to be smaller than y; unknown counts as smaller when y is
    a product that contains x (so the group grows on the side that lags)."""
    diff = sympy.expand(y - x)
    if diff.is_positive:
        return True
    if diff.is_negative:
        return False
    q = sympy.cancel(y / x)
    return not (q.is_number and q < 1)
