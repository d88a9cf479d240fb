"""strata's thread pool for CPU kernels, written in LLVM IR: no thread ever waits for one
the OS has not scheduled.

An OpenMP parallel region (what eager PyTorch and Inductor's C++ kernels use) ends at
a barrier that every thread of the team must reach: on a machine whose cores are shared
with other processes, a worker the scheduler runs a few milliseconds late holds up the
whole region, for a kernel whose work takes a fraction of that. Here the caller never
waits for a worker that has not started: a kernel's work items are cut into shares that
threads take from a counter, the caller takes shares too, and it waits only for shares
other threads have already taken. A worker that wakes up late finds none left and goes
back to sleep.

The protocol, with sequentially consistent atomics throughout:

- `strata.pool.run(task, context, items, share, team)`: the caller installs a job
  (on its stack) in `current` with a compare-and-swap (if another thread's job is
  there, it runs its own serially), bumps `generation` and wakes the workers (futex),
  takes shares until none is left, clears `current`, then spins until `refs` is 0.
- a worker sleeps on `generation` (futex, after a short spin); woken, it increments
  `refs` *before* reading `current`, so that a caller that has cleared `current` and
  sees `refs` at 0 knows no worker can still reach its job; it takes shares of the job
  if its index is below the job's team size, then decrements `refs`.

Workers (cores - 1 of them, as native threads) start on first use. The team size of a
call is torch's (`omp_get_max_threads()`, which `torch.set_num_threads` sets). The pool
is compiled once per process, like a kernel, and its functions are handed to the JIT
linker by address; kernels call `strata.pool.run`. Linux only (futex); elsewhere kernels
use the OpenMP runtime (codegen/llvm_parallel.py).
"""

from __future__ import annotations

import ctypes
import functools
import os
import platform
import sys
import time

import llvmlite.binding as llvm
from llvmlite import ir

from strata.codegen.llvm_lanes import I32, I64, PTR

VOID = ir.VoidType()
RUN = "strata.pool.run"
_SYS_FUTEX = {"x86_64": 202, "aarch64": 98}
_FUTEX_WAIT, _FUTEX_WAKE = 128, 129  # the _PRIVATE variants
# Polls of `generation` before a worker sleeps: a few microseconds, so that back-to-back
# kernels find it awake, but no longer: a spinning worker takes the core from OpenMP
# threads (MKL, oneDNN) that eager ops and library calls run on. (STRATA_POOL_SPINS sets
# it, for measuring: 200 and 20000 were alike on the CPU suite, docs/performance-history.md.)
_SPINS = int(os.environ.get("STRATA_POOL_SPINS", "200"))
JOB = ir.LiteralStructType([PTR, PTR, I64, I64, I64, I32])  # task, context, items, share, next, team
TASK = ir.FunctionType(VOID, [PTR, I64, I64])  # task(context, start, end)


def _global(module: ir.Module, name: str, t: ir.Type, init) -> ir.GlobalVariable:
    g = ir.GlobalVariable(module, t, name)
    g.linkage = "internal"
    g.initializer = ir.Constant(t, init)
    return g


def _libc(module: ir.Module, name: str, fnty: ir.FunctionType) -> ir.Function:
    return module.globals.get(name) or ir.Function(module, fnty, name)


def _field(b: ir.IRBuilder, job: ir.Value, i: int) -> ir.Value:
    return b.gep(job, [ir.Constant(I32, 0), ir.Constant(I32, i)], inbounds=True, source_etype=JOB)


def _pause(b: ir.IRBuilder) -> None:
    if platform.machine() in ("x86_64", "AMD64"):
        fn = b.module.globals.get("llvm.x86.sse2.pause") or ir.Function(b.module, ir.FunctionType(VOID, []), "llvm.x86.sse2.pause")
        b.call(fn, [])


def build_pool_module(futex: int, openmp: bool) -> ir.Module:
    m = ir.Module(name="strata.pool")
    current = _global(m, "strata.pool.current", I64, 0)  # the job's address, 0 for none
    use_openmp = _global(m, MODE, I32, 0)  # 1: run jobs on torch's OpenMP team instead
    use_openmp.linkage = ""  # Python sets it (adapt)
    refs = _global(m, "strata.pool.refs", I64, 0)
    generation = _global(m, "strata.pool.generation", I32, 0)
    started = _global(m, "strata.pool.workers", I32, 0)
    syscall = _libc(m, "syscall", ir.FunctionType(I64, [I64], var_arg=True))
    pthread_create = _libc(m, "pthread_create", ir.FunctionType(I32, [PTR, PTR, PTR, PTR]))
    sched_yield = _libc(m, "sched_yield", ir.FunctionType(I32, []))

    # take(job): shares of the job until none is left.
    take = ir.Function(m, ir.FunctionType(VOID, [PTR]), "strata.pool.take")
    take.linkage = "internal"
    b = ir.IRBuilder(take.append_basic_block("entry"))
    (job,) = take.args
    task = b.load(_field(b, job, 0), typ=TASK.as_pointer())  # typed: llvmlite calls through it
    context = b.load(_field(b, job, 1), typ=PTR)
    items = b.load(_field(b, job, 2), typ=I64)
    share = b.load(_field(b, job, 3), typ=I64)
    loop, work, done = (take.append_basic_block(n) for n in ("loop", "work", "done"))
    b.branch(loop)
    b.position_at_end(loop)
    start = b.atomic_rmw("add", _field(b, job, 4), share, "monotonic")
    b.cbranch(b.icmp_unsigned("<", start, items), work, done)
    b.position_at_end(work)
    end = b.add(start, share)
    end = b.select(b.icmp_unsigned("<", end, items), end, items)
    b.call(task, [context, start, end])
    b.branch(loop)
    b.position_at_end(done)
    b.ret_void()

    # worker(index): sleeps on `generation`, joins jobs whose team includes it.
    worker = ir.Function(m, ir.FunctionType(PTR, [PTR]), "strata.pool.worker")
    worker.linkage = "internal"
    entry, wait, spin, sleep, woken, join, leave = (
        worker.append_basic_block(n) for n in ("entry", "wait", "spin", "sleep", "woken", "join", "leave")
    )
    b = ir.IRBuilder(entry)
    index = b.trunc(b.ptrtoint(worker.args[0], I64), I32)
    first = b.load_atomic(generation, "seq_cst", 4, typ=I32)
    b.branch(wait)
    b.position_at_end(wait)
    seen = b.phi(I32, "seen")
    seen.add_incoming(first, entry)
    b.branch(spin)
    b.position_at_end(spin)
    polls = b.phi(I32, "polls")
    polls.add_incoming(ir.Constant(I32, 0), wait)
    now = b.load_atomic(generation, "seq_cst", 4, typ=I32)
    changed = b.icmp_unsigned("!=", now, seen)
    spinning = b.append_basic_block("spinning")
    b.cbranch(changed, woken, spinning)
    b.position_at_end(spinning)
    _pause(b)
    more = b.add(polls, ir.Constant(I32, 1))
    polls.add_incoming(more, spinning)
    b.cbranch(b.icmp_unsigned("<", more, ir.Constant(I32, _SPINS)), spin, sleep)
    b.position_at_end(sleep)
    b.call(syscall, [ir.Constant(I64, futex), generation, ir.Constant(I64, _FUTEX_WAIT), b.zext(seen, I64), ir.Constant(PTR, None)])
    seen.add_incoming(seen, sleep)
    b.branch(wait)
    b.position_at_end(woken)
    b.atomic_rmw("add", refs, ir.Constant(I64, 1), "seq_cst")
    address = b.load_atomic(current, "seq_cst", 8, typ=I64)
    job = b.inttoptr(address, PTR)
    has_job = b.icmp_unsigned("!=", address, ir.Constant(I64, 0))
    check = b.append_basic_block("check")
    b.cbranch(has_job, check, leave)
    b.position_at_end(check)
    team = b.load(_field(b, job, 5), typ=I32)
    b.cbranch(b.icmp_unsigned("<", b.add(index, ir.Constant(I32, 1)), team), join, leave)
    b.position_at_end(join)
    b.call(take, [job])
    b.branch(leave)
    b.position_at_end(leave)
    b.atomic_rmw("sub", refs, ir.Constant(I64, 1), "seq_cst")
    seen.add_incoming(now, leave)
    b.branch(wait)

    # start(n): n more workers (called once, from Python).
    start_fn = ir.Function(m, ir.FunctionType(I32, [I32]), "strata.pool.start")
    entry, loop, body, done = (start_fn.append_basic_block(n) for n in ("entry", "loop", "body", "done"))
    b = ir.IRBuilder(entry)
    handle = b.alloca(I64)
    have = b.load(started, typ=I32)
    b.branch(loop)
    b.position_at_end(loop)
    i = b.phi(I32, "i")
    i.add_incoming(have, entry)
    b.cbranch(b.icmp_unsigned("<", i, start_fn.args[0]), body, done)
    b.position_at_end(body)
    arg = b.inttoptr(b.zext(i, I64), PTR)
    b.call(pthread_create, [handle, ir.Constant(PTR, None), worker, arg])
    nxt = b.add(i, ir.Constant(I32, 1))
    i.add_incoming(nxt, body)
    b.store(nxt, started)
    b.branch(loop)
    b.position_at_end(done)
    b.ret(b.load(started, typ=I32))

    # run(task, context, items, share, team): the caller's side.
    run = ir.Function(m, ir.FunctionType(VOID, [PTR, PTR, I64, I64, I32]), RUN)
    task, context, items, share, team = run.args
    entry, serial, shared, wait_loop, waiting, done = (
        run.append_basic_block(n) for n in ("entry", "serial", "shared", "wait", "waiting", "done")
    )
    b = ir.IRBuilder(entry)
    job = b.alloca(JOB)
    job.type = PTR
    if openmp:
        # On a quiet machine torch's OpenMP threads are awake (spinning after its own
        # ops) and a second pool would only compete with them: run the job on them.
        for k, v in enumerate((task, context, items, share, ir.Constant(I64, 0), team)):
            b.store(v, _field(b, job, k))
        on_team = b.append_basic_block("openmp")
        pooled = b.append_basic_block("pooled")
        wanted = b.icmp_unsigned("!=", b.load_atomic(use_openmp, "monotonic", 4, typ=I32), ir.Constant(I32, 0))
        b.cbranch(b.and_(wanted, b.icmp_unsigned(">", team, ir.Constant(I32, 1))), on_team, pooled)
        b.position_at_end(on_team)
        gomp = _libc(m, "GOMP_parallel", ir.FunctionType(VOID, [PTR, PTR, I32, I32]))
        b.call(gomp, [take, job, team, ir.Constant(I32, 0)])
        b.ret_void()
        b.position_at_end(pooled)
    workers = b.load(started, typ=I32)
    team = b.select(b.icmp_unsigned("<", team, b.add(workers, ir.Constant(I32, 1))), team, b.add(workers, ir.Constant(I32, 1)))
    for k, v in enumerate((task, context, items, share, ir.Constant(I64, 0), team)):
        b.store(v, _field(b, job, k))
    installed = b.cmpxchg(current, ir.Constant(I64, 0), b.ptrtoint(job, I64), "seq_cst", "seq_cst")
    ok = b.extract_value(installed, 1)
    solo = b.icmp_unsigned("<=", team, ir.Constant(I32, 1))
    b.cbranch(b.and_(ok, b.not_(solo)), shared, serial)
    b.position_at_end(serial)
    # Another job runs (or no worker is wanted): do it all here, then release `current`.
    b.call(take, [job])
    release = b.append_basic_block("release")
    b.cbranch(ok, release, done)
    b.position_at_end(release)
    b.store_atomic(ir.Constant(I64, 0), current, "seq_cst", 8)
    b.branch(done)
    b.position_at_end(shared)
    b.atomic_rmw("add", generation, ir.Constant(I32, 1), "seq_cst")
    b.call(syscall, [ir.Constant(I64, futex), generation, ir.Constant(I64, _FUTEX_WAKE), b.zext(b.sub(team, ir.Constant(I32, 1)), I64)])
    b.call(take, [job])
    b.store_atomic(ir.Constant(I64, 0), current, "seq_cst", 8)
    b.branch(wait_loop)
    b.position_at_end(wait_loop)
    spins = b.phi(I32, "spins")
    spins.add_incoming(ir.Constant(I32, 0), shared)
    busy = b.load_atomic(refs, "seq_cst", 8, typ=I64)
    b.cbranch(b.icmp_unsigned("==", busy, ir.Constant(I64, 0)), done, waiting)
    b.position_at_end(waiting)
    _pause(b)
    yield_now = b.icmp_unsigned(">", spins, ir.Constant(I32, 1000))
    with b.if_then(yield_now):
        b.call(sched_yield, [])
    spins.add_incoming(b.add(spins, ir.Constant(I32, 1)), b.block)
    b.branch(wait_loop)
    b.position_at_end(done)
    b.ret_void()
    return m


MODE = "strata.pool.openmp"


@functools.cache
def pool() -> bool:
    """Compiles and starts the pool (once per process); False where it cannot run, and
    kernels then use the OpenMP runtime."""
    futex = _SYS_FUTEX.get(platform.machine())
    if not sys.platform.startswith("linux") or futex is None:
        return False
    from strata.codegen import llvm_jit
    from strata.codegen.llvm_openmp import openmp_available

    openmp = openmp_available()
    start_pool(llvm_jit.object_code(str(build_pool_module(futex, openmp))), openmp)
    return True


def start_pool(object_code: bytes, openmp: bool) -> None:
    """Loads the pool's machine code, hands its `run` to the JIT linker for the kernels
    loaded after it, and starts its workers. A process that loads compiled kernels only
    (an ahead-of-time package) starts the pool from the code the package holds."""
    if "code" in _state:
        return
    from strata.codegen import llvm_jit

    llvm_jit.initialize()
    process = ctypes.CDLL(None)
    for name in ("syscall", "pthread_create", "sched_yield"):
        llvm.add_symbol(name, ctypes.cast(getattr(process, name), ctypes.c_void_p).value)
    code = llvm_jit.JitCode(object_code)
    _state["code"] = code  # the pool's code and threads live as long as the process
    llvm.add_symbol(RUN, code.address(RUN))
    start = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_int32)(code.address("strata.pool.start"))
    start(max(usable_cpus() - 1, 0))
    if openmp:
        _state["mode"] = ctypes.c_int32.from_address(code.global_address(MODE))
        adapt(force=True)


def pool_code() -> tuple[bytes, bool] | None:
    """The running pool's machine code and whether it uses OpenMP, None without a pool."""
    code = _state.get("code")
    return None if code is None else (code.code, "mode" in _state)


_state: dict = {}
ADAPT_EVERY_S = 1.0


def usable_cpus() -> int:
    """The cores this process may run on (taskset, a container's cpuset), not the host's."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # no affinity API on this OS
        return os.cpu_count() or 1


def adapt(force: bool = False) -> None:
    """Chooses, at most once a second, where jobs run: on torch's OpenMP team while the
    machine is quiet (its threads spin between torch's own ops: a second pool would only
    compete with them), on the pool's workers while other processes keep the cores busy
    (load average above cores + 0.5: an OpenMP region would then wait for a worker the OS
    runs late). STRATA_CPU_THREADS=pool or omp fixes the choice."""
    mode = _state.get("mode")
    if mode is None:
        return
    now = time.monotonic()
    if not force and now < _state.get("next", 0.0):
        return
    _state["next"] = now + ADAPT_EVERY_S
    wanted = os.environ.get("STRATA_CPU_THREADS", "auto")
    if wanted == "pool":
        mode.value = 0
    elif wanted == "omp":
        mode.value = 1
    else:
        busy = os.getloadavg()[0] > usable_cpus() + 0.5
        mode.value = 0 if busy else 1


def declare_run(module: ir.Module) -> ir.Function:
    return module.globals.get(RUN) or ir.Function(module, ir.FunctionType(VOID, [PTR, PTR, I64, I64, I32]), RUN)
