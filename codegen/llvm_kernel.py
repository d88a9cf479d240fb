"""A kernel.func as an LLVM module: explicit vector loops over its domain, on all cores.

**Lanes.** One loop variable is walked `lanes` points at a time (a multiple of the
target's vector width): every value that depends on it is an LLVM vector, every other
value a scalar, splatted where the two meet (codegen/llvm_lanes.py). Either the last
reduction variable carries the lanes (softmax or layer norm over contiguous rows: the
row is read in vectors, reductions keep a vector of partial results and combine its
lanes at the end), or a pointwise variable does (pointwise kernels, and reductions
whose rows are strided in memory, such as a sum over a non-last dim: then each lane is
a point of its own with its own accumulator, and the reduction loop runs over scalar
r). `choose_lanes` picks the variable along which most loads and stores are contiguous.
A load or store whose index moves by 1 along the lanes is one vector access, by 0 a
scalar one, anything else a gather or scatter. The last, partial vector of a row runs
with a lane mask (masked loads and stores, identity in masked reduction lanes).

**Tiles.** A pointwise kernel that changes the layout (an access contiguous along
another pointwise variable than the lanes: NCHW to NHWC, `x.t().contiguous()`) walks
that variable and the lanes in square tiles, one vector a side (llvm_plan.choose_tile):
such an access reads or writes the tile's rows with vector loads and stores along its
own contiguous variable, transposed in registers (shufflevector) to and from the
vectors over the lanes the body computes on, instead of one gather or scatter element
per lane. The last tile of a side overlaps the one before it; a side shorter than a
tile runs untiled.

**Stages.** At each point of the pointwise domain the body runs in *stages*: stage 0 is
every op that needs no reduction; stage k > 0 starts with one loop over the reduction
domain R that accumulates each kernel.reduce whose row needs results of stage k - 1 at
most, followed by the ops that need those results. A last loop over R stores the rows.
Inside a loop over R the row ops a reduction or a store needs are recomputed from the
loads. A softmax is: loop (amax), loop (sum of exp(x - max)), loop (store
exp(x - max) / sum), each a vector loop over the row.

**Threads.** The pointwise domain (all of it but the lane variable, which may be cut
into blocks when there are fewer rows than threads; a tiled variable counts its tiles)
is a range of work items that the
entry point splits into contiguous shares across threads (codegen/llvm_parallel.py,
codegen/llvm_pool.py) when the kernel has enough work to pay for it.

**Rows handed on.** A row value that a later loop over R needs again and that is costly
to recompute (an exp, a division) is written to a scratch row (malloc'ed once per
chunk) by the loop that computes it, and read back by the later ones (llvm_plan.row_loops):
a softmax computes each exp once. A row store that is contiguous along R but scattered
along pointwise lanes (a softmax of a transposed input) goes through a tile in L1,
`depth` steps of R at a time, and leaves it a whole row segment per lane.

**Checks.** A user's index (prim.check_index) is checked where it is read, and a
chunk that met one out of range says so in slots of the symbols array
(codegen/llvm_bounds.py).

Functions: `<entry>.impl(ptr noalias %in0, …, i64 %s0, …, i64 %start, i64 %end,
i64 %lane_blocks[, ptr %errors])` holds the loops (its buffers never alias: inputs are
only read and outputs are fresh allocations; `errors` where it checks indices); `<entry>.chunk(ptr %buffers, ptr %symbols, …)` unpacks
the arrays into a call of it; the entry point `<entry>(ptr %buffers, ptr %symbols)`
decides the number of threads and runs the chunks, so Python calls every kernel the
same way.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass

import sympy
from llvmlite import ir
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IntegerAttr
from xdsl.ir import Operation, SSAValue

from strata.codegen import llvm_parallel
from strata.codegen.llvm_bounds import CheckSites, check_ops
from strata.codegen.errors import CodegenError
from strata.codegen.llvm_dtypes import (
    constant,
    convert,
    dtype_of,
    load_value,
    memory_type,
    store_value,
)
from strata.codegen.llvm_index import lower_index
from strata.codegen.llvm_lanes import I1, I32, I64, PTR, intrinsic, iota, lanes_of, splat, transpose, unify, vector_gep, with_lanes
from strata.codegen.llvm_parallel import entry_point
from strata.codegen.llvm_plan import (
    BodyPlan,
    Lanes,
    RowLoop,
    choose_lanes,
    choose_tile,
    row_loops,
    stride_along,
    transposed_in_tile,
)
from strata.codegen.llvm_random import emit_philox
from strata.codegen.llvm_reductions import BLOCK, Accumulator
from strata.codegen.llvm_scalar_ops import emit_contractible, emit_elementwise
from strata.dialects.kernel import FuncOp, IndexOp, LoadOp, ReduceOp, StoreOp, contracts
from strata.dialects.kernel_random import PhiloxOp
from strata.dialects.prim import ConvertElementTypeOp, ElementwiseOp, WhereOp
from strata.dialects.prim_indexing import CheckIndexOp
from strata.dialects.types import itemsize, sym

__all__ = ["Target", "build_module", "entry_point"]

Values = MutableMapping[SSAValue, ir.Value]
Env = Mapping[str, ir.Value]

@dataclass(frozen=True)
class Target:
    """What the code is generated for: vector register width, and whether kernels may
    fork threads, and through which runtime."""

    vector_bits: int = 512
    threads: str = "pool"  # "pool" (codegen/llvm_pool.py), "omp" (torch's OpenMP) or "none"
    avx512: bool = False  # x86 with AVX-512F: vector math may use its instructions


def build_module(func: FuncOp, target: Target = Target()) -> ir.Module:
    """The LLVM module of `func`, with its entry point."""
    module = ir.Module(name=func.sym_name.data)
    module.strata_avx512 = target.avx512
    plan = BodyPlan(func)
    lanes = choose_tile(func, plan, choose_lanes(func, plan, target.vector_bits), target.vector_bits)
    impl = _BodyEmitter(func, plan, lanes, module).function
    chunk = llvm_parallel.define_chunk(func, module, impl)
    llvm_parallel.define_entry_point(func, plan, lanes, module, chunk, target.threads)
    return module


# ---------------------------------------------------------------- code
@contextmanager
def counted_loop(
    b: ir.IRBuilder, stop: ir.Value, name: str, start: ir.Value | None = None, step: int = 1
) -> Iterator[ir.Value]:
    """`for name in range(start, stop, step)`: yields the i64 counter with `b` in the
    loop body, and leaves `b` after the loop."""
    before = b.block
    header = b.append_basic_block(f"{name}.header")
    body = b.append_basic_block(f"{name}.body")
    after = b.append_basic_block(f"{name}.end")
    b.branch(header)
    b.position_at_end(header)
    i = b.phi(I64, name)
    i.add_incoming(start if start is not None else ir.Constant(I64, 0), before)
    b.cbranch(b.icmp_signed("<", i, stop), body, after)
    b.position_at_end(body)
    yield i
    i.add_incoming(b.add(i, ir.Constant(I64, step), flags=("nuw", "nsw")), b.block)
    b.branch(header)
    b.position_at_end(after)


def _min(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)


@dataclass(frozen=True)
class LanePoint:
    """Where vector code runs: lanes `count` consecutive values of `var` from `base`
    (an i64), those past the end off in `mask` (None: all on)."""

    var: str
    count: int
    base: ir.Value
    mask: ir.Value | None


class _BodyEmitter:
    """Emits `<entry>.impl`: the loops and the vector code of one kernel.func."""

    def __init__(self, func: FuncOp, plan: BodyPlan, lanes: Lanes, module: ir.Module):
        self.func = func
        self.plan = plan
        self.lanes = lanes
        self.loops = row_loops(plan)
        self.scratch: dict[SSAValue, ir.Value] = {}
        self.function = self._declare(module)
        self.buffers = dict(zip(func.block.args, self.function.args))
        n_buffers, n_symbols = len(func.block.args), len(func.symbol_names)
        symbols = dict(zip(func.symbol_names, self.function.args[n_buffers : n_buffers + n_symbols]))
        start, end, lane_blocks = self.function.args[n_buffers + n_symbols : n_buffers + n_symbols + 3]

        # Accumulators are allocas in the entry block, which SROA turns into registers.
        self.allocas = ir.IRBuilder(self.function.append_basic_block("entry"))
        first = self.function.append_basic_block("start")
        self.allocas.position_before(self.allocas.branch(first))
        self.checks = CheckSites(func, self.allocas, lanes.count if lanes.var else None)
        b = ir.IRBuilder(first)
        self.reduction_sizes = [lower_index(b, sym(d), symbols) for d in func.reduction_dims]
        pointwise_sizes = [lower_index(b, sym(d), symbols) for d in func.pointwise_dims]
        lane_dim = int(lanes.var[1:]) if lanes.var and not lanes.over_reduction else None
        across_dim = int(lanes.across[1:]) if lanes.across else None
        # A tiled variable's digit counts its tiles (llvm_parallel sizes the items alike).
        outer = [
            (f"x{i}", self._tiles(b, n) if i == across_dim else n)
            for i, n in enumerate(pointwise_sizes)
            if i != lane_dim
        ]
        body = b.append_basic_block("items")
        done = b.append_basic_block("done")
        b.cbranch(b.icmp_signed("<", start, end), body, done)
        b.position_at_end(body)
        scratch = self._allocate_scratch(b)
        with self._items(b, start, end, lane_blocks, outer) as (xs, block):
            env = {**symbols, **xs}
            if lane_dim is None:
                self._emit_point(b, env, None)
            else:
                size = pointwise_sizes[lane_dim]
                per_block = b.udiv(b.add(size, b.sub(lane_blocks, ir.Constant(I64, 1))), lane_blocks)
                per_block = self._round_up(b, per_block)
                lo = _min(b, b.mul(block, per_block), size)
                hi = _min(b, b.add(lo, per_block), size)
                if across_dim is not None:
                    self._tiled_item(b, env, lo, hi, pointwise_sizes[across_dim])
                else:
                    self._lane_loop(b, lo, hi, lambda point: self._emit_point(b, {**env, point.var: point.base}, point))
        if scratch is not None:
            b.call(_libc(b.module, "free"), [scratch])
        b.branch(done)
        b.position_at_end(done)
        if self.checks.sites:
            self.checks.report(b, self.function.args[-1])
        b.ret_void()

    def _declare(self, module: ir.Module) -> ir.Function:
        func = self.func
        buffers, symbols = func.block.args, func.symbol_names
        errors = [PTR] if check_ops(func) else []  # where a chunk reports an index out of range
        fnty = ir.FunctionType(ir.VoidType(), [PTR] * len(buffers) + [I64] * (len(symbols) + 3) + errors)
        fn = ir.Function(module, fnty, entry_point(func) + ".impl")
        fn.linkage = "internal"
        fn.attributes.add("alwaysinline")
        fn.attributes.add("nounwind")
        for arg, value in zip(fn.args, buffers):
            arg.name = value.name_hint or "buffer"
            arg.add_attribute("noalias")
        for arg, name in zip(fn.args[len(buffers) :], [*symbols, "start", "end", "lane_blocks", "errors"]):
            arg.name = name
        return fn

    def _tiles(self, b: ir.IRBuilder, n: ir.Value) -> ir.Value:
        return b.udiv(b.add(n, ir.Constant(I64, self.lanes.count - 1)), ir.Constant(I64, self.lanes.count))

    def _round_up(self, b: ir.IRBuilder, n: ir.Value) -> ir.Value:
        k = ir.Constant(I64, self.lanes.count)
        return b.mul(b.udiv(b.add(n, ir.Constant(I64, self.lanes.count - 1)), k), k)

    # ------------------------------------------------------------ walking the domain
    @contextmanager
    def _items(self, b: ir.IRBuilder, start: ir.Value, end: ir.Value, lane_blocks: ir.Value, outer: list[tuple[str, ir.Value]]):
        """Work items start … end - 1: yields the pointwise variables of the current one
        (all but the lane variable) and its lane block. The item number is decoded once,
        then the variables advance like an odometer (lane block fastest)."""
        digits: list[ir.Value] = []
        q = start
        block = b.urem(q, lane_blocks)
        q = b.udiv(q, lane_blocks)
        for _, size in reversed(outer):
            digits.insert(0, b.urem(q, size))
            q = b.udiv(q, size)
        before = b.block
        header = b.append_basic_block("item.header")
        body = b.append_basic_block("item.body")
        after = b.append_basic_block("item.end")
        b.branch(header)
        b.position_at_end(header)
        w = b.phi(I64, "item")
        w.add_incoming(start, before)
        block_phi = b.phi(I64, "lane_block")
        block_phi.add_incoming(block, before)
        digit_phis = []
        for (name, _), d in zip(outer, digits):
            p = b.phi(I64, name)
            p.add_incoming(d, before)
            digit_phis.append(p)
        b.branch(body)
        b.position_at_end(body)
        yield {name: p for (name, _), p in zip(outer, digit_phis)}, block_phi
        # Advance: lane block, then the digits from the innermost, carrying.
        one, zero = ir.Constant(I64, 1), ir.Constant(I64, 0)
        nxt = b.add(block_phi, one)
        carry = b.icmp_unsigned("==", nxt, lane_blocks)
        block_phi.add_incoming(b.select(carry, zero, nxt), b.block)
        for p, (_, size) in reversed(list(zip(digit_phis, outer))):
            nxt = b.add(p, b.zext(carry, I64))
            carry = b.icmp_unsigned("==", nxt, size)
            p.add_incoming(b.select(carry, zero, nxt), b.block)
        w_next = b.add(w, one)
        w.add_incoming(w_next, b.block)
        b.cbranch(b.icmp_signed("<", w_next, end), header, after)
        b.position_at_end(after)

    def _lane_loop(
        self,
        b: ir.IRBuilder,
        lo: ir.Value,
        hi: ir.Value,
        body: Callable[[LanePoint], None],
        flush: Callable[[], None] | None = None,
    ) -> None:
        """body at lo, lo + lanes, … (full vectors), then once with a mask for the rest
        of [lo, hi); with `flush`, also after every BLOCK vectors and at the end."""
        count = self.lanes.count
        var = self.lanes.var
        full = b.add(lo, b.mul(b.udiv(b.sub(hi, lo), ir.Constant(I64, count)), ir.Constant(I64, count)))
        if flush is None:
            with counted_loop(b, full, f"{var}.v", lo, count) as i:
                body(LanePoint(var, count, i, None))
        else:
            with counted_loop(b, full, f"{var}.block", lo, count * BLOCK) as block:
                block_end = _min(b, b.add(block, ir.Constant(I64, count * BLOCK)), full)
                with counted_loop(b, block_end, f"{var}.v", block, count) as i:
                    body(LanePoint(var, count, i, None))
                flush()
        partial = b.append_basic_block(f"{var}.tail")
        after = b.append_basic_block(f"{var}.done")
        b.cbranch(b.icmp_signed("<", full, hi), partial, after)
        b.position_at_end(partial)
        positions = b.add(splat(b, full, count), iota(count))
        body(LanePoint(var, count, full, b.icmp_signed("<", positions, splat(b, hi, count))))
        if flush is not None:
            flush()
        b.branch(after)
        b.position_at_end(after)

    def _over_rows(
        self,
        b: ir.IRBuilder,
        env: Env,
        point: LanePoint | None,
        body: Callable[[Env, LanePoint | None], None],
        flush: Callable[[], None] | None = None,
    ) -> None:
        """body at every point of R: with lanes over the last reduction variable, as a
        lane loop; else scalar loops (lanes, if any, are pointwise points)."""
        sizes = self.reduction_sizes
        with ExitStack() as loops:
            rs = {f"r{i}": loops.enter_context(counted_loop(b, n, f"r{i}")) for i, n in enumerate(sizes[:-1])}
            last = f"r{len(sizes) - 1}"
            if self.lanes.over_reduction:
                self._lane_loop(
                    b, ir.Constant(I64, 0), sizes[-1],
                    lambda p: body({**env, **rs, last: p.base}, p),
                    flush,
                )
            elif flush is None:
                with counted_loop(b, sizes[-1], last) as r:
                    body({**env, **rs, last: r}, point)
            else:
                with counted_loop(b, sizes[-1], f"{last}.block", step=BLOCK) as block:
                    block_end = _min(b, b.add(block, ir.Constant(I64, BLOCK)), sizes[-1])
                    with counted_loop(b, block_end, last, block) as r:
                        body({**env, **rs, last: r}, point)
                    flush()

    # ------------------------------------------------------------ tiles
    def _tiled_item(self, b: ir.IRBuilder, env: Env, lo: ir.Value, hi: ir.Value, size: ir.Value) -> None:
        """One tile row of a tiled kernel (llvm_plan.choose_tile): `across` is bound to
        its tile number, the lanes run over [lo, hi). Tiles are whole: the last one of a
        row or of the lanes starts `count` points before the end, overlapping the one
        before (a pointwise kernel writes the same values again; its outputs are never
        read). Where a side has fewer than `count` points, the points run untiled."""
        n = ir.Constant(I64, self.lanes.count)
        across = self.lanes.across
        start = b.mul(env[across], n)
        fits = b.and_(b.icmp_signed(">=", size, n), b.icmp_signed(">=", hi, n))
        tiled, untiled, after = (b.append_basic_block(f"{across}.{name}") for name in ("tiled", "untiled", "done"))
        b.cbranch(fits, tiled, untiled)
        b.position_at_end(tiled)
        first = _min(b, start, b.sub(size, n))
        with counted_loop(b, hi, f"{self.lanes.var}.tile", lo, self.lanes.count) as base:
            self._emit_tile(b, {**env, across: first}, _min(b, base, b.sub(hi, n)))
        b.branch(after)
        b.position_at_end(untiled)
        with counted_loop(b, _min(b, b.add(start, n), size), across, start) as x:
            self._lane_loop(b, lo, hi, lambda point: self._emit_point(b, {**env, across: x, point.var: point.base}, point))
        b.branch(after)
        b.position_at_end(after)

    def _emit_tile(self, b: ir.IRBuilder, env: Env, base: ir.Value) -> None:
        """The body on the tile of `count` points of the lanes from `base` and of
        `across` from env's value: accesses contiguous along `across` read or write
        `count` rows of the tile, transposed in registers; the body runs once per step
        of `across` with vectors over the lanes."""
        n = self.lanes.count
        var, across = self.lanes.var, self.lanes.across
        transposed = [op for op in self.plan.ops if isinstance(op, (LoadOp, StoreOp)) and transposed_in_tile(op, self.lanes)]

        def row_address(op: LoadOp | StoreOp, i: int, dtype: str) -> ir.Value:
            row_env = {**env, var: b.add(base, ir.Constant(I64, i))}
            return b.gep(self.buffers[op.buffer], [lower_index(b, op.index_expr, row_env)], inbounds=True, source_etype=memory_type(dtype))

        columns: dict[Operation, list[ir.Value]] = {}
        for op in transposed:
            if isinstance(op, LoadOp):
                dtype = dtype_of(op, op.result.type)
                vtype = ir.VectorType(memory_type(dtype), n)
                rows = [b.load(row_address(op, i, dtype), typ=vtype, align=itemsize(dtype)) for i in range(n)]
                columns[op] = transpose(b, rows)
            else:
                columns[op] = []
        point = LanePoint(var, n, base, None)
        for k in range(n):
            step_env = {**env, var: base, across: b.add(env[across], ir.Constant(I64, k))}
            values: Values = {}
            for op in self.plan.scalar_ops[0]:
                if isinstance(op, LoadOp) and op in columns:
                    values[op.result] = load_value(b, columns[op][k], dtype_of(op, op.result.type))
                elif isinstance(op, StoreOp) and op in columns:
                    dtype = dtype_of(op, op.value.type)
                    columns[op].append(store_value(b, splat(b, values[op.value], n), dtype))
                else:
                    self._emit_op(b, op, step_env, point, values)
        for op in transposed:
            if isinstance(op, StoreOp):
                dtype = dtype_of(op, op.value.type)
                for i, row in enumerate(transpose(b, columns[op])):
                    b.store(row, row_address(op, i, dtype), align=itemsize(dtype))

    # ------------------------------------------------------------ one point
    def _emit_point(self, b: ir.IRBuilder, env: Env, point: LanePoint | None) -> None:
        """The body at one point of the pointwise domain (or `lanes` of them), stage by
        stage; loops over R in between."""
        values: Values = {}
        loops = iter(self.loops)
        for stage in range(self.plan.num_stages):
            if stage:
                self._emit_reductions(b, env, point, values, next(loops), self.plan.reductions[stage])
            for op in self.plan.scalar_ops[stage]:
                self._emit_op(b, op, env, point, values)
        if self.plan.row_stores:
            loop = next(loops)
            transposing = [st for st in self.plan.row_stores if point is not None and self._transposes(st)]
            if transposing:
                self._store_rows_transposed(b, env, point, values, loop, transposing)
                return

            def store_rows(row_env: Env, row_point: LanePoint | None) -> None:
                rows = self._emit_row_ops(b, loop, row_env, row_point, values)
                for store in self.plan.row_stores:
                    self._emit_op(b, store, row_env, row_point, rows)

            self._over_rows(b, env, point, store_rows)

    # ------------------------------------------------------------ transposed row stores
    def _transposes(self, store: StoreOp) -> bool:
        """Whether a row store, with lanes over pointwise points, writes consecutive
        elements along the last reduction variable and scattered ones along the lanes
        (a softmax of a transposed input writing its rows): such a store goes through a
        tile, transposed in L1, so that memory sees whole rows."""
        if self.lanes.over_reduction or not self.lanes.var:
            return False
        along_lanes = stride_along(store.index.data, self.lanes.var)
        along_row = stride_along(store.index.data, f"r{len(self.reduction_sizes) - 1}")
        return along_row == 1 and along_lanes not in (0, 1)

    def _store_rows_transposed(
        self, b: ir.IRBuilder, env: Env, point: LanePoint, values: Values, loop: RowLoop, transposing: list[StoreOp]
    ) -> None:
        """The row-store loop in tiles of `depth` steps of the last reduction variable:
        each step writes its vector (one value per lane) of a transposing store into a
        tile [depth][lanes]; then, per lane, `depth` consecutive elements are gathered
        from the tile and stored at once. Leftover steps store lane by lane."""
        sizes = self.reduction_sizes
        last = f"r{len(sizes) - 1}"
        lanes = point.count
        tiles = {}
        depths = {}
        for st in transposing:
            dtype = dtype_of(st, st.value.type)
            depths[st] = max(64 // itemsize(dtype), 1)
        depth = max(depths.values())
        for st in transposing:
            dtype = dtype_of(st, st.value.type)
            tile = self.allocas.alloca(ir.ArrayType(memory_type(dtype), depth * lanes))
            tile.type = PTR  # an opaque pointer, as buffers are (llvmlite types allocas)
            tiles[st] = tile
        others = [st for st in self.plan.row_stores if st not in tiles]
        full = b.mul(b.udiv(sizes[-1], ir.Constant(I64, depth)), ir.Constant(I64, depth))
        with ExitStack() as outer:
            rs = {f"r{i}": outer.enter_context(counted_loop(b, n, f"r{i}")) for i, n in enumerate(sizes[:-1])}
            with counted_loop(b, full, f"{last}.tile", step=depth) as start:
                with counted_loop(b, ir.Constant(I64, depth), f"{last}.step") as k:
                    row_env = {**env, **rs, last: b.add(start, k)}
                    rows = self._emit_row_ops(b, loop, row_env, point, values)
                    for st in others:
                        self._emit_op(b, st, row_env, point, rows)
                    for st, tile in tiles.items():
                        dtype = dtype_of(st, st.value.type)
                        vector = store_value(b, splat(b, rows[st.value], lanes), dtype)
                        slot = b.gep(tile, [b.mul(k, ir.Constant(I64, lanes))], inbounds=True, source_etype=memory_type(dtype))
                        b.store(vector, slot, align=itemsize(dtype))
                for st, tile in tiles.items():
                    self._flush_tile(b, st, tile, depth, {**env, **rs, last: start}, point)
            with counted_loop(b, sizes[-1], last, full) as r:
                row_env = {**env, **rs, last: r}
                rows = self._emit_row_ops(b, loop, row_env, point, values)
                for st in self.plan.row_stores:
                    self._emit_op(b, st, row_env, point, rows)

    def _flush_tile(self, b: ir.IRBuilder, st: StoreOp, tile: ir.Value, depth: int, env: Env, point: LanePoint) -> None:
        """Lane i's `depth` elements of the tile (a column of it) stored as one vector at
        the store's index for lane i and the tile's first step."""
        dtype = dtype_of(st, st.value.type)
        etype, align = memory_type(dtype), itemsize(dtype)
        lanes = point.count
        vtype = ir.VectorType(etype, depth)
        on = ir.Constant(ir.VectorType(I1, depth), [1] * depth)
        gather = intrinsic(b.module, "masked.gather", vtype, [ir.VectorType(PTR, depth), I32, on.type, vtype], [vtype, ir.VectorType(PTR, depth)])
        store = intrinsic(b.module, "masked.store", ir.VoidType(), [vtype, PTR, I32, on.type], [vtype, PTR])
        buffer = self.buffers[st.buffer]
        for i in range(lanes):
            column = vector_gep(b, tile, ir.Constant(ir.VectorType(I64, depth), [i + k * lanes for k in range(depth)]), etype)
            values = b.call(gather, [column, ir.Constant(I32, align), on, ir.Constant(vtype, None)])
            lane_env = {**env, point.var: b.add(point.base, ir.Constant(I64, i))}
            address = b.gep(buffer, [lower_index(b, st.index_expr, lane_env)], inbounds=True, source_etype=etype)
            if point.mask is None:
                b.store(values, address, align=align)
            else:
                bit = b.extract_element(point.mask, ir.Constant(I32, i))
                b.call(store, [values, address, ir.Constant(I32, align), splat(b, bit, depth)])


    def _emit_row_ops(self, b: ir.IRBuilder, loop: RowLoop, env: Env, point: LanePoint | None, values: Values) -> Values:
        """The row ops of one loop at one point of R: saved rows read back, the ops
        run (stores included), rows for later loops saved; returns the rows."""
        rows = ChainMap({}, values)
        for v in loop.restores:
            rows[v] = self._scratch_access(b, v, env, point)
        for op in loop.ops:
            self._emit_op(b, op, env, point, rows)
        for v in loop.saves:
            self._scratch_access(b, v, env, point, rows[v])
        return rows

    def _emit_reductions(
        self, b: ir.IRBuilder, env: Env, point: LanePoint | None, values: Values, loop: RowLoop, reductions: list[ReduceOp]
    ) -> None:
        """One loop over R accumulating `reductions`; their results join `values`."""
        across = self.lanes.over_reduction
        lanes = self.lanes.count if self.lanes.var else None
        accumulators = [Accumulator(red, self.allocas, lanes) for red in reductions]
        for acc in accumulators:
            acc.reset(b)

        def accumulate(row_env: Env, row_point: LanePoint | None) -> None:
            rows = self._emit_row_ops(b, loop, row_env, row_point, values)
            for acc in accumulators:
                acc.add(b, rows[acc.op.value], row_point.mask if across else None)

        blocked = [acc for acc in accumulators if acc.outer_dtype]

        def flush() -> None:
            for acc in blocked:
                acc.flush(b)

        self._over_rows(b, env, point, accumulate, flush if blocked else None)
        for acc in accumulators:
            values[acc.op.result] = acc.result(b, across)

    # ------------------------------------------------------------ scratch rows
    def _scratch_type(self, v: SSAValue) -> ir.Type:
        dtype = dtype_of(v.owner, v.type)
        lanes = self.lanes.count if self.lanes.var else None
        return with_lanes(memory_type(dtype), lanes)

    def _allocate_scratch(self, b: ir.IRBuilder) -> ir.Value | None:
        """One heap block for every saved row value (freed by _free_scratch): a row of R
        points (times the lanes when lanes are pointwise points), one vector of
        padding so that the partial last vector is read and written whole."""
        saved = [v for loop in self.loops for v in loop.saves]
        if not saved:
            return None
        points = ir.Constant(I64, 1)
        for n in self.reduction_sizes:
            points = b.mul(points, n)
        count = self.lanes.count
        per_point = count if self.lanes.var and not self.lanes.over_reduction else 1
        slots = b.add(b.mul(points, ir.Constant(I64, per_point)), ir.Constant(I64, count))
        offset = ir.Constant(I64, 0)
        offsets = []
        for v in saved:
            offsets.append(offset)
            size = itemsize(dtype_of(v.owner, v.type))
            offset = b.add(offset, b.mul(slots, ir.Constant(I64, (size + 7) // 8 * 8)))
        block = b.call(_libc(b.module, "malloc"), [offset])
        self.scratch = {
            v: b.gep(block, [o], inbounds=True, source_etype=ir.IntType(8)) for v, o in zip(saved, offsets)
        }
        return block

    def _scratch_access(self, b: ir.IRBuilder, v: SSAValue, env: Env, point: LanePoint | None, value: ir.Value | None = None):
        """Reads (value None) or writes row value v at the current point of R."""
        dtype = dtype_of(v.owner, v.type)
        flat = ir.Constant(I64, 0)
        for i, n in enumerate(self.reduction_sizes):
            flat = b.add(b.mul(flat, n), env[f"r{i}"])
        if self.lanes.var and not self.lanes.over_reduction:
            flat = b.mul(flat, ir.Constant(I64, self.lanes.count))
        t = self._scratch_type(v)
        element = memory_type(dtype)
        address = b.gep(self.scratch[v], [flat], inbounds=True, source_etype=element)
        if value is None:
            return load_value(b, b.load(address, typ=t, align=itemsize(dtype)), dtype)
        if lanes_of(t):
            value = splat(b, value, lanes_of(t))
        b.store(store_value(b, value, dtype), address, align=itemsize(dtype))
        return None

    # ------------------------------------------------------------ ops
    def _emit_op(self, b: ir.IRBuilder, op: Operation, env: Env, point: LanePoint | None, values: Values) -> None:
        if isinstance(op, LoadOp):
            if op.values:  # a data-dependent index names these values
                env = {**env, **{name: values[v] for name, v in op.value_names.items()}}
            values[op.result] = self._load(b, op, env, point)
        elif isinstance(op, StoreOp):
            self._store(b, op, env, point, values[op.value])
        elif isinstance(op, IndexOp):
            index = self._lane_index(b, op.index_expr, env, point)
            values[op.result] = convert(b, index, "i64", dtype_of(op, op.result.type))
        elif isinstance(op, arith.ConstantOp):
            values[op.result] = _constant(op)
        elif isinstance(op, PhiloxOp):
            values[op.result] = emit_philox(b, values[op.seed], values[op.counter], op.word_index)
        elif isinstance(op, ElementwiseOp):
            args = [values[a] for a in op.args]
            name = op.name.removeprefix("prim.")
            dtype = dtype_of(op, op.args[0].type)
            if _normalizes_by_row_sum(op, dtype, self.plan.rows):
                # x / sum over a row, as eager's softmax computes it: x · (1 / sum), the
                # reciprocal once per row (LICM hoists it), a multiply per element (a
                # vector division costs 6 cycles on x86). Within 1 ulp of x / sum.
                one = constant(dtype, 1.0)
                args = [args[0], emit_elementwise(b, "div", dtype, [one, args[1]])]
                name = "mul"
            if contracts(op):  # a multiply-add inside one aten op (passes/fusion/contraction.py)
                values[op.result] = emit_contractible(b, name, args)
            else:
                values[op.result] = emit_elementwise(b, name, dtype, args)
        elif isinstance(op, WhereOp):
            values[op.result] = b.select(*unify(b, [values[op.cond], values[op.a], values[op.b]]))
        elif isinstance(op, ConvertElementTypeOp):
            src = dtype_of(op, op.x.type)
            values[op.result] = convert(b, values[op.x], src, dtype_of(op, op.result.type))
        elif isinstance(op, CheckIndexOp):
            mask = point.mask if point is not None else None
            values[op.result] = self.checks.check(b, op, values[op.index], values[op.size], mask)
        else:
            raise CodegenError(f"{op.name} is not supported by the LLVM CPU code generator")

    def _lane_index(self, b: ir.IRBuilder, expr: sympy.Expr, env: Env, point: LanePoint | None) -> ir.Value:
        """expr as an i64, or a vector of one i64 per lane if it names the lane variable."""
        if point is None or sym(point.var) not in expr.free_symbols:
            return lower_index(b, expr, env)
        lane_values = b.add(splat(b, point.base, point.count), iota(point.count))
        return lower_index(b, expr, {**env, point.var: lane_values})

    def _access(self, b: ir.IRBuilder, op: LoadOp | StoreOp, env: Env, point: LanePoint | None, dtype: str):
        """How op reaches memory here: ("scalar", ptr), ("vector", ptr) for consecutive
        elements, or ("gather", <lanes x ptr>)."""
        buffer = self.buffers[op.buffer]
        etype = memory_type(dtype)
        step = None if point is None else stride_along(op.index.data, point.var)
        if isinstance(op, LoadOp) and any(lanes_of(env[name]) for name in op.value_names):
            step = None  # the index values differ between lanes: a gather
        if point is None or step == 0:
            return "scalar", b.gep(buffer, [lower_index(b, op.index_expr, env)], inbounds=True, source_etype=etype)
        if step is not None:
            first = lower_index(b, op.index_expr, env)  # env binds the lane variable to the first lane
            if step == 1:
                return "vector", b.gep(buffer, [first], inbounds=True, source_etype=etype)
            stride = lower_index(b, step, env)
            offsets = b.mul(splat(b, stride, point.count), iota(point.count))
            index = b.add(splat(b, first, point.count), offsets)
        else:
            index = self._lane_index(b, op.index_expr, env, point)
        return "gather", vector_gep(b, buffer, index, etype)

    def _load(self, b: ir.IRBuilder, op: LoadOp, env: Env, point: LanePoint | None) -> ir.Value:
        dtype = dtype_of(op, op.result.type)
        etype, align = memory_type(dtype), itemsize(dtype)
        kind, address = self._access(b, op, env, point, dtype)
        if kind == "scalar":
            loaded = b.load(address, typ=etype, align=align)
        else:
            vtype = ir.VectorType(etype, point.count)
            mask = point.mask if point.mask is not None else ir.Constant(ir.VectorType(I1, point.count), [1] * point.count)
            if kind == "vector" and point.mask is None:
                loaded = b.load(address, typ=vtype, align=align)
            else:
                name = "masked.load" if kind == "vector" else "masked.gather"
                fn = intrinsic(b.module, name, vtype, [address.type, I32, mask.type, vtype], [vtype, address.type])
                loaded = b.call(fn, [address, ir.Constant(I32, align), mask, ir.Constant(vtype, None)])
        return load_value(b, loaded, dtype)

    def _store(self, b: ir.IRBuilder, op: StoreOp, env: Env, point: LanePoint | None, value: ir.Value) -> None:
        dtype = dtype_of(op, op.value.type)
        align = itemsize(dtype)
        kind, address = self._access(b, op, env, point, dtype)
        if kind == "scalar":
            if lanes_of(value):  # every lane writes the same element: they agree
                value = b.extract_element(value, ir.Constant(I32, 0))
            b.store(store_value(b, value, dtype), address, align=align)
            return
        stored = store_value(b, splat(b, value, point.count), dtype)
        if kind == "vector" and point.mask is None:
            b.store(stored, address, align=align)
            return
        mask = point.mask if point.mask is not None else ir.Constant(ir.VectorType(I1, point.count), [1] * point.count)
        name = "masked.store" if kind == "vector" else "masked.scatter"
        fn = intrinsic(b.module, name, ir.VoidType(), [stored.type, address.type, I32, mask.type], [stored.type, address.type])
        b.call(fn, [stored, address, ir.Constant(I32, align), mask])


def _normalizes_by_row_sum(op: ElementwiseOp, dtype: str, rows: set[SSAValue]) -> bool:
    """A float division of a row by the sum over that row: softmax's last step."""
    divisor = op.args[1].owner if op.name == "prim.div" else None
    return (
        isinstance(divisor, ReduceOp)
        and divisor.kind.data == "sum"
        and dtype in ("f32", "f64", "f16", "bf16")
        and op.args[0] in rows
    )


def _libc(module: ir.Module, name: str) -> ir.Function:
    """malloc or free (resolved by the JIT linker, codegen/llvm_jit.py)."""
    fn = module.globals.get(name)
    if fn is None:
        fnty = ir.FunctionType(PTR, [I64]) if name == "malloc" else ir.FunctionType(ir.VoidType(), [PTR])
        fn = ir.Function(module, fnty, name)
    return fn


def _constant(op: arith.ConstantOp) -> ir.Constant:
    attr = op.value
    if not isinstance(attr, (FloatAttr, IntegerAttr)):
        raise CodegenError(f"arith.constant {attr} is not supported by the LLVM CPU code generator (scalars only)")
    return constant(dtype_of(op, op.result.type), attr.value.data)


