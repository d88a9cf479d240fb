"""The *_copy variants of view ops, unfold, and the scatters that write through a view
(diagonal_scatter, as_strided_scatter): in value semantics a view and its copy are
the same value, so each is a prim view op (reshape, permute, slice), or a gather
(indexing.read_at) where the view's elements are not a box of the input.

as_strided reads its input's storage, which values do not have. It is expressible
only where the storage is known to be the input's elements in row-major order: a
graph argument with contiguous strides. as_strided and as_strided_copy address the
storage from its start (a given storage_offset) or from the input's own offset, which
the importer records where a storage_offset is given (frontend/capture/storage_offsets.py).
as_strided_scatter writes into a clone of its input, whose storage starts at it.
"""

from __future__ import annotations

from collections.abc import Sequence

import sympy
from xdsl.dialects import func
from xdsl.ir import BlockArgument, SSAValue

from strata.dialects import prim
from strata.dialects.aten import AtenOp
from strata.dialects.prim import dims_of
from strata.dialects.prim_indexing import ScatterOp
from strata.dialects.types import Dim, numel, sym
from strata.dialects.attributes import STORAGE_OFFSET
from strata.passes.decompositions.builder import Decline, PrimBuilder, tensor_of, wrap_dim
from strata.passes.decompositions.indexing import clamp_index, positions, read_at, take
from strata.passes.decompositions.rules import decomposes
from strata.passes.decompositions.shape import _is_negative, _slice_dim


@decomposes("aten::view_copy")
def view_copy(op: AtenOp, b: PrimBuilder) -> SSAValue:
    return b.reshape(b.arg("self"), b.out().dims)


@decomposes("aten::permute_copy")
def permute_copy(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x = b.arg("self")
    rank = tensor_of(x).rank
    return b.permute(x, [wrap_dim(d, rank) for d in b.arg("dims")])


@decomposes("aten::narrow_copy")
def narrow_copy(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x = b.arg("self")
    t = tensor_of(x)
    if t.rank == 0:
        raise Decline("narrow of a 0-d tensor is an error in eager")
    d = wrap_dim(b.arg("dim"), t.rank)
    start, length = sym(b.arg("start")), sym(b.arg("length"))
    if _is_negative(start):
        start = start + sym(t.dims[d])
    return _slice_dim(b, x, d, start, start + length)


@decomposes("aten::unbind_copy.int")
def unbind_copy(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    x = b.arg("self")
    t = tensor_of(x)
    if t.rank == 0:
        raise Decline("unbind of a 0-d tensor is an error in eager")
    d = wrap_dim(b.arg("dim") or 0, t.rank)
    if len(op.results) != sym(t.dims[d]):
        raise Decline(f"unbind into {len(op.results)} pieces of a dim of {t.dims[d]}")
    return [b.reshape(_slice_dim(b, x, d, i, i + 1), b.out(i).dims) for i in range(len(op.results))]


@decomposes("aten::unfold")
def unfold(op: AtenOp, b: PrimBuilder) -> SSAValue:
    """out[..., i, ..., j] = x[..., i·step + j, ...]: x broadcast over a trailing dim
    of `size`, read at i·step + j along `dimension`."""
    x = b.arg("self")
    t, out = tensor_of(x), b.out()
    if t.rank == 0:
        return b.reshape(x, out.dims)  # [x] (eager checks size <= 1)
    d = wrap_dim(b.arg("dimension"), t.rank)
    step = b.arg("step")
    if not isinstance(step, int) or step <= 0:
        raise Decline(f"unfold step {step}")
    if any(sym(n) == 0 for n in out.dims):
        return b.full(out.dims, 0, out.dtype)
    dims = list(out.dims)
    wide = b.add(prim.BroadcastInDimOp(x, list(t.dims) + [dims[-1]], range(t.rank)))
    i, j = positions(b, dims, d), positions(b, dims, t.rank)
    coord = b.ew("add", b.ew("mul", i, b.constant_like(i, step)), j) if step != 1 else b.ew("add", i, j)
    return read_at(b, wide, {d: coord}, dims)


@decomposes("aten::diagonal_scatter")
def diagonal_scatter(op: AtenOp, b: PrimBuilder) -> SSAValue:
    """self with its diagonal (offset, dim1, dim2) taken from src: where(on the
    diagonal, src at the position's index along it, self)."""
    x, src = b.arg("self"), b.arg("src")
    t = tensor_of(x)
    if t.rank < 2:
        raise Decline("diagonal of a tensor of rank below 2 is an error in eager")
    d1 = wrap_dim(b.arg("dim1") or 0, t.rank)
    d2 = wrap_dim(1 if b.arg("dim2") is None else b.arg("dim2"), t.rank)
    if d1 == d2:
        raise Decline("diagonal of one dim with itself is an error in eager")
    offset = b.arg("offset") or 0
    if not isinstance(offset, int):
        raise Decline(f"a symbolic diagonal offset {offset}")
    st = tensor_of(src)
    length = st.dims[-1] if st.rank else None
    if length is None or sym(length) == 0 or any(sym(n) == 0 for n in t.dims):
        return x
    src = b.convert(src, t.dtype)  # eager copies src into the diagonal
    # The index along the diagonal: the position along dim1 (offset >= 0) or dim2.
    along, across = (d1, d2) if offset >= 0 else (d2, d1)
    others = [k for k in range(t.rank) if k not in (d1, d2)]
    # src [others..., L] as a tensor of self's rank: L at `along`, broadcast across.
    order = sorted(others + [along])
    src = b.permute(src, [others.index(k) if k != along else len(others) for k in order])
    spread_dims = list(t.dims)
    spread_dims[along] = length
    spread = b.add(prim.BroadcastInDimOp(src, spread_dims, order))
    p_along, p_across = positions(b, t.dims, along), positions(b, t.dims, across)
    diff = b.ew("sub", p_across, p_along)
    on_diagonal = b.ew("eq", diff, b.constant_like(diff, abs(offset)))
    taken = read_at(b, spread, {along: clamp_index(b, p_along, length)}, t.dims)
    return b.where(on_diagonal, taken, x)


# ---------------------------------------------------------------- as_strided
def _contiguous_argument(x: SSAValue) -> bool:
    """Whether x is a graph argument whose strides are row-major contiguous."""
    if not isinstance(x, BlockArgument) or not isinstance(x.owner.parent_op(), func.FuncOp):
        return False
    fn = x.owner.parent_op()
    if fn.arg_attrs is None:
        return False
    attrs = fn.arg_attrs.data[x.index].data
    if "strata.strides" not in attrs:
        return False
    strides = [sym(s) for s in dims_of(attrs["strata.strides"])]
    dims = [sym(n) for n in tensor_of(x).dims]
    expected = sympy.Integer(1)
    for n, s in reversed(list(zip(dims, strides))):
        if n != 1 and sympy.simplify(s - expected) != 0:
            return False
        expected = expected * n
    return True


def _strided_positions(b: PrimBuilder, size: Sequence[Dim], stride: Sequence, offset) -> SSAValue:
    """The i64 tensor of `size` holding each element's storage position."""
    if any(not isinstance(v, int) for v in [*size, *stride, offset]):
        raise Decline("as_strided with symbolic sizes, strides or offset")
    if any(s < 0 for s in stride):
        raise Decline("negative strides")
    linear = b.full(list(size), offset, "i64")
    for k, s in enumerate(stride):
        if s != 0 and size[k] != 1:
            p = positions(b, list(size), k)
            linear = b.ew("add", linear, b.ew("mul", p, b.constant_like(p, s)) if s != 1 else p)
    return linear


def _extent(size: Sequence[int], stride: Sequence[int], offset: int) -> int:
    """One past the last storage position the view reads (0 when it is empty)."""
    if any(n == 0 for n in size):
        return 0
    return offset + sum((n - 1) * s for n, s in zip(size, stride)) + 1


@decomposes("aten::as_strided", "aten::as_strided_copy")
def as_strided(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x = b.arg("self")
    t, out = tensor_of(x), b.out()
    if not _contiguous_argument(x):
        raise Decline("as_strided of a tensor whose storage layout is unknown")
    # A storage_offset counts from the storage's start: from x's own, known where the
    # importer recorded it (the compiled graph then checks it on each call).
    start = 0
    if b.arg("storage_offset") is not None:
        own = _recorded_storage_offset(x)
        if own is None or not isinstance(b.arg("storage_offset"), int):
            raise Decline("as_strided at a storage offset: the input's own offset in its storage is unknown")
        start = b.arg("storage_offset") - own
        if start < 0:
            raise Decline("as_strided reads the storage before the input's elements")
    size, stride = list(b.arg("size")), list(b.arg("stride"))
    n = numel(t.dims)
    if not isinstance(n, int):
        raise Decline("as_strided of a symbolic shape")
    if _extent(size, stride, start) > n:
        raise Decline("as_strided reads beyond the input's elements")
    if any(v == 0 for v in size):
        return b.full(out.dims, 0, out.dtype)
    return take(b, b.reshape(x, [n]), 0, _strided_positions(b, size, stride, start))


def _recorded_storage_offset(x: SSAValue) -> int | None:
    """The storage offset the importer recorded for graph argument x (see
    frontend/capture/storage_offsets.py), or None."""
    fn = x.owner.parent_op()
    attrs = fn.arg_attrs.data[x.index].data if fn.arg_attrs is not None else {}
    attr = attrs.get(STORAGE_OFFSET)
    return attr.value.data if attr is not None else None


@decomposes("aten::as_strided_scatter")
def as_strided_scatter(op: AtenOp, b: PrimBuilder) -> SSAValue:
    """A clone of self (contiguous: its storage is self's elements in order) with the
    view's positions written from src. Overlapping views (two elements at one storage
    position) leave the last write in eager's loop order unspecified: declined."""
    x, src = b.arg("self"), b.arg("src")
    t = tensor_of(x)
    if not _contiguous_argument(x):
        raise Decline("as_strided_scatter of a tensor whose layout is unknown")
    size, stride = list(b.arg("size")), list(b.arg("stride"))
    offset = b.arg("storage_offset") or 0
    n = numel(t.dims)
    if not isinstance(n, int) or not all(isinstance(v, int) for v in [*size, *stride, offset]):
        raise Decline("as_strided_scatter with symbolic sizes")
    if _extent(size, stride, offset) > n:
        raise Decline("as_strided_scatter beyond the input's elements")
    if any(v == 0 for v in size) or n == 0:
        return x
    if not _one_to_one(size, stride):
        raise Decline("as_strided_scatter through an overlapping view")
    linear = b.reshape(_strided_positions(b, size, stride, offset), [numel(size)])
    values = b.reshape(b.convert(src, t.dtype), [numel(size)])
    flat = b.reshape(x, [n])
    return b.reshape(b.add(ScatterOp(flat, linear, values, 0, "none")), t.dims)


def _one_to_one(size: Sequence[int], stride: Sequence[int]) -> bool:
    """Whether no two elements of the view share a storage position (sizes > 0)."""
    dims = sorted((s, n) for n, s in zip(size, stride) if n != 1)
    reach = 1
    for s, n in dims:
        if s < reach:
            return False
        reach = s * (n - 1) + reach
    return True
