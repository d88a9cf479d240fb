"""A kernel's iteration domain (passes/fusion/plan.py groups nodes into kernels of one
domain): its full shape and reduced dims, and the index at which a value of some shape,
or a reduction, is computed at each of its points."""

from __future__ import annotations

from dataclasses import dataclass

import sympy

from strata.dialects.types import Dim, sym
from strata.passes.fusion.indexing import Index, equal, match_groups, reshape_index


@dataclass
class Domain:
    """A kernel's iteration domain: a full shape and the dims reduced (maybe none)."""

    full: tuple[Dim, ...]
    reduced: tuple[int, ...] = ()

    @property
    def kept(self) -> tuple[Dim, ...]:
        return tuple(d for i, d in enumerate(self.full) if i not in self.reduced)

    @property
    def pointwise_dims(self) -> list[Dim]:
        return list(self.kept)

    @property
    def reduction_dims(self) -> list[Dim]:
        return [self.full[i] for i in self.reduced]

    def full_index(self) -> Index:
        """Loop variables for each dim of the full shape (0 where a dim is 1)."""
        out, x, r = [], 0, 0
        for i, d in enumerate(self.full):
            if i in self.reduced:
                out.append(sym(f"r{r}") if d != 1 else sympy.Integer(0))
                r += 1
            else:
                out.append(sym(f"x{x}") if d != 1 else sympy.Integer(0))
                x += 1
        return tuple(out)

    def kept_index(self) -> Index:
        full = self.full_index()
        return tuple(v for i, v in enumerate(full) if i not in self.reduced)

    def index_for(self, dims: tuple[Dim, ...]) -> Index | None:
        """The index at which a value of these dims is computed here, if it fits: the
        loop variables for a value of the domain's shape (or, in a reduction, of its
        kept shape); in a pointwise domain, also for a value whose shape merges runs of
        the domain's dims (a [512, 768] value in a [2, 256, 768] domain, at
        [256·x0 + x1, x2]): the same elements in the same order, at an affine index."""
        if same_shape(dims, self.full):
            return self.full_index()
        if self.reduced:
            if same_shape(dims, self.kept):
                return self.kept_index()
            return unit_dims_index(self.kept_index(), self.kept, dims)
        return merged_index(self.full_index(), self.full, dims)


    def reduction_index(self, own: Domain) -> tuple[Index, Index] | None:
        """(the index of its operand, the index of its result) at which a reduction of
        domain `own` is computed here: the loop variables where `own` is this domain;
        where `own` reduces to a single value (every kept dim 1) over dims of this
        domain's reduction sizes (a norm's sum of squares, in the kernel of the
        matrix-vector product that reads the normalized row), its reduced dims at this
        domain's reduction variables and every other dim at 0, so that each point of
        the kernel computes the same value. None where neither holds."""
        if same_shape(own.full, self.full) and own.reduced == self.reduced:
            return self.full_index(), self.kept_index()
        if not self.reduced or any(d != 1 for d in own.kept):
            return None
        if not same_shape(tuple(own.reduction_dims), tuple(self.reduction_dims)):
            return None
        full = self.full_index()
        variables = iter(full[i] for i in self.reduced)
        operand = tuple(next(variables) if i in own.reduced else sympy.Integer(0) for i in range(len(own.full)))
        return operand, tuple(sympy.Integer(0) for _ in own.kept)


def unit_dims_index(index: Index, shape: tuple[Dim, ...], dims: tuple[Dim, ...]) -> Index | None:
    """`index` (into `shape`) as an index into `dims`, when the two differ only in dims
    of size 1 (a matrix-vector product's [1, n] sums read as [1, 1, n]): each dim of
    size 1 at 0, the others in order; None when they differ otherwise."""
    kept = [(i, d) for i, d in zip(index, shape) if d != 1]
    wanted = [d for d in dims if d != 1]
    if not same_shape(tuple(d for _, d in kept), tuple(wanted)):
        return None
    rest = iter(i for i, _ in kept)
    return tuple(sympy.Integer(0) if d == 1 else next(rest) for d in dims)


def same_shape(a: tuple[Dim, ...], b: tuple[Dim, ...]) -> bool:
    return len(a) == len(b) and all(x == y or equal(x, y) for x, y in zip(a, b))


def merged_index(index: Index, fine: tuple[Dim, ...], coarse: tuple[Dim, ...]) -> Index | None:
    """The index into a value of shape `coarse` of element `index` of `fine`, when each
    dim of `coarse` is the product of a run of consecutive dims of `fine` (a row-major
    reshape that only merges dims); None otherwise."""
    if not fine or not coarse or len(coarse) > len(fine) or any(d == 0 for d in fine):
        return None
    groups = match_groups(fine, coarse)
    if groups is None or any(len(opd) != 1 or not res for res, opd in groups):
        return None
    return reshape_index(index, fine, coarse)
