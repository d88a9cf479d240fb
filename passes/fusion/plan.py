"""Fusion planning: which prim values become buffers, and which kernels compute them.

Every op of the graph is one of three sorts:
- *inline*: elementwise math, where, conversions, views, full, iota. Computed inside
  whichever kernel reads it, at the index it is read at;
- *reduction*: prim.sum/prod/amax/amin. Always a node of its own;
- *extern*: library calls (prim.mm, prim.bmm, a prim.cat of many operands) and aten ops left after
  decomposition (eager fallbacks). They run in the program, on tensors.

A value is *realized* (written to a buffer) when it is a reduction, an inline compute
value that more than one consumer needs (through views), or the root of what an extern
or the program's result reads. Realized values produced in kernels are *nodes*; nodes
are grouped greedily, in program order, into kernels that share an iteration domain:
a pointwise kernel over one shape, or a reduction kernel over a full shape F reduced on
dims D, which also takes pointwise nodes of shape F (rows) or of F without D (one value
per row). A node joins a kernel only if every value it reads from that kernel is read
at the index the kernel computes it at, and everything else it reads is ready before
the kernel runs. Realized values whose consumers all ended up in their own kernel are
never stored.

Each decision is logged at DEBUG under `strata.fusion` (STRATA_LOGS=+fusion): why a
value is realized, which kernel a node joins, and what kept it out of the others.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import sympy
from xdsl.ir import Operation, SSAValue

from strata.dialects import prim
from strata.dialects.attributes import DOT_ATTR, NO_EPILOGUE_ATTR, STRIDES_ATTR
from strata.dialects.prim_indexing import CheckIndexOp, GatherOp
from strata.dialects.prim_random import PHILOX_OPS
from strata.dialects.prim_data_dependent import binds_symbols
from strata.dialects.types import Dim, TensorType, itemsize, sym
from strata.passes.fusion.decisions import (
    debug_enabled,
    describe_value,
    dims_text,
    domain_text,
    kernel_name,
    log,
)
from strata.passes.fusion.domain import Domain, same_shape
from strata.passes.fusion.indexing import Index, is_zero

INLINE_OPS = (
    prim.ElementwiseOp,
    prim.WhereOp,
    prim.ConvertElementTypeOp,
    prim.BroadcastInDimOp,
    prim.ReshapeOp,
    prim.PermuteOp,
    prim.SliceOp,
    prim.FullOp,
    prim.IotaOp,
    GatherOp,  # an element read at a position held in another tensor (fusion/gather.py)
    CheckIndexOp,  # a user's index, checked where the kernel reads it (fusion/gather.py)
    *PHILOX_OPS,  # an element drawn from its seed and position (fusion/random.py)
)
VIEW_OPS = (prim.BroadcastInDimOp, prim.ReshapeOp, prim.PermuteOp, prim.SliceOp)


def is_inline(op: Operation) -> bool:
    return isinstance(op, INLINE_OPS)


def is_reduction(op: Operation) -> bool:
    return isinstance(op, prim.ReductionOp) and len(op.dims.get_values()) > 0


def is_extern(op: Operation) -> bool:
    return not is_inline(op) and not is_reduction(op)


def is_scalar_reduction(v: SSAValue) -> bool:
    """Whether v is a reduction to a single value (every kept dim 1)."""
    return is_reduction(v.owner) and all(d == 1 for d in node_domain(v).kept)


def node_index(domain: Domain, v: SSAValue) -> Index | None:
    """The index at which node v is computed (and stored) in a kernel of `domain`. A
    single value (every dim 1) fits any domain that _holds_a_single_value, at 0: each
    program computes it and stores it."""
    if is_reduction(v.owner):
        at = domain.reduction_index(node_domain(v))
        return None if at is None else at[1]
    index = domain.index_for(dims_of(v))
    if index is None and all(d == 1 for d in dims_of(v)) and _holds_a_single_value(domain):
        return tuple(sympy.Integer(0) for _ in dims_of(v))
    return index


def node_reads(v: SSAValue, domain: Domain, realized: set[SSAValue]) -> list[tuple[SSAValue, Index]]:
    """The realized values (and indices) node v reads, computed in a kernel of `domain`."""
    op = v.owner
    leaves: list[tuple[SSAValue, Index]] = []
    if is_reduction(op):
        at = domain.reduction_index(node_domain(v))
        assert at is not None, "a reduction outside its kernel's domain"
        reads(op.x, at[0], realized, leaves)
    else:
        index = node_index(domain, v)
        for operand, idx in zip(op.operands, operand_indices(op, index)):
            reads(operand, idx, realized, leaves)
    return leaves


@dataclass
class Kernel:
    domain: Domain
    nodes: list[SSAValue] = field(default_factory=list)
    position: int = 0  # in the schedule
    # scatters this kernel stores, each with the index of its src at the kernel's
    # point (passes/fusion/scatter_stores.py)
    scatters: list[tuple[Operation, Index]] = field(default_factory=list)

    @property
    def has_reduction(self) -> bool:
        return bool(self.domain.reduced)


@dataclass
class Plan:
    """The schedule: kernels and extern ops in the order the program runs them."""

    schedule: list[Kernel | Operation] = field(default_factory=list)
    realized: set[SSAValue] = field(default_factory=set)
    kernel_of: dict[SSAValue, Kernel] = field(default_factory=dict)
    order: dict[Operation, int] = field(default_factory=dict)  # each op's position in the graph
    # Inline values each kernel rounds to their dtype where it computes them, as their
    # stored copy was rounded: the rows products recompute (_scaled_row_of_products)
    # read as eager's rounded values, not f32 ones.
    rounded: set[SSAValue] = field(default_factory=set)

    def source_of(self, v: SSAValue) -> SSAValue:
        """The realized value v is a view of (v itself if realized): the buffer an
        extern or the graph's return reads v from. Usually the root under v's views; a
        view realized on its own (copied_through_views) is its own source."""
        while v not in self.realized and isinstance(v.owner, VIEW_OPS):
            v = v.owner.operands[0]
        return v


def dims_of(v: SSAValue) -> tuple[Dim, ...]:
    t = v.type
    assert isinstance(t, TensorType), t
    return t.dims


def effective_uses(v: SSAValue) -> int:
    """How many non-view consumers read v, counting through chains of views."""
    return len(readers(v))


def readers(v: SSAValue) -> list[Operation]:
    """The ops that read v, through chains of views (one entry per operand read)."""
    out = []
    for use in v.uses:
        op = use.operation
        out += readers(op.results[0]) if isinstance(op, VIEW_OPS) else [op]
    return out


def view_root(v: SSAValue) -> SSAValue:
    """The value under a chain of views."""
    while isinstance(v.owner, VIEW_OPS):
        v = v.owner.operands[0]
    return v


# Ops whose value depends only on their operands and position: a chain of them over
# constants is a constant, recomputed by each reader for free.
_CONSTANT_PRESERVING = (prim.ElementwiseOp, prim.WhereOp, prim.ConvertElementTypeOp, *VIEW_OPS)


def constant_values(ops: list[Operation]) -> set[SSAValue]:
    """Values computed from fills and iotas alone (through elementwise ops, conversions
    and views): no memory is read for them, so a reader computes its own copy rather
    than wait for another kernel's (a `1 - y` of a sigmoid's backward made the 1 a
    0-d kernel of its own, which split the backward's pointwise kernel in two)."""
    constant: set[SSAValue] = set()
    for op in ops:
        if isinstance(op, prim.FullOp | prim.IotaOp) or (
            isinstance(op, _CONSTANT_PRESERVING) and op.operands and all(v in constant for v in op.operands)
        ):
            constant.update(op.results)
    return constant


def choose_realized(ops: list[Operation], outputs: list[SSAValue], scaled_rows: set[SSAValue] | None = None,
                    recomputed: frozenset[SSAValue] = frozenset()) -> set[SSAValue]:
    """The values written to memory. `scaled_rows`, where given, receives the rows the
    products reading them recompute instead (_scaled_row_of_products). `recomputed`:
    values read by several ops that each reader computes (shared_values.py)."""
    realized: set[SSAValue] = set()
    why: dict[SSAValue, str] | None = {} if debug_enabled() else None
    constant = constant_values(ops)
    scaled_rows = set() if scaled_rows is None else scaled_rows
    for op in ops:
        if is_reduction(op) or is_extern(op):
            realized.update(op.results)
            if why is not None:
                kind = "a reduction" if is_reduction(op) else f"the result of {_extern_kind(op)}"
                why.update((r, kind) for r in op.results)
            if is_extern(op):
                for v in op.operands:
                    copied = copied_through_views(v)
                    for r in copied:
                        realized.add(r)
                        if why is not None:
                            why.setdefault(r, f"read by {_extern_kind(op)} {op.name} through a reshape torch would copy "
                                              "(no strides express it): a kernel writes it")
                    if not copied:
                        _realize_root(v, realized, why, f"read by {_extern_kind(op)} {op.name}")
        elif is_inline(op) and not isinstance(op, VIEW_OPS + (prim.FullOp, prim.IotaOp)):
            if _sum_of_products_reading(op) is None and _scaled_row_of_products(op.results[0], realized):
                scaled_rows.add(op.results[0])
                if why is not None:
                    log.debug("recompute %s in the kernels of the products it is a side of: a row scaled by a "
                              "single-value reduction over the products' own extent", describe_value(op.results[0]))
                continue
            if isinstance(op, GatherOp) and not (op.index in constant and _loads_only(op.x, realized)):
                # positions computed from iotas alone (a cat of a few operands, a nearest
                # upsample) let the reader compute x where it reads it, like any view
                _realize_root(op.x, realized, why, "read by a gather, at positions held in another tensor")
            reads = readers(op.results[0])
            uses = len(reads)
            if uses > 1 and op.results[0] not in constant and op.results[0] not in recomputed and \
                    not _recomputed_by_readers(op.results[0], reads, realized):
                realized.add(op.results[0])
                if why is not None:
                    why.setdefault(op.results[0], f"read by {uses} consumers: computed once, not once per reader")
        if NO_EPILOGUE_ATTR in op.attributes:
            realized.update(op.results)
            if why is not None:
                why.update((r, "a matrix product's result, with epilogue_fusion off") for r in op.results)
        if DOT_ATTR in op.attributes:
            for operand in _unfused_product_operands(op):
                _realize_root(operand, realized, why, "an operand of a matrix product, computed by another kernel")
        elif is_reduction(op):
            for operand in _recomputed_product_sides(op):
                if view_root(operand) not in scaled_rows:
                    _realize_root(operand, realized, why, "a side of a sum of products, computed once rather than once per output")
    for v in outputs:
        _realize_root(v, realized, why, "a result of the graph")
    if why is not None:
        for op in ops:
            for r in op.results:
                if r in why:
                    log.debug("realize %s: %s", describe_value(r), why[r])
        inline = sum(1 for op in ops if is_inline(op) and op.results and op.results[0] not in realized)
        log.debug("%d inline values (elementwise, conversions, views) are computed where they are read", inline)
    return realized


def _recomputed_by_readers(v: SSAValue, reads: list[Operation], realized: set[SSAValue]) -> bool:
    """Whether each reader of v computes it where it reads it, rather than one kernel
    writing it and each reader reading it back: where v is a conversion (through views
    and conversions) of a stored tensor, its readers are all elementwise (a reduction
    reading it keeps the order its sums had), and reading that tensor once per reader
    moves no more bytes than the write and the reads of v, (uses - 1) · in ≤ (uses + 1)
    · out bytes an element. A widening (a rotary embedding's x.float(), read by four products) always
    is; an f32 → bf16 rounding read by four readers is not. Conversions only: they give
    the same bits in any kernel. Not the rounding of a 16-bit op computed in f32 either:
    stored, it is rounded to its dtype as eager rounds it; a reader would keep f32."""
    op = v.owner
    if not isinstance(op, prim.ConvertElementTypeOp) or prim.OPMATH_ROUNDING in op.attributes:
        return False
    source = op.x
    # through views and conversions the program asked for (a product's rounding to
    # bf16, then a rotary embedding's .float()): each reader converts twice where it
    # reads, from the stored tensor below them
    while source not in realized and (isinstance(source.owner, VIEW_OPS) or (
            isinstance(source.owner, prim.ConvertElementTypeOp) and prim.OPMATH_ROUNDING not in source.owner.attributes)):
        source = source.owner.operands[0]
    if isinstance(source.owner, Operation) and is_inline(source.owner) and source not in realized:
        return False  # the reader would compute what it converts too
    if not all(isinstance(r, prim.ElementwiseOp | prim.WhereOp | prim.ConvertElementTypeOp) for r in reads):
        return False
    uses = len(reads)
    return (uses - 1) * _itemsize(source) <= (uses + 1) * _itemsize(v)


def _inline_leaves(v: SSAValue, realized: set[SSAValue]) -> list[SSAValue] | None:
    """What computing v inline reads: realized values, graph arguments and results of
    ops that are not inline, found through elementwise ops, conversions, views and
    fulls; None where v's computation has any other op (an iota, a gather, a random
    draw, which need the position as an index expression)."""
    leaves: list[SSAValue] = []
    stack, seen = [v], set()
    while stack:
        x = stack.pop()
        if x in seen:
            continue
        seen.add(x)
        op = x.owner
        if x in realized or not isinstance(op, Operation) or not is_inline(op):
            leaves.append(x)
            continue
        if not isinstance(op, VIEW_OPS + (prim.ElementwiseOp, prim.WhereOp, prim.ConvertElementTypeOp, prim.FullOp)):
            return None
        stack.extend(op.operands)
    return leaves


def _loads_only(v: SSAValue, realized: set[SSAValue]) -> bool:
    """Whether v is elementwise ops, conversions and views down to realized values
    (or graph inputs): what a kernel can compute at a position it reads from another
    tensor, where each leaf becomes a data-dependent load."""
    return _inline_leaves(v, realized) is not None


def _unfused_product_operands(total: Operation) -> list[SSAValue]:
    """The operands of a matrix product's sum (passes/matmul_to_dot.py) that its
    template should read from memory rather than compute. The template reads each
    operand element once per tile of the other side, so what it computes on a side is
    computed that many times, and a side that is more than loads keeps Triton from
    streaming the loads straight into shared memory. A side stays fused only where it
    is views and conversions of values no wider than it (a bf16 weight read through a
    transpose); otherwise (an autocast's f32 → bf16 cast, an activation) it is realized."""
    product = total.operands[0].owner
    if not isinstance(product, prim.ElementwiseOp) or product.name != "prim.mul":
        return []
    sides = [_windowed(_unwidened(side)) for side in product.operands]
    return [side for side in sides if not _plain(side, _itemsize(side))]


def _unwidened(side: SSAValue) -> SSAValue:
    """A product's side without its broadcasts and its widening of a 16-bit value (the
    template's and the reduction's own, computed where the side is read)."""
    while isinstance(side.owner, prim.BroadcastInDimOp):
        side = side.owner.x
    widened = side.owner
    if isinstance(widened, prim.ConvertElementTypeOp) and _itemsize(widened.x) < _itemsize(side):
        side = widened.x
    return side


# A computed side broadcast along at least this many outputs of the sum is realized.
RECOMPUTE_LIMIT = 16


def _recomputed_product_sides(total: Operation) -> list[SSAValue]:
    """The sides of a sum of products (a one-row product, as matvec-to-reduction writes
    it) that its kernel would compute once for each output they are broadcast along:
    the vector of a decode step's linear layer, read for each of the n outputs. Where
    such a side is more than views and conversions (SwiGLU's silu(a) · b, a norm's
    scaling), computing it n times costs more than one small kernel that writes it
    once; so it is realized, where it is broadcast along RECOMPUTE_LIMIT outputs or
    more."""
    product = total.operands[0].owner if total.operands else None
    if not isinstance(product, prim.ElementwiseOp) or product.name != "prim.mul" or not hasattr(total, "dims"):
        return []
    reduced = set(prim.ints_of(total.dims))
    out = []
    for side in product.operands:
        repeats, wide = 1, side.owner
        while isinstance(wide, prim.BroadcastInDimOp):  # the outputs each broadcast spreads it over
            kept = list(prim.ints_of(wide.broadcast_dimensions))
            src = wide.x.type.dims
            for d, size in enumerate(wide.results[0].type.dims):
                new = d not in kept or sym(src[kept.index(d)]) == 1
                if d not in reduced and new and isinstance(size, int):
                    repeats *= size
            wide = wide.x.owner
        side = _unwidened(side)
        if repeats >= RECOMPUTE_LIMIT and not _plain(side, _itemsize(side)):
            out.append(side)
    return out


def _scaled_row_of_products(v: SSAValue, realized: set[SSAValue]) -> bool:
    """Whether v, a row computed from loads and single-value reductions over the same
    extent as the products it is a side of (a norm's x · rsqrt(mean(x²) + eps) · w
    read by a decode step's gate and up products), is better recomputed in the
    products' kernel than written by a kernel of its own: the sum of squares joins
    that kernel (Domain.reduction_index), so the norm's kernel and its launch go away.
    The price is per program of the products' kernel (one output row each, in a
    decode step's tiles): a second pass over the row, and the row and the weight read
    in place of the normalized bf16 row, three times its bytes. Only where at least two
    products of one shape, which share a kernel and so each program's recomputed row,
    are its only readers: measured on an H200 (docs/performance-history.md), the gate
    and up kernel took 0.6 µs longer and saved the norm's kernel of 1.3 µs and its
    launch; q's kernel alone took 2.9 µs longer."""
    if not isinstance(v.type, TensorType) or v in realized:
        return False
    reads = readers(v)
    if len(reads) < 2:
        return False
    domains: set[tuple[tuple[Dim, ...], tuple[int, ...]]] = set()
    for r in reads:
        total = _sum_of_products_reading(r)
        if total is None:
            return False
        domain = node_domain(total.results[0])
        domains.add((tuple(domain.full), tuple(domain.reduced)))
    if len(domains) != 1:
        return False  # products of other shapes: each kernel would recompute the row
    ((full, reduced),) = domains
    extent = tuple(full[i] for i in reduced)
    leaves = _inline_leaves(v, realized)
    scalars = [x for x in leaves or () if is_scalar_reduction(x)]
    return bool(scalars) and all(same_shape(tuple(node_domain(s).reduction_dims), extent) for s in scalars)


def _sum_of_products_reading(reader: Operation) -> Operation | None:
    """The sum of products (a prim.sum of a prim.mul) that `reader` feeds one side of,
    through nothing but the side's widening conversion and broadcasts; or None."""
    op = reader
    while isinstance(op, prim.BroadcastInDimOp | prim.ConvertElementTypeOp) and _only_user(op) is not None:
        op = _only_user(op)
    if not (isinstance(op, prim.ElementwiseOp) and op.name == "prim.mul" and _only_user(op) is not None):
        return None
    total = _only_user(op)
    return total if total.name == "prim.sum" and is_reduction(total) and total.operands[0] is op.results[0] else None


def _only_user(op: Operation) -> Operation | None:
    """The one op reading op's result, if exactly one reads it."""
    uses = list(op.results[0].uses)
    return uses[0].operation if len(uses) == 1 else None


def _plain(v: SSAValue, width: int) -> bool:
    """Whether v is views and conversions of values at most `width` bytes an element."""
    op = v.owner
    if not isinstance(op, Operation) or is_reduction(op) or is_extern(op):
        return _itemsize(v) <= width
    if isinstance(op, VIEW_OPS + (prim.ConvertElementTypeOp,)):
        return all(_plain(x, width) for x in op.operands)
    return False


def _windowed(side: SSAValue) -> SSAValue:
    """What a side reads through a window (a convolution's, passes/convolution_to_dot.py:
    a gather at positions computed from iotas, zero where a condition on them says,
    through views): the template computes the window where it reads, so the value to
    stream is the gathered one. A side without a window is itself."""
    v = side
    while isinstance(v.owner, VIEW_OPS + (prim.WhereOp, GatherOp)):
        op = v.owner
        if isinstance(op, prim.WhereOp):
            if not (_from_iotas(op.operands[0]) and _from_iotas(op.operands[2])):
                return side
            v = op.operands[1]
        elif isinstance(op, GatherOp):
            return op.x if _from_iotas(op.index) else side
        else:
            v = op.operands[0]
    return side


def _from_iotas(v: SSAValue) -> bool:
    """Whether v is computed from fills and iotas alone (constant_values, for one value)."""
    op = v.owner
    if isinstance(op, prim.FullOp | prim.IotaOp):
        return True
    return isinstance(op, _CONSTANT_PRESERVING) and bool(op.operands) and all(_from_iotas(x) for x in op.operands)


def _itemsize(v: SSAValue) -> int:
    return itemsize(v.type.dtype)


def _extern_kind(op: Operation) -> str:
    from strata.dialects.aten import AtenOp

    return "an eager fallback" if isinstance(op, AtenOp) else "a library call"


def copied_through_views(v: SSAValue) -> list[SSAValue]:
    """The reshapes in v's chain of views that torch would have to copy, making v from
    its root (laid out as `_root_strides` says): each merges dims no single stride walks
    (a broadcast's repeated heads, a permuted tensor's rows). An extern reading v would
    read a copy made at run time, after the kernel that wrote the root; the kernel had
    better write each such reshape itself, contiguous, and the views above it stay
    views. Judged with sizes at hint values for the symbols (two different values
    each): a wrong judgement costs bytes, never a wrong value, since whatever is
    realized is computed exactly."""
    chain = []
    root = v
    while isinstance(root.owner, VIEW_OPS):
        chain.append(root.owner)
        root = root.owner.operands[0]
    if not any(isinstance(op, prim.ReshapeOp) for op in chain):
        return []
    found = [_copying_reshapes(root, chain[::-1], base) for base in (61, 1021)]
    return found[0] if found[0] == found[1] else []


def _copying_reshapes(root: SSAValue, chain: list[Operation], base: int) -> list[SSAValue]:
    hints: dict[sympy.Symbol, int] = {}

    def num(d: Dim) -> int:
        e = sym(d)
        for s in sorted(e.free_symbols, key=lambda s: s.name):
            hints.setdefault(s, base + 2 * len(hints))
        return int(e.xreplace(hints))

    sizes = [num(d) for d in dims_of(root)]
    given = _root_strides(root)
    if given is False:
        return []  # laid out as a library decides: torch may well view it
    strides = _contiguous(sizes) if given is None else [num(d) for d in given]
    copied = []
    for op in chain:
        out = [num(d) for d in dims_of(op.results[0])]
        if isinstance(op, prim.BroadcastInDimOp):
            new = [0] * len(out)
            for i, d in enumerate(prim.ints_of(op.broadcast_dimensions)):
                new[d] = strides[i] if sizes[i] == out[d] else 0
            strides = new
        elif isinstance(op, prim.PermuteOp):
            strides = [strides[p] for p in prim.ints_of(op.dims)]
        elif isinstance(op, prim.SliceOp):
            strides = [st * step for st, step in zip(strides, prim.ints_of(op.step))]
        else:
            strides = view_strides(sizes, strides, out)
            if strides is None:  # realized: written contiguous by a kernel
                copied.append(op.results[0])
                strides = _contiguous(out)
        sizes = out
    return copied


def _root_strides(root: SSAValue) -> tuple[Dim, ...] | None | bool:
    """The strides the root of a chain of views has at run time: a graph argument's
    traced ones (the runtime lays it out so), None for row-major (what a kernel or a
    matrix product writes), False where a library chooses (an attention's result is
    [B, S, H, E] in memory from torch's fused kernels)."""
    owner = root.owner
    if isinstance(owner, Operation):
        return None if not is_extern(owner) or isinstance(owner, prim.MmOp | prim.BmmOp | prim.AddmmOp) else False
    fn = owner.parent_op() if owner is not None else None  # a block argument: the graph's input
    attrs = getattr(fn, "arg_attrs", None)
    if attrs is None or root.index >= len(attrs.data):
        return None
    strides = attrs.data[root.index].data.get(STRIDES_ATTR)
    return prim.dims_of(strides) if strides is not None else None


def _contiguous(sizes: list[int]) -> list[int]:
    strides, n = [], 1
    for size in reversed(sizes):
        strides.append(n)
        n *= max(size, 1)
    return strides[::-1]


def view_strides(sizes: list[int], strides: list[int], new: list[int]) -> list[int] | None:
    """The strides of `new` as a view of a tensor of these sizes and strides, or None
    where no view has that shape (torch's rule for reshape, ATen's computeStride)."""
    if not sizes or 0 in sizes:
        return _contiguous(new)
    out = [0] * len(new)
    view_d = len(new) - 1
    chunk_stride = strides[-1]
    tensor_numel = view_numel = 1
    for d in range(len(sizes) - 1, -1, -1):
        tensor_numel *= sizes[d]
        if d == 0 or (sizes[d - 1] != 1 and strides[d - 1] != tensor_numel * chunk_stride):
            while view_d >= 0 and (view_numel < tensor_numel or new[view_d] == 1):
                out[view_d] = view_numel * chunk_stride
                view_numel *= new[view_d]
                view_d -= 1
            if view_numel != tensor_numel:
                return None
            if d > 0:
                chunk_stride, tensor_numel, view_numel = strides[d - 1], 1, 1
    return out if view_d == -1 else None


def _realize_root(v: SSAValue, realized: set[SSAValue], why: dict[SSAValue, str] | None = None, reason: str = "") -> None:
    root = view_root(v)
    if isinstance(root.owner, Operation):
        realized.add(root)
        if why is not None:
            why.setdefault(root, reason + (" (through views)" if root is not v else ""))


def operand_indices(op: Operation, index: Index) -> list[Index]:
    """For an inline op computing the element at `index`: where it reads each operand."""
    if isinstance(op, prim.BroadcastInDimOp):
        from strata.passes.fusion.indexing import broadcast_index

        return [broadcast_index(index, dims_of(op.x), prim.ints_of(op.broadcast_dimensions))]
    if isinstance(op, prim.PermuteOp):
        from strata.passes.fusion.indexing import permute_index

        return [permute_index(index, prim.ints_of(op.dims))]
    if isinstance(op, prim.ReshapeOp):
        from strata.passes.fusion.indexing import reshape_index

        return [reshape_index(index, dims_of(op.result), dims_of(op.x))]
    if isinstance(op, prim.SliceOp):
        from strata.passes.fusion.indexing import slice_index

        return [slice_index(index, prim.dims_of(op.start), prim.ints_of(op.step))]
    if isinstance(op, GatherOp):
        from strata.passes.fusion.gather import gather_operand_indices

        return gather_operand_indices(op, index)
    if isinstance(op, PHILOX_OPS):
        return [()]  # the 0-d seed
    return [index for _ in op.operands]


def reads(v: SSAValue, index: Index, realized: set[SSAValue], out: list[tuple[SSAValue, Index]]) -> None:
    """The realized values (and indices) that computing v at `index` inline reads."""
    if v in realized or not isinstance(v.owner, Operation):
        out.append((v, index))
        return
    op = v.owner
    for operand, idx in zip(op.operands, operand_indices(op, index)):
        reads(operand, idx, realized, out)


def same_index(a: Index, b: Index) -> bool:
    return len(a) == len(b) and all(x == y or is_zero(x - y) for x, y in zip(a, b))


def build_plan(ops: list[Operation], outputs: list[SSAValue]) -> Plan:
    """The plan, then again with the values cheaper to recompute than to store
    (passes/fusion/shared_values.py), while that frees more."""
    from strata.passes.fusion import shared_values

    recomputed: frozenset[SSAValue] = frozenset()
    plan = _plan(ops, outputs, recomputed)
    for _ in range(shared_values.RECOMPUTE_ROUNDS):
        more = shared_values.cheaper_to_recompute(plan, outputs) - recomputed
        if not more:
            break
        if debug_enabled():
            for v in more:
                log.debug("recompute %s in each kernel that reads it: its inputs take no more bytes an element "
                          "than it does, and storing it would write it and read it back", describe_value(v))
        recomputed |= more
        plan = _plan(ops, outputs, recomputed)
    return plan


def _plan(ops: list[Operation], outputs: list[SSAValue], recomputed: frozenset[SSAValue]) -> Plan:
    from strata.passes.fusion.shared_values import deferred_nodes

    rounded: set[SSAValue] = set()
    plan = Plan(realized=choose_realized(ops, outputs, rounded, recomputed), order={op: i for i, op in enumerate(ops)},
                rounded=rounded)
    ready: dict[SSAValue, int] = {}  # realized value -> schedule position producing it
    deferred = deferred_nodes(ops, plan.realized, outputs)
    pending: dict[SSAValue, None] = {}  # deferred nodes not placed yet, in program order

    def place(v: SSAValue, after: int = -1) -> None:
        """Place node v in a kernel at position `after` or later, its deferred reads
        first: in v's kernel if they fit it, since none joins a kernel before the
        values v reads are ready (where v cannot be)."""
        reads = _reads_of(plan, v) if pending else []  # nothing deferred: nothing to place first
        deferred_after = max([after] + [ready.get(value, -1) for value in reads if value not in pending])
        for value in reads:
            if value in pending:
                del pending[value]
                place(value, deferred_after)
        kernel = _place(plan, v, ready, after)
        kernel.nodes.append(v)
        plan.kernel_of[v] = kernel
        ready[v] = kernel.position

    for op in ops:
        if is_extern(op):  # reads no deferred node: those only elementwise ops read
            plan.schedule.append(op)
            for r in op.results:
                ready[r] = len(plan.schedule) - 1
            continue
        v = op.results[0]
        if v not in plan.realized:
            continue
        if v in deferred:
            pending[v] = None
            continue
        place(v)
    for v in list(pending):  # read by nothing placed (dead code): placed as before
        if v in pending:
            del pending[v]
            place(v)
    return plan


def _reads_of(plan: Plan, v: SSAValue) -> list[SSAValue]:
    """The realized values computing node v reads (at its own domain's indices)."""
    return [value for value, _ in node_reads(v, node_domain(v), plan.realized)]


def node_domain(v: SSAValue) -> Domain:
    op = v.owner
    if is_reduction(op):
        return Domain(dims_of(op.x), prim.ints_of(op.dims))
    return Domain(dims_of(v))


# A single value of the graph's arguments joins the first kernel of at most this many
# points (each of whose programs stores it).
SCALAR_HOST_POINTS = 1 << 16


def _place(plan: Plan, v: SSAValue, ready: dict[SSAValue, int], after: int = -1) -> Kernel:
    """The kernel that computes node v: an existing one it fits (at schedule position
    `after` or later), or a new one."""
    own = node_domain(v)
    early = _place_scalar_of_arguments(plan, v) if after < 0 else None
    if early is not None:
        return early
    blocked: list[tuple[Kernel, str]] | None = [] if debug_enabled() else None
    for item in reversed(plan.schedule):
        if isinstance(item, Operation) and binds_symbols(item):
            break  # the kernels before it run before its symbol is bound: v may need it
        if isinstance(item, Kernel) and item.position < after:
            break  # where the reader that placed v cannot be
        if isinstance(item, Kernel):
            misfit = _misfit(plan, item, v, own, ready)
            if misfit is None:
                if blocked is not None:
                    log.debug("%s joins %s (%s)", describe_value(v), kernel_name(plan.schedule, item), domain_text(item.domain))
                return item
            if blocked is not None:
                blocked.append((item, misfit()))
    kernel = Kernel(own, position=len(plan.schedule))
    plan.schedule.append(kernel)
    if blocked is not None:
        _log_new_kernel(plan, v, kernel, blocked)
    return kernel


def _place_scalar_of_arguments(plan: Plan, v: SSAValue) -> Kernel | None:
    """The first kernel (after the last op binding a symbol) of at most
    SCALAR_HOST_POINTS static points, for a single value computed from the graph's
    arguments alone (a check of a decode step's position): ready before any kernel
    runs, it is best computed by the earliest, where every later kernel and library
    call can read it (passes/fusion/scatter_stores.py folds a scatter only where its
    positions are ready before the kernel storing it). None for any other node."""
    if is_reduction(v.owner) or any(d != 1 for d in dims_of(v)):
        return None
    leaves: list[tuple[SSAValue, Index]] = []
    zeros = tuple(sympy.Integer(0) for _ in dims_of(v))
    for operand, idx in zip(v.owner.operands, operand_indices(v.owner, zeros)):
        reads(operand, idx, plan.realized, leaves)
    if not leaves or any(isinstance(value.owner, Operation) for value, _ in leaves):
        return None
    first = None
    for item in plan.schedule:
        if isinstance(item, Operation) and binds_symbols(item):
            first = None
        elif isinstance(item, Kernel) and first is None and _holds_a_single_value(item.domain):
            first = item
    if first is not None and debug_enabled():
        log.debug("%s joins %s (%s): a single value of the graph's arguments, in the first kernel", describe_value(v),
                  kernel_name(plan.schedule, first), domain_text(first.domain))
    return first


def _holds_a_single_value(domain: Domain) -> bool:
    """Whether a kernel of `domain` may compute a single value at every point: it has
    at least one point (an empty domain computes nothing) and at most
    SCALAR_HOST_POINTS, all static."""
    points = sympy.Mul(*[sym(d) for d in domain.full])
    return bool(points.is_Integer) and 1 <= int(points) <= SCALAR_HOST_POINTS


def _log_new_kernel(plan: Plan, v: SSAValue, kernel: Kernel, blocked: list[tuple[Kernel, str]]) -> None:
    name = kernel_name(plan.schedule, kernel)
    head = f"{describe_value(v)} starts {name} ({domain_text(kernel.domain)})"
    if not blocked:
        log.debug("%s: no earlier kernel to join", head)
        return
    shown = [f"{kernel_name(plan.schedule, k)}: {reason}" for k, reason in blocked[:3]]
    rest = len(blocked) - 3
    more = f"; {rest} earlier kernel{'s' if rest > 1 else ''} likewise" if rest > 0 else ""
    log.debug("%s; it could not join %s%s", head, "; ".join(shown), more)


def _misfit(plan: Plan, k: Kernel, v: SSAValue, own: Domain, ready: dict[SSAValue, int]) -> Callable[[], str] | None:
    """None if node v can join kernel k (whose domain then becomes the merged one),
    else a function saying in words what prevents it (called only for the log)."""
    if _alone(v) != any(_alone(n) for n in k.nodes) and k.nodes:
        return lambda: "a matrix product takes no epilogue, nor joins one, with epilogue_fusion off"
    domain = _merged_domain(k, v, own, plan.realized)
    if domain is None:
        return lambda: f"it runs over {domain_text(k.domain)}, the node over {domain_text(own)}"
    placed = domain.reduction_index(own) if is_reduction(v.owner) else domain.index_for(dims_of(v))
    if placed is None:
        return lambda: f"its shape {dims_text(dims_of(v))} is not a row or a per-row value of {domain_text(domain)}"
    # What v reads: from k at the index k computes it, else ready before k runs.
    for value, idx in node_reads(v, domain, plan.realized):
        if plan.kernel_of.get(value) is k:
            natural = node_index(domain, value)
            if natural is None or not same_index(idx, natural):
                return lambda value=value: (
                    f"it reads {describe_value(value)}, which the kernel computes, at another "
                    "index (a transpose, broadcast or slice of it): that needs a stored copy"
                )
        elif ready.get(value, -1) > k.position:
            return lambda value=value: f"it reads {describe_value(value)}, which is computed after that kernel runs"
    k.domain = domain
    return None


def _alone(v: SSAValue) -> bool:
    """Whether v is part of a matrix product that epilogue_fusion=False keeps alone."""
    return NO_EPILOGUE_ATTR in v.owner.attributes


def _merged_domain(k: Kernel, v: SSAValue, own: Domain, realized: set[SSAValue]) -> Domain | None:
    """The domain of k with node v added, or None if they cannot share one."""
    d = k.domain
    if is_reduction(v.owner):
        if d.reduced:
            if same_shape(d.full, own.full) and d.reduced == own.reduced:
                return d
            # k computes single values that v's sums read (a norm's sum of squares, read
            # by the product of the normalized row): each point of v's domain computes them
            if k.nodes and all(is_scalar_reduction(n) and own.reduction_index(node_domain(n)) is not None for n in k.nodes):
                read = {value for value, _ in node_reads(v, own, realized)}
                if all(n in read for n in k.nodes):
                    return own
            return None
        # k is pointwise so far: its nodes must be rows or per-row values of v's domain
        # (each of them: a node may be coarser than k's domain, see below).
        if (same_shape(d.full, own.full) or same_shape(d.full, own.kept)) and all(
            node_index(own, n) is not None for n in k.nodes
        ):
            return own
        return None
    if d.index_for(dims_of(v)) is not None:
        return d
    # v splits dims the kernel's domain merges: v's shape becomes the domain, if every
    # node the kernel has fits it (at affine indices, merged_index).
    if not d.reduced:
        finer = Domain(dims_of(v))
        if all(node_index(finer, n) is not None for n in k.nodes):
            return finer
    return None
