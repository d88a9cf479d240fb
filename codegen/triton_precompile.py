"""Compiling a graph's Triton kernels side by side, before its first call.

Triton compiles a kernel at its first launch: a graph's kernels one after another, each
waiting on ptxas and, for each new argument signature, on a C compiler building the
launcher (both subprocesses). A cold compile of resnet18 spent about half of its
kernel time waiting on them (docs/performance-history.md). Here, once a graph's kernels are
generated, each kernel module's `launch` is run with every CallSite (and DirectLauncher)
replaced by a stand-in that asks Triton to compile (`JITFunction.warmup`) the kernel
that site would launch, and loads it into the site's launcher (CallSite.prepare),
without launching it; the modules are taken by a pool of threads, so the subprocesses
of several kernels run at once. The kernels land in Triton's caches, and the loaded
launchers in the sites, under the keys the real launches compute (the buffers are real
tensors of the right dtypes, 16-byte aligned as the graph's buffers are; the symbols
have the call's values), so the first launches find them. (Since the sites launch
through torch's static launcher, codegen/triton_static_launch.py, no C launcher is
built at all where it takes the kernel.)

Kernels of static sizes are compiled when the graph is built; kernels of symbolic sizes
(whose tile the sizes choose) at the start of the graph's first call, for that call's
sizes. In a warm compile (kernels read from strata's cache, binaries from Triton's) the
same path loads the binaries: as fast as one by one in a fresh process (resnet18: 2.0–
2.2 s either way); in the suite's warm-compile process, one by one was slower in the
one run that tried it (docs/performance-history.md). Anything that fails here
is left to the first launch, which compiles as before and raises what it raises.
STRATA_PRECOMPILE_THREADS sets the pool size (0: compile at first launch, as before).
"""

from __future__ import annotations

import contextlib
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from types import ModuleType
from typing import Any

import torch

from strata.codegen.triton_launch import CallSite, DirectLauncher

ENV_VAR = "STRATA_PRECOMPILE_THREADS"
log = logging.getLogger("strata.codegen")


class _Compiling:
    """A CallSite's stand-in during precompile: compiles and loads the kernel the site
    would launch with these arguments, launching nothing (CallSite.prepare)."""

    def __init__(self, site: CallSite):
        self.site = site

    def __call__(self, grid: tuple[int, ...], *args: Any) -> None:
        self.site.prepare(grid, args)


class _CompilingLauncher:
    """The same for a DirectLauncher (`kernel[grid](*args, **options)`, the launches of
    symbolic kernels, whose tile the sizes choose)."""

    def __init__(self, launcher: DirectLauncher):
        self.launcher = launcher

    def __getitem__(self, grid: tuple[int, ...]):
        return lambda *args, **options: self.launcher.site(options).prepare(grid, args)


def precompile_module(module: ModuleType, dtypes: list[torch.dtype], device: torch.device, symbols: list[int] = ()) -> None:
    """Compiles the kernels `module.launch(buffers, symbols)` runs for buffers of these
    dtypes and these symbol values."""
    stand_ins = {
        name: _Compiling(v) if isinstance(v, CallSite) else _CompilingLauncher(v)
        for name, v in vars(module).items()
        if isinstance(v, CallSite | DirectLauncher)
    }
    if not stand_ins:
        return
    real = {name: getattr(module, name) for name in stand_ins}
    with torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext():
        buffers = [torch.empty(1, dtype=d, device=device) for d in dtypes]
        try:
            for name, stand_in in stand_ins.items():
                setattr(module, name, stand_in)
            module.launch(buffers, list(symbols))
        finally:
            for name, v in real.items():
                setattr(module, name, v)


def prepare_launch(kernel: Any, grid: tuple[int, ...], args: tuple, options: dict[str, Any]) -> None:
    """Compiles what `kernel[grid](*args, **options)` would launch, launching nothing
    (a DirectLauncher's kernel; in Triton's interpreter there is nothing to compile)."""
    if isinstance(kernel, DirectLauncher):
        kernel.site(options).prepare(grid, args)


def prepare_tiles(module: ModuleType, tiles: list[Any], buffers: list[torch.Tensor], symbols: list[int]) -> None:
    """Compiles each tile's kernel of a matmul template module (`prepare_tile`) on a
    pool of threads, before the tuner times them; a tile that fails here fails again
    when timed, where the tuner skips it."""
    workers = min(threads(), len(tiles))
    if workers == 0 or not hasattr(module, "prepare_tile"):
        return
    _process_state()

    def one(tile: Any) -> None:
        try:
            module.prepare_tile(tile, buffers, symbols)
        except Exception as e:
            log.info("precompile of tile %s failed (%s: %s)", tile, type(e).__name__, e)

    with ThreadPoolExecutor(workers, thread_name_prefix="strata-precompile") as pool:
        list(pool.map(one, tiles))


def threads() -> int:
    wanted = os.environ.get(ENV_VAR)
    if wanted is not None:
        return max(int(wanted), 0)
    try:
        return min(len(os.sched_getaffinity(0)), 16)
    except AttributeError:
        return min(os.cpu_count() or 1, 16)


Job = tuple[ModuleType, list[torch.dtype], list[int]]  # a module, its buffers' dtypes, its symbols' values


def _process_state() -> None:
    """Triton's once-a-process state, made here before the threads start: each thread
    that found it missing would make it again (triton_key hashes every file of Triton's
    compiler; 16 threads doing so at once took a warm resnet18 compile 1.5 s longer)."""
    try:
        from triton.runtime.cache import triton_key
        from triton.runtime.driver import driver

        driver.active.get_current_target()
        triton_key()
    except Exception as e:  # another Triton: its threads make their own
        log.info("Triton's process state not made ahead (%s: %s)", type(e).__name__, e)


def precompile(jobs: list[Job], device: torch.device) -> int:
    """Compiles each job's kernels on a pool of threads; returns how many modules
    compiled without error (the others compile at their first launch)."""
    workers = min(threads(), len(jobs))
    if workers == 0:
        return 0
    if device.type == "cuda":
        _process_state()

    def one(job: Job) -> bool:
        module, dtypes, symbols = job
        try:
            precompile_module(module, dtypes, device, symbols)
            return True
        except Exception as e:  # left to the first launch
            log.info("precompile of %s failed (%s: %s); it compiles at its first launch", module.__name__, type(e).__name__, e)
            return False

    with ThreadPoolExecutor(workers, thread_name_prefix="strata-precompile") as pool:
        return sum(pool.map(one, jobs))
