"""Kernels on all cores: the entry point every kernel gets, and the OpenMP way of
running it on several threads.

The entry point `<entry>(ptr %buffers, ptr %symbols)` sizes the domain, estimates the
kernel's work (points × a cost per point) and, past PARALLEL_WORK, takes torch's team
size (`omp_get_max_threads()`, which `torch.set_num_threads` sets) and hands the work
items to a runtime: strata's pool (codegen/llvm_pool.py, the default), or torch's own
OpenMP runtime (libgomp, loaded with torch; STRATA_CPU_THREADS=omp), through
`GOMP_parallel(fn, data, num_threads, 0)` as a C compiler emits it for
`#pragma omp parallel`. Either way the items are cut into about 8 shares per thread that
threads take from an atomic counter. OpenMP ends a region at a barrier every thread of
the team must reach, which on a machine shared with other processes waits for a worker
the OS schedules late; the pool does not (its docstring says how). ctypes releases the
GIL for the whole call, so the threads never wait on Python.
"""

from __future__ import annotations

from llvmlite import ir

from strata.codegen import llvm_pool
from strata.codegen.llvm_openmp import openmp_available  # noqa: F401  (its home before llvm_openmp)
from strata.codegen.llvm_bounds import check_ops, error_slots
from strata.codegen.llvm_index import lower_index
from strata.codegen.llvm_lanes import I32, I64, PTR
from strata.codegen.llvm_plan import VECTOR_MATH, BodyPlan, Lanes, stride_along, transposed_in_tile
from strata.dialects.kernel import FuncOp, LoadOp, StoreOp
from strata.dialects.types import sym

# A kernel runs on several threads when (points of its domain) × (its cost per point)
# reaches this, about 0.3 ms of work on one core; below it, forking and joining a team
# (tens of microseconds on this VM when the other core's threads are not spinning)
# costs more than it saves: 2^16 lost 3-10% on the CPU suite's models against 2^20
# (docs/performance-history.md).
PARALLEL_WORK = 1 << 20


def entry_point(func: FuncOp) -> str:
    """The symbol of the function Python calls (dotted, so never a libm name)."""
    return f"strata.kernel.{func.sym_name.data}"

_SYMBOLS = {
    "GOMP_parallel": ir.FunctionType(ir.VoidType(), [PTR, PTR, I32, I32]),
    "omp_get_thread_num": ir.FunctionType(I32, []),
    "omp_get_num_threads": ir.FunctionType(I32, []),
    "omp_get_max_threads": ir.FunctionType(I32, []),
}


def _declare(module: ir.Module, name: str) -> ir.Function:
    fn = module.globals.get(name)
    return fn if fn is not None else ir.Function(module, _SYMBOLS[name], name)


def max_threads(b: ir.IRBuilder) -> ir.Value:
    """The size of the team torch would use now (torch.get_num_threads()), as i64."""
    return b.zext(b.call(_declare(b.module, "omp_get_max_threads"), []), I64)


CHUNKS_PER_THREAD = 8  # shares a team splits its work into, taken first come, first served


def fork(b: ir.IRBuilder, chunk: ir.Function, buffers: ir.Value, symbols: ir.Value, items: ir.Value, lane_blocks: ir.Value, threads: ir.Value) -> None:
    """`chunk(buffers, symbols, start, end, lane_blocks)` on `threads` threads over the
    `items` work items: contiguous shares of about items / (8 × threads) items, each
    thread taking the next share from an atomic counter until none is left, so that a
    thread the OS runs slower (a shared machine) simply takes fewer shares."""
    module = b.module
    context_type = ir.LiteralStructType([PTR, PTR, I64, I64, I64, I64])
    outlined = _outlined(module, chunk, context_type)
    context = b.alloca(context_type)
    shares = b.mul(threads, ir.Constant(I64, CHUNKS_PER_THREAD))
    share = b.udiv(b.add(items, b.sub(shares, ir.Constant(I64, 1))), shares)
    for i, v in enumerate((buffers, symbols, items, lane_blocks, share, ir.Constant(I64, 0))):
        b.store(v, b.gep(context, [ir.Constant(I32, 0), ir.Constant(I32, i)], inbounds=True))
    b.call(_declare(module, "GOMP_parallel"), [outlined, context, b.trunc(threads, I32), ir.Constant(I32, 0)])


def _outlined(module: ir.Module, chunk: ir.Function, context_type: ir.Type) -> ir.Function:
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR]), chunk.name + ".omp")
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    entry, loop, work, done = (fn.append_basic_block(n) for n in ("entry", "take", "work", "done"))
    b = ir.IRBuilder(entry)
    (context,) = fn.args

    def field(i: int) -> ir.Value:
        return b.gep(context, [ir.Constant(I32, 0), ir.Constant(I32, i)], inbounds=True, source_etype=context_type)

    buffers, symbols, items, lane_blocks, share = (
        b.load(field(i), typ=t) for i, t in enumerate((PTR, PTR, I64, I64, I64))
    )
    counter = field(5)
    b.branch(loop)
    b.position_at_end(loop)
    start = b.atomic_rmw("add", counter, share, "monotonic")
    b.cbranch(b.icmp_unsigned("<", start, items), work, done)
    b.position_at_end(work)
    end = b.add(start, share)
    end = b.select(b.icmp_unsigned("<", end, items), end, items)
    b.call(chunk, [buffers, symbols, start, end, lane_blocks])
    b.branch(loop)
    b.position_at_end(done)
    b.ret_void()
    return fn


# ---------------------------------------------------------------- entry points
def define_chunk(func: FuncOp, module: ir.Module, impl: ir.Function) -> ir.Function:
    """`<entry>.chunk(ptr %buffers, ptr %symbols, i64 %start, i64 %end, i64 %lane_blocks)`."""
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, PTR, I64, I64, I64]), entry_point(func) + ".chunk")
    fn.linkage = "internal"
    fn.attributes.add("nounwind")
    fn.attributes.add("noinline")
    buffers, symbols, start, end, lane_blocks = fn.args
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    args = [_element(b, buffers, i, PTR) for i in range(len(func.block.args))]
    args += [_element(b, symbols, i, I64) for i in range(len(func.symbol_names))]
    errors = [error_slots(b, symbols, func)] if check_ops(func) else []  # llvm_bounds
    b.call(impl, [*args, start, end, lane_blocks, *errors])
    b.ret_void()
    return fn


GATHER_COST = 16  # a gather or scatter, in units of a contiguous access
# An access transposed in registers (llvm_plan.choose_tile): the NCHW-to-NHWC copy of
# [8,64,28,28] f32 took 0.058 ms on one thread, 0.033 ms on two (Inductor: 0.044 ms);
# at 12 it runs on two.
TRANSPOSE_COST = 12


def _cost_per_point(plan: BodyPlan, lanes: Lanes | None = None) -> int:
    """A rough cost of one point of the domain, in units of a load or a simple op. A
    load or store strided along pointwise lanes is a gather or scatter, one access per
    lane: counted as one, a layout change (NCHW to NHWC, 1.6 MB) stays on one thread at
    twice the time of torch's two-thread copy (docs/performance-history.md). In a tiled kernel
    (llvm_plan.choose_tile) an access transposed in registers counts TRANSPOSE_COST."""
    cost = 1
    for op in plan.ops:
        name = op.name.removeprefix("prim.")
        if lanes is not None and lanes.var and not lanes.over_reduction and isinstance(op, LoadOp | StoreOp):
            step = stride_along(op.index.data, lanes.var)
            cost += 1 if step is not None and step in (0, 1) else TRANSPOSE_COST if transposed_in_tile(op, lanes) else GATHER_COST
            continue
        cost += 8 if name in VECTOR_MATH or name in ("div", "sqrt", "rsqrt") else 1
    return max(cost // 4, 1)


def define_entry_point(func: FuncOp, plan: BodyPlan, lanes: Lanes, module: ir.Module, chunk: ir.Function, threads: str) -> None:
    """The entry point: the work items of the domain (and their lane blocks), serially
    or, for a kernel large enough, on `threads` ("pool": strata's own, codegen/llvm_pool.py;
    "omp": torch's OpenMP runtime; "none")."""
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, PTR]), entry_point(func))
    fn.attributes.add("nounwind")
    buffers, symbols = fn.args
    buffers.name, symbols.name = "buffers", "symbols"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    env = {name: _element(b, symbols, i, I64) for i, name in enumerate(func.symbol_names)}
    one = ir.Constant(I64, 1)
    lane_dim = int(lanes.var[1:]) if lanes.var and not lanes.over_reduction else None
    items = one
    points = one
    for i, d in enumerate(func.pointwise_dims):
        n = lower_index(b, sym(d), env)
        points = b.mul(points, n)
        if lanes.across == f"x{i}":  # a tiled variable: an item is a row of tiles
            n = b.udiv(b.add(n, ir.Constant(I64, lanes.count - 1)), ir.Constant(I64, lanes.count))
        if i != lane_dim:
            items = b.mul(items, n)
    for d in func.reduction_dims:
        points = b.mul(points, lower_index(b, sym(d), env))
    if threads == "none":
        b.call(chunk, [buffers, symbols, ir.Constant(I64, 0), items, one])
        b.ret_void()
        return

    big = b.icmp_unsigned(">=", b.mul(points, ir.Constant(I64, _cost_per_point(plan, lanes))), ir.Constant(I64, PARALLEL_WORK))
    team = b.select(big, max_threads(b) if openmp_available() else ir.Constant(I64, llvm_pool.usable_cpus()), one)
    lane_blocks = one
    if lane_dim is not None:
        # Fewer items than threads: cut the lane dim into blocks of whole vectors.
        size = lower_index(b, sym(func.pointwise_dims[lane_dim]), env)
        vectors = b.udiv(b.add(size, ir.Constant(I64, lanes.count - 1)), ir.Constant(I64, lanes.count))
        wanted = b.udiv(b.add(team, b.sub(items, one)), b.select(b.icmp_unsigned("==", items, ir.Constant(I64, 0)), one, items))
        split = _min(b, vectors, wanted)
        lane_blocks = b.select(b.icmp_unsigned("<", items, team), b.select(b.icmp_unsigned("<", split, one), one, split), one)
    work = b.mul(items, lane_blocks)
    team = _min(b, team, work)
    serial, parallel = fn.append_basic_block("serial"), fn.append_basic_block("parallel")
    b.cbranch(b.icmp_signed(">", team, one), parallel, serial)
    b.position_at_end(serial)
    b.call(chunk, [buffers, symbols, ir.Constant(I64, 0), work, lane_blocks])
    b.ret_void()
    b.position_at_end(parallel)
    if threads == "pool":
        _run_in_pool(b, chunk, buffers, symbols, work, lane_blocks, team)
    else:
        fork(b, chunk, buffers, symbols, work, lane_blocks, team)
    b.ret_void()


def _run_in_pool(b: ir.IRBuilder, chunk: ir.Function, buffers: ir.Value, symbols: ir.Value, items: ir.Value, lane_blocks: ir.Value, team: ir.Value) -> None:
    """chunk over [0, items) in strata's pool: shares of about items / (8 × team)."""
    module = b.module
    context_type = ir.LiteralStructType([PTR, PTR, I64])
    task = ir.Function(module, llvm_pool.TASK, chunk.name + ".task")
    task.linkage = "internal"
    task.attributes.add("nounwind")
    tb = ir.IRBuilder(task.append_basic_block("entry"))
    context, start, end = task.args
    fields = [
        tb.load(tb.gep(context, [ir.Constant(I32, 0), ir.Constant(I32, i)], inbounds=True, source_etype=context_type), typ=t)
        for i, t in enumerate((PTR, PTR, I64))
    ]
    tb.call(chunk, [fields[0], fields[1], start, end, fields[2]])
    tb.ret_void()
    context = b.alloca(context_type)
    for i, v in enumerate((buffers, symbols, lane_blocks)):
        b.store(v, b.gep(context, [ir.Constant(I32, 0), ir.Constant(I32, i)], inbounds=True))
    shares = b.mul(team, ir.Constant(I64, CHUNKS_PER_THREAD))
    share = b.udiv(b.add(items, b.sub(shares, ir.Constant(I64, 1))), shares)
    b.call(llvm_pool.declare_run(module), [task, context, items, share, b.trunc(team, I32)])


def _min(b: ir.IRBuilder, x: ir.Value, y: ir.Value) -> ir.Value:
    return b.select(b.icmp_signed("<", x, y), x, y)


def _element(b: ir.IRBuilder, array: ir.Value, i: int, t: ir.Type) -> ir.Value:
    return b.load(b.gep(array, [ir.Constant(I64, i)], source_etype=t), typ=t)
