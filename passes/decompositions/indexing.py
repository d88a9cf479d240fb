"""Indexing → prim.gather (reads, computed in kernels) and prim.scatter (writes, a
library call).

Two helpers carry every rule here:
- `take(x, dim, index)`: x with dim `dim` replaced by index's dims, each element read
  at the position index holds (index_select, embedding, advanced indexing): one
  prim.gather of a broadcast view of x;
- `read_at(x, coords, dims)`: a tensor of `dims` whose element p is x at the
  coordinates coords[k][p] in the dims k that have coordinates, p's own elsewhere
  (padding, flips, scatters of slices, pooling windows): one prim.gather over the
  coordinates' dims merged into one.
Coordinates and indices are i64 tensors. A gather clamps its index into the dim
(dialects/prim_indexing.py); every index a user gave goes through `checked` first
(prim.check_index), which raises where eager raises and wraps negative indices where
eager accepts them. Coordinates the rules compute themselves need no check.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from xdsl.ir import SSAValue

from strata.dialects import prim
from strata.dialects.aten import AtenOp
from strata.dialects.prim_indexing import CheckIndexOp, GatherOp, ScatterOp
from strata.dialects.prim_scan import CumsumOp
from strata.dialects.types import Dim, numel, sym
from strata.passes.decompositions.builder import Decline, PrimBuilder, broadcast_dims, tensor_of, wrap_dim
from strata.passes.decompositions.rules import decomposes


# ---------------------------------------------------------------- helpers
def _static_zero(d: Dim) -> bool:
    return sym(d) == 0


def index_tensor(b: PrimBuilder, i: SSAValue) -> SSAValue:
    """An index operand as i64; bool and byte masks select data-dependent shapes."""
    dtype = tensor_of(i).dtype
    if dtype not in ("i64", "i32", "i16", "i8"):
        raise Decline(f"indices of dtype {dtype} (a mask selects a data-dependent shape)")
    return b.convert(i, "i64")


def wrap_negative(b: PrimBuilder, i: SSAValue, size: Dim) -> SSAValue:
    """i + size where i < 0 (Python's reading of a negative index)."""
    zero = b.constant_like(i, 0)
    return b.where(b.ew("lt", i, zero), b.ew("add", i, b.constant_like(i, size)), i)


def checked(b: PrimBuilder, i: SSAValue, size: Dim, dim: int, wraps: bool) -> SSAValue:
    """A user's i64 index into dim `dim` (of `size`) of the tensor the op indexes,
    checked as eager checks it and wrapped into [0, size): with `wraps`, negative
    indices count from the end (advanced indexing), else they are out of range
    (gather, index_select, embedding)."""
    return b.add(CheckIndexOp(i, b.size_like(i, size), dim, wraps, b.op.name))


def positions(b: PrimBuilder, dims: Sequence[Dim], d: int) -> SSAValue:
    """The i64 tensor of `dims` holding each element's coordinate along dim d."""
    iota = b.add(prim.IotaOp(dims[d], 0, 1, "i64"))
    return b.add(prim.BroadcastInDimOp(iota, dims, [d])) if len(dims) > 1 else iota


def take(b: PrimBuilder, x: SSAValue, dim: int, index: SSAValue,
         check_each_read: Callable[[SSAValue], SSAValue] | None = None) -> SSAValue:
    """x[..., index, ...] at dim `dim`: dims pre + index.dims + post, x's dtype. The
    index is i64 and in range (wrapped already), or `check_each_read` checks it where
    the result reads it: once per element of the result, so not at all where the
    result is empty (eager's advanced indexing checks no index then)."""
    t, it = tensor_of(x), tensor_of(index)
    pre, n, post = list(t.dims[:dim]), t.dims[dim], list(t.dims[dim + 1 :])
    block = list(it.dims)
    scalar = not block
    if scalar:
        block, index = [1], b.reshape(index, [1])
    out = pre + block + post
    if any(_static_zero(d) for d in out):
        return b.full(out if not scalar else pre + post, 0, t.dtype)
    if _static_zero(n):
        raise Decline("indexing into an empty dim")
    # x as pre + [1]*(k-1) + [n] + post, broadcast over the index block but its last dim.
    k = len(block)
    xv = b.reshape(x, pre + [1] * (k - 1) + [n] + post)
    xv = b.broadcast(xv, pre + block[:-1] + [n] + post)
    iv = b.add(prim.BroadcastInDimOp(index, out, range(len(pre), len(pre) + k))) if out != block else index
    if check_each_read is not None:
        iv = check_each_read(iv)
    result = b.add(GatherOp(xv, iv, len(pre) + k - 1))
    return b.reshape(result, pre + post) if scalar else result


def read_at(b: PrimBuilder, x: SSAValue, coords: dict[int, SSAValue], dims: Sequence[Dim]) -> SSAValue:
    """The tensor of `dims` whose element p is x at coordinate coords[k][p] in each dim
    k of coords and at p[k] in the others (which must then have x's size). Each
    coordinate is an i64 tensor of `dims`, within x's dim or else clamped."""
    t = tensor_of(x)
    dims = list(dims)
    if any(_static_zero(d) for d in dims):
        return b.full(dims, 0, t.dtype)
    ks = sorted(coords)
    if any(_static_zero(t.dims[k]) for k in ks):
        raise Decline("reading from an empty dim")
    others = [i for i in range(t.rank) if i not in coords]
    perm = others + ks
    inverse = [perm.index(i) for i in range(t.rank)]
    # The coordinate dims, moved last and merged: one gather over their product.
    xp = b.permute(x, perm)
    merged = numel(t.dims[k] for k in ks)
    out_p = [dims[i] for i in perm]
    lead = [dims[i] for i in others]
    xv = b.reshape(xp, lead + [1] * (len(ks) - 1) + [merged])
    xv = b.broadcast(xv, lead + [dims[k] for k in ks[:-1]] + [merged])
    linear = None
    for j, k in enumerate(ks):
        c = b.permute(coords[k], perm)
        stride = numel(t.dims[m] for m in ks[j + 1 :])
        term = c if sym(stride) == 1 else b.ew("mul", c, b.size_like(c, stride))
        linear = term if linear is None else b.ew("add", linear, term)
    result = b.add(GatherOp(xv, linear, len(out_p) - 1))
    return b.permute(result, inverse)


def clamp_index(b: PrimBuilder, i: SSAValue, size: Dim) -> SSAValue:
    """i clamped into [0, size): coordinates of positions a mask hides."""
    i = b.ew("maximum", i, b.constant_like(i, 0))
    return b.ew("minimum", i, b.constant_like(i, sym(size) - 1))


# ---------------------------------------------------------------- gathers
@decomposes("aten::gather")
def gather(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x, index = b.arg("self"), b.arg("index")
    t, it = tensor_of(x), tensor_of(index)
    out = b.out()
    if any(_static_zero(n) for n in it.dims):
        return b.full(out.dims, 0, out.dtype)  # eager checks nothing more of an empty index
    if it.dtype not in ("i64", "i32"):
        raise Decline("gather takes i64 (or i32) indices")
    if t.rank == 0:
        return b.broadcast(x, out.dims)  # the only element (eager checks the indices are 0)
    if it.rank == 0:
        raise Decline("gather by a 0-d index")
    d = wrap_dim(b.arg("dim"), t.rank)
    if it.rank != t.rank:
        raise Decline("gather with an index of another rank is an error in eager")
    if _static_zero(t.dims[d]):
        raise Decline("gather from an empty dim is an error in eager")
    return b.add(GatherOp(x, checked(b, b.convert(index, "i64"), t.dims[d], d, wraps=False), d))


@decomposes("aten::index_select")
def index_select(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x, index = b.arg("self"), index_tensor(b, b.arg("index"))
    t = tensor_of(x)
    if t.rank == 0:
        return b.reshape(x, b.out().dims)  # the only element (eager checks the index is 0)
    d = wrap_dim(b.arg("dim"), t.rank)
    out = b.out()
    index = b.reshape(index, [out.dims[d]])
    if _static_zero(out.dims[d]):
        return take(b, x, d, index)  # no index: nothing to read
    _refuse_empty_dim(t.dims[d])
    return take(b, x, d, checked(b, index, t.dims[d], d, wraps=False))


def _refuse_empty_dim(n: Dim) -> None:
    """Every index into an empty dim is out of range, and eager raises for it even where
    the result is empty (rows of width 0)."""
    if _static_zero(n):
        raise Decline("indices into an empty dim: eager raises")


@decomposes("aten::embedding")
def embedding(op: AtenOp, b: PrimBuilder) -> SSAValue:
    weight, indices = b.arg("weight"), index_tensor(b, b.arg("indices"))
    t = tensor_of(weight)
    if t.rank != 2:
        raise Decline("embedding of a weight that is not 2-d")
    if any(_static_zero(n) for n in tensor_of(indices).dims):
        return take(b, weight, 0, indices)  # no index: nothing to read
    _refuse_empty_dim(t.dims[0])
    return take(b, weight, 0, checked(b, indices, t.dims[0], 0, wraps=False))


def _indexed(b: PrimBuilder) -> tuple[SSAValue, list[int], list[SSAValue], bool]:
    """x, its indexed dims, their indices (i64, wrapped, broadcast to one shape B) and
    whether the indexed dims are adjacent (B then takes their place; else B leads)."""
    x = b.arg("self")
    t = tensor_of(x)
    given = list(b.arg("indices"))
    if len(given) > t.rank:
        raise Decline("more indices than dims")
    dims = [k for k, i in enumerate(given) if i is not None]
    if not dims:
        raise Decline("indexing without an index tensor")
    adjacent = dims == list(range(dims[0], dims[-1] + 1))
    return x, dims, [index_tensor(b, given[k]) for k in dims], adjacent


def _broadcast_block(b: PrimBuilder, x: SSAValue, dims: list[int], indices: list[SSAValue], block: list[Dim],
                     check: str = "check") -> SSAValue:
    """The indices checked and wrapped (`check`: "check" a user's, "wrap" a mask's
    coordinates, "none": the caller checks them), broadcast to `block` and linearized
    over x's indexed dims."""
    t = tensor_of(x)
    linear = None
    for j, (k, i) in enumerate(zip(dims, indices)):
        empty = any(_static_zero(n) for n in (t.dims[k], *tensor_of(i).dims))
        if check == "check" and not empty:
            i = checked(b, i, t.dims[k], k, wraps=True)
        elif check != "none":
            i = wrap_negative(b, i, t.dims[k])
        i = b.broadcast(i, block)
        stride = numel(t.dims[m] for m in dims[j + 1 :])
        term = i if sym(stride) == 1 else b.ew("mul", i, b.constant_like(i, stride))
        linear = term if linear is None else b.ew("add", linear, term)
    return linear


@decomposes("aten::index.Tensor")
def index(op: AtenOp, b: PrimBuilder) -> SSAValue:
    from strata.passes.decompositions.data_dependent import mask_indexed  # x[mask]: nonzero

    masked = mask_indexed(b)
    x, dims, indices, adjacent = masked or _indexed(b)
    t, out = tensor_of(x), b.out()
    others = [k for k in range(t.rank) if k not in dims]
    nb = out.rank - len(others)
    start = dims[0] if adjacent else 0
    block = list(out.dims[start : start + nb])
    if masked is None and not any(_static_zero(d) for d in block):
        _refuse_empty_dim(numel(t.dims[k] for k in dims))  # eager raises even where the result is empty
    # One index is checked where the result reads it, as eager checks it: not at all
    # where the result is empty (x[i] of an x of shape [n, 0]), at every element where
    # it is not, however little of it the program reads (x[i][::2]). Several are
    # checked each in its own dim.
    one = masked is None and len(dims) == 1
    linear = _broadcast_block(b, x, dims, indices, block, check="none" if one else "wrap" if masked else "check")
    check_each_read = (lambda i: checked(b, i, t.dims[dims[0]], dims[0], wraps=True)) if one else None
    # x with the indexed dims where the block goes, merged into one dim.
    perm = others[:start] + dims + others[start:]
    xp = b.permute(x, perm)
    merged = numel(t.dims[k] for k in dims)
    pre = [t.dims[k] for k in others[:start]]
    post = [t.dims[k] for k in others[start:]]
    xm = b.reshape(xp, pre + [merged] + post)
    return b.reshape(take(b, xm, len(pre), linear, check_each_read), out.dims)


def _masked_fill_from(b: PrimBuilder, x: SSAValue, mask: SSAValue, source: SSAValue, accumulate: bool = False) -> SSAValue:
    """x where mask is false; where it is true, source's elements in order (the k-th
    true position, in row-major order, takes element k of source, flattened): eager's
    masked_scatter and x[mask] = values. The k of each position is a running count of
    the mask (prim.cumsum, a library scan) minus one, read by a gather."""
    t = tensor_of(x)
    n = numel(t.dims)
    flat_mask = b.reshape(mask, [n])
    order = b.add(CumsumOp(b.convert(flat_mask, "i64"), 0))
    k = b.ew("sub", order, b.constant_like(order, 1))
    src = b.reshape(source, [numel(tensor_of(source).dims)])
    if sym(numel(tensor_of(source).dims)) == 0:
        raise Decline("taking from an empty source")
    taken = b.reshape(b.add(GatherOp(src, k, 0)), t.dims)
    if accumulate:
        return b.ew("add", x, b.where(mask, taken, b.constant_like(taken, 0)))
    return b.where(mask, taken, x)


@decomposes("aten::masked_scatter")
def masked_scatter(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x, mask, source = b.arg("self"), b.arg("mask"), b.arg("source")
    t = tensor_of(x)
    if tensor_of(mask).dtype != "i1" or tensor_of(source).dtype != t.dtype:
        raise Decline("masked_scatter with a mask that is not bool, or a source of another dtype")
    dims = b.out().dims  # self and mask broadcast together
    if any(_static_zero(n) for n in dims):
        return b.broadcast(x, dims)
    return _masked_fill_from(b, b.broadcast(x, dims), b.broadcast(mask, dims), source)


def _put_by_mask(b: PrimBuilder) -> SSAValue:
    """index_put with one bool index over x's leading dims: x[mask] = values."""
    x, values = b.arg("self"), b.arg("values")
    t = tensor_of(x)
    (mask,) = b.arg("indices")
    mt = tensor_of(mask)
    if mt.dims != t.dims[: mt.rank] or tensor_of(values).dtype != t.dtype:
        raise Decline("a bool index that is not over x's leading dims, or values of another dtype")
    if any(_static_zero(n) for n in t.dims):
        return x
    full_mask = b.add(prim.BroadcastInDimOp(mask, t.dims, range(mt.rank))) if mt.rank < t.rank else mask
    accumulate = bool(b.arg("accumulate"))
    vt = tensor_of(values)
    rest = list(t.dims[mt.rank :])
    if sym(numel(vt.dims)) == 1 or (vt.rank <= len(rest) and _broadcasts(vt.dims, rest)):
        # one value (or one row) for every position the mask selects
        v = b.broadcast(b.reshape(values, []) if sym(numel(vt.dims)) == 1 else values, t.dims)
        if accumulate:
            return b.ew("add", x, b.where(full_mask, v, b.constant_like(v, 0)))
        return b.where(full_mask, v, x)
    # values: one row (x's trailing dims) per selected position, in order.
    if list(vt.dims[len(vt.dims) - len(rest) :] if rest else []) != rest or vt.rank != len(rest) + 1:
        raise Decline("index_put by a mask with values broadcast over rows")
    return _masked_fill_from(b, x, full_mask, values, accumulate)


def _broadcasts(small, large) -> bool:
    """Whether dims `small` broadcast to `large` (trailing dims aligned)."""
    return all(a == 1 or a == c for a, c in zip(reversed(list(small)), reversed(list(large))))


@decomposes("aten::index_put")
def index_put(op: AtenOp, b: PrimBuilder) -> SSAValue:
    given = [i for i in b.arg("indices") if i is not None]
    if len(given) == 1 and tensor_of(given[0]).dtype == "i1" and b.arg("indices")[0] is not None:
        return _put_by_mask(b)
    x, dims, indices, adjacent = _indexed(b)
    t, out = tensor_of(x), b.out()
    values = b.arg("values")
    if tensor_of(values).dtype != t.dtype:
        raise Decline("index_put of values of another dtype is an error in eager")
    others = [k for k in range(t.rank) if k not in dims]
    block = _block_shape(b, indices)
    count = numel(block)
    if sym(count) == 0:
        return x
    linear = _broadcast_block(b, x, dims, indices, block)
    # What x[indices] would be: block where the indexed dims were (adjacent), or first.
    start = dims[0] if adjacent else 0
    rest = [t.dims[k] for k in others]
    selected = rest[:start] + block + rest[start:]
    v = b.broadcast(values, selected)
    reduce = "sum" if b.arg("accumulate") else "none"
    if len(dims) == 1 and len(block) == 1 and not (reduce == "sum" and t.dtype in ("f16", "bf16")):
        # One 1-d index (a KV cache written at input_pos): a scatter along that dim of
        # x as it is, no permutes, which the runtime can do in x's own memory when x
        # is an input the graph writes back (runtime/in_place.py).
        iv = b.add(prim.BroadcastInDimOp(linear, selected, [start]))
        return b.add(ScatterOp(x, iv, v, start, reduce))
    nb = len(block)
    lead = list(range(start, start + nb)) + [k for k in range(len(selected)) if not start <= k < start + nb]
    v = b.reshape(b.permute(v, lead), [count] + rest)
    # x with the indexed dims first, merged: scatter the rows of v there.
    perm = dims + others
    xm = b.reshape(b.permute(x, perm), [numel(t.dims[k] for k in dims)] + rest)
    iv = b.reshape(linear, [count])
    if rest:
        iv = b.add(prim.BroadcastInDimOp(iv, [count] + rest, [0]))
    if reduce == "sum" and t.dtype in ("f16", "bf16"):
        # CUDA's eager index_put sums each position's values (and x) in f32 and rounds
        # once; CPU's rounds after each add. Summing in f32 gives CUDA's result and is
        # at least as close to the exact sum as CPU's.
        written = b.add(ScatterOp(b.convert(xm, "f32"), iv, b.convert(v, "f32"), 0, reduce))
        written = b.convert(written, t.dtype)
    else:
        written = b.add(ScatterOp(xm, iv, v, 0, reduce))
    back = b.reshape(written, [t.dims[k] for k in perm])
    return b.permute(back, [perm.index(k) for k in range(t.rank)])


def _block_shape(b: PrimBuilder, indices: list[SSAValue]) -> list[Dim]:
    """The indices' common (broadcast) shape."""
    return broadcast_dims("index_put with indices", *[tensor_of(i).dims for i in indices])


# ---------------------------------------------------------------- scatters
def _scatter(b: PrimBuilder, src: SSAValue, reduce: str, include_self: bool = True) -> SSAValue:
    x, index = b.arg("self"), b.arg("index")
    t, it = tensor_of(x), tensor_of(index)
    if it.dtype not in ("i64", "i32"):
        raise Decline("scatter takes i64 (or i32) indices")
    if any(_static_zero(n) for n in it.dims):
        return x
    if it.rank != t.rank or tensor_of(src).rank != t.rank:
        raise Decline("scatter of tensors whose ranks differ")
    if tensor_of(src).dtype != t.dtype:
        raise Decline("scatter of a src of another dtype is an error in eager")
    d = wrap_dim(b.arg("dim"), t.rank)
    if t.rank == 0:  # as 1-element tensors
        one = [b.reshape(v, [1]) for v in (x, index, src)]
        return b.reshape(b.add(ScatterOp(*one, 0, reduce, include_self)), [])
    return b.add(ScatterOp(x, index, src, d, reduce, include_self))


@decomposes("aten::scatter.src")
def scatter_src(op: AtenOp, b: PrimBuilder) -> SSAValue:
    return _scatter(b, b.arg("src"), "none")


@decomposes("aten::scatter.value")
def scatter_value(op: AtenOp, b: PrimBuilder) -> SSAValue:
    it, t = tensor_of(b.arg("index")), tensor_of(b.arg("self"))
    return _scatter(b, b.full(it.dims, b.round_to(b.arg("value"), t.dtype), t.dtype), "none")


@decomposes("aten::scatter.reduce", "aten::scatter.value_reduce")
def scatter_legacy_reduce(op: AtenOp, b: PrimBuilder) -> SSAValue:
    """scatter(..., reduce='add' / 'multiply'): scatter_reduce with the old names."""
    reduce = {"add": "sum", "multiply": "prod"}.get(b.arg("reduce"))
    if reduce is None:
        raise Decline(f"scatter reduce '{b.arg('reduce')}'")
    if op.overload_name == "aten::scatter.reduce":
        return _scatter(b, b.arg("src"), reduce)
    it, t = tensor_of(b.arg("index")), tensor_of(b.arg("self"))
    return _scatter(b, b.full(it.dims, b.round_to(b.arg("value"), t.dtype), t.dtype), reduce)


@decomposes("aten::scatter_add")
def scatter_add(op: AtenOp, b: PrimBuilder) -> SSAValue:
    return _scatter(b, b.arg("src"), "sum")


@decomposes("aten::scatter_reduce.two")
def scatter_reduce(op: AtenOp, b: PrimBuilder) -> SSAValue:
    reduce = b.arg("reduce")
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise Decline(f"scatter_reduce '{reduce}'")
    include_self = b.arg("include_self")
    return _scatter(b, b.arg("src"), reduce, True if include_self is None else bool(include_self))


@decomposes("aten::embedding_dense_backward")
def embedding_dense_backward(op: AtenOp, b: PrimBuilder) -> SSAValue:
    """The rows of grad summed into the weight rows the indices name (padding_idx's
    row stays 0): a scatter-add."""
    if b.arg("scale_grad_by_freq"):
        raise Decline("embedding backward scaled by frequency")
    grad, indices = b.arg("grad_output"), index_tensor(b, b.arg("indices"))
    out = b.out()
    n, width = out.dims
    count = numel(tensor_of(indices).dims)
    rows = b.reshape(b.convert(grad, out.dtype), [count, width])
    flat = b.reshape(indices, [count])
    padding = b.arg("padding_idx")
    if padding is not None and isinstance(padding, int) and padding >= 0:
        keep = b.ew("ne", flat, b.constant_like(flat, padding))
        rows = b.where(b.add(prim.BroadcastInDimOp(keep, [count, width], [0])), rows, b.constant_like(rows, 0))
    elif not isinstance(padding, int | None):
        raise Decline(f"a symbolic padding_idx {padding}")
    if sym(count) == 0:
        return b.full(out.dims, 0, out.dtype)
    iv = b.add(prim.BroadcastInDimOp(flat, [count, width], [0]))
    return b.add(ScatterOp(b.full(out.dims, 0, out.dtype), iv, rows, 0, "sum"))


# ---------------------------------------------------------------- scatters of slices
def _slice_scatter(b: PrimBuilder, x: SSAValue, src: SSAValue, d: int, start: Dim, step: int, length: Dim) -> SSAValue:
    """x with positions start, start+step, … (length of them) of dim d taken from src,
    whose dim d has `length` elements: where(in the slice, src at (p - start)/step, x)."""
    t = tensor_of(x)
    if sym(length) == 0 or any(_static_zero(n) for n in t.dims):
        return x
    p = positions(b, t.dims, d)
    rel = b.ew("sub", p, b.constant_like(p, start))
    inside = b.ew("logical_and", b.ew("ge", rel, b.constant_like(rel, 0)), b.ew("lt", rel, b.constant_like(rel, sym(length) * step)))
    if step != 1:
        on_step = b.ew("eq", b.ew("remainder", rel, b.constant_like(rel, step)), b.constant_like(rel, 0))
        inside = b.ew("logical_and", inside, on_step)
        rel = b.ew("floordiv", rel, b.constant_like(rel, step))
    taken = read_at(b, b.convert(src, t.dtype), {d: rel}, t.dims)
    return b.where(inside, taken, x)


@decomposes("aten::slice_scatter")
def slice_scatter(op: AtenOp, b: PrimBuilder) -> SSAValue:
    from strata.passes.decompositions.shape import _slice_bounds

    x, src = b.arg("self"), b.arg("src")
    t = tensor_of(x)
    d = wrap_dim(b.arg("dim"), t.rank)
    step = b.arg("step")
    if not isinstance(step, int) or step <= 0:
        raise Decline(f"slice step {step}")
    length = tensor_of(src).dims[d]
    start, _ = _slice_bounds(b.arg("start"), b.arg("end"), t.dims[d], step, length)
    return _slice_scatter(b, x, src, d, start, step, length)


@decomposes("aten::select_scatter")
def select_scatter(op: AtenOp, b: PrimBuilder) -> SSAValue:
    from strata.passes.decompositions.shape import select_start  # checked as select's index is

    x, src = b.arg("self"), b.arg("src")
    t = tensor_of(x)
    d = wrap_dim(b.arg("dim"), t.rank)
    index = select_start(b, b.arg("index"), t.dims[d], d)
    dims = list(t.dims)
    dims[d] = 1
    return _slice_scatter(b, x, b.reshape(src, dims), d, index, 1, 1)
