"""Launching compiled Triton kernels with little Python in the way.

`kernel[grid](*args, **options)` on a `triton.JITFunction` binds every argument,
computes a specialization key, looks the compiled kernel up and only then launches:
tens of microseconds of Python per launch, which is most of the cost of a small
compiled graph. A generated module's launch statements each call one kernel with fixed
options, so a `CallSite` keeps, per argument specialization (each pointer 16-byte
aligned or not; each integer 1, a multiple of 16, 64-bit), the compiled kernel (Triton
compiles it without launching, `JITFunction.warmup`) loaded into a launcher, and
launches it directly: torch's static launcher where it can take the kernel
(codegen/triton_static_launch.py), else the C launcher Triton builds for the kernel's
signature, as TorchInductor does. `DirectLauncher` stands in for a JITFunction whose
options vary from call to call (tiles chosen at run time): one CallSite per options.

Anything unusual goes through Triton's own path: launch hooks set (a profiler), an
argument that is neither a tensor nor an int, Triton's interpreter, or a Triton whose
compiled kernels lack the launcher this code expects. STRATA_TRITON_DIRECT=0 turns the
direct path off.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch

from strata.codegen.triton_pdl import launch_options
from strata.codegen.triton_static_launch import static_entry

ENV_VAR = "STRATA_TRITON_DIRECT"


def _jit_function_type() -> type | None:
    try:
        from triton.runtime.jit import JITFunction

        return JITFunction
    except ImportError:  # pragma: no cover - triton is a dependency
        return None


def _hooks() -> Any:
    try:
        from triton import knobs

        return knobs.runtime
    except ImportError:  # pragma: no cover - an older triton
        return None


class CallSite:
    """`site(grid, *args)` launches kernel `fn` with fixed `options` (block sizes,
    num_warps, compiler options)."""

    def __init__(self, fn: Any, **options: Any):
        self.fn = fn
        self.given_options = options  # as the launcher wrote them (what a package keys on)
        self.options = options = launch_options(fn, options)
        jit = _jit_function_type()
        self.hooks = _hooks()
        self.direct = (
            jit is not None and isinstance(fn, jit) and self.hooks is not None and os.environ.get(ENV_VAR, "1") != "0"
        )
        self.constants = tuple(options[p.name] for p in fn.params if p.is_constexpr) if self.direct else ()
        # Which of the kernel's parameters the positional arguments are.
        self.runtime_params = [i for i, p in enumerate(fn.params) if not p.is_constexpr] if self.direct else []
        # Per specialization: torch's static launcher (8 fields, triton_static_launch)
        # or Triton's generated one (run, function, metadata).
        self.entries: dict[tuple, tuple] = {}
        self.device = self.stream = None

    def __call__(self, grid: tuple[int, ...], *args: Any) -> None:
        try:  # free in the hot path (Python 3.11 try blocks cost nothing until raised)
            # The hot path of every launch: one specialization key, one dict lookup, the
            # launcher; no other Python call (each costs about a microsecond).
            if self.direct:
                # specialization(args), written out here: a call fewer per launch.
                key = tuple([
                    (a.data_ptr() % 16 == 0)
                    if isinstance(a, Tensor)
                    else ((a == 1, a % 16 == 0, -2147483648 <= a < 2147483648) if type(a) is int else None)
                    for a in args
                ])
                if None in key:
                    key = None
                hooks = self.hooks
                enter, exit_ = hooks.launch_enter_hook, hooks.launch_exit_hook
                # Launch hooks idle: None (Triton 3.9) or an empty HookChain (Triton 3.6,
                # whose hooks are never None), tested here rather than in a function call.
                if (
                    key is not None
                    and (enter is None or not getattr(enter, "calls", _BUSY))
                    and (exit_ is None or not getattr(exit_, "calls", _BUSY))
                ):
                    entry = self.entries.get(key)
                    if entry is None:  # compiled (or found compiled) without launching
                        entry = self._remember(key, self.fn.warmup(*args, grid=grid, **self.options))
                    if entry is not None:
                        if len(entry) == 3:
                            run, function, metadata = entry
                            run(grid[0], grid[1] if len(grid) > 1 else 1, grid[2] if len(grid) > 2 else 1,
                                self.stream(self.device()), function, metadata,
                                None, None, None, *args, *self.constants)
                        else:
                            launch, function, warps, shared, types, pick, extra, _ = entry
                            launch(function, grid[0], grid[1] if len(grid) > 1 else 1, grid[2] if len(grid) > 2 else 1,
                                   warps, shared, types,
                                   (args if pick is None else pick(args)) + extra, self.stream(self.device()))
                        return
            self.fn[grid](*args, **self.options)
        except RuntimeError as e:
            raise KernelLaunchError(launch_failure(self.fn, grid, self.options, self.entries, e)) from e

    def bound(self, grid: tuple[int, ...], ints: tuple[int, ...]) -> Callable[[list], None]:
        """`site(grid, *buffers, *ints)` as a function of the tensors `buffers` alone,
        for a launch whose grid and int arguments are fixed (a tuned tile at static
        sizes): their part of the specialization key is worked out here, once. Through
        __call__ until the kernel is loaded, and wherever __call__ would not launch
        directly."""
        ikey = specialization(ints) if self.direct else None
        if ikey is None:
            return lambda buffers: self(grid, *buffers, *ints)
        gx, gy, gz = grid[0], grid[1] if len(grid) > 1 else 1, grid[2] if len(grid) > 2 else 1
        entries, hooks = self.entries, self.hooks

        def launch(buffers: list) -> None:
            entry = entries.get(tuple([b.data_ptr() % 16 == 0 for b in buffers]) + ikey)
            enter, exit_ = hooks.launch_enter_hook, hooks.launch_exit_hook
            if (entry is None or (enter is not None and getattr(enter, "calls", _BUSY))
                    or (exit_ is not None and getattr(exit_, "calls", _BUSY))):
                self(grid, *buffers, *ints)
                return
            try:
                if len(entry) == 3:  # Triton's launcher (a kernel with launch attributes: PDL)
                    run, function, metadata = entry
                    run(gx, gy, gz, self.stream(self.device()), function, metadata, None, None, None,
                        *buffers, *ints, *self.constants)
                    return
                run, function, warps, shared, types, pick, extra, _ = entry
                args = (*buffers, *ints)
                run(function, gx, gy, gz, warps, shared, types, (args if pick is None else pick(args)) + extra,
                    self.stream(self.device()))
            except RuntimeError as e:
                raise KernelLaunchError(launch_failure(self.fn, grid, self.options, entries, e)) from e

        return launch

    def prepare(self, grid: tuple[int, ...], args: tuple) -> None:
        """What the first launch with these arguments would do, launching nothing:
        compiles the kernel and loads it into its launcher (triton_precompile)."""
        compiled = self.fn.warmup(*args, grid=grid, **self.options)
        key = specialization(args)
        if self.direct and key is not None:
            self._remember(key, compiled)
        else:
            getattr(compiled, "run", None)  # Triton's launcher, built and loaded

    def _remember(self, key: tuple, compiled: Any) -> tuple | None:
        """The entry launching `compiled` (None: the site stays on Triton's path)."""
        try:
            entry = static_entry(compiled, self.runtime_params)
            if entry is None:
                entry = (compiled.run, compiled.function, compiled.packed_metadata)  # builds Triton's launcher
            self.device, self.stream = _current_device_and_stream()
        except AttributeError:  # a Triton without this launcher: stay on its own path
            self.direct = False
            return None
        self.entries[key] = entry
        return entry


class KernelLaunchError(RuntimeError):
    """A generated kernel that the driver refused to launch, named with its source ops."""


def launch_failure(fn: Any, grid: tuple[int, ...], options: dict[str, Any], entries: dict, error: Exception) -> str:
    """What failed: the kernel, the aten ops it came from (its module's header), the
    grid, its options and resources, and the driver's words."""
    name = getattr(fn, "__name__", None) or getattr(getattr(fn, "fn", None), "__name__", "?")
    header: list[str] = []
    path = getattr(getattr(fn, "fn", None), "__code__", None)
    path = path.co_filename if path is not None else None
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                if not line.startswith("#"):
                    break
                header.append(line[1:].strip())
    resources = [f"num_warps={e[2]}, shared memory={e[3]} bytes" for e in entries.values() if len(e) == 8]
    opts = ", ".join(f"{k}={v}" for k, v in options.items())
    return (f"strata: Triton kernel {name} ({'; '.join(header) or 'no header'}) could not launch on grid {tuple(grid)} "
            f"with {opts}{'; ' + resources[-1] if resources else ''}: {error}. Its module: {path}")


def specialization(args: tuple) -> tuple | None:
    """What Triton specializes a compiled kernel on: each pointer 16-byte aligned or
    not; each int 1, a multiple of 16, 32-bit. None: an argument the direct path does
    not handle."""
    key = tuple([
        (a.data_ptr() % 16 == 0)
        if isinstance(a, Tensor)
        else ((a == 1, a % 16 == 0, -2147483648 <= a < 2147483648) if type(a) is int else None)
        for a in args
    ])
    return None if None in key else key


class DirectLauncher:
    """A JITFunction's stand-in, `launcher[grid](*args, **options)`, with a CallSite
    for each set of options."""

    def __init__(self, fn: Any):
        self.fn = fn
        self.sites: dict[tuple, CallSite] = {}

    def __getitem__(self, grid: tuple[int, ...]):
        return lambda *args, **options: self.site(options)(grid, *args)

    def site(self, options: dict[str, Any]) -> CallSite:
        key = tuple(options.items())
        site = self.sites.get(key)
        if site is None:
            site = self.sites[key] = CallSite(self.fn, **options)
        return site


def direct_launchers(module: ModuleType) -> None:
    """Replaces each @triton.jit kernel of a generated CUDA module by a
    DirectLauncher (the module's CallSites hold the kernels themselves)."""
    jit = _jit_function_type()
    if jit is None or os.environ.get(ENV_VAR, "1") == "0":
        return
    for name, value in list(vars(module).items()):
        if isinstance(value, jit) and not name.startswith("_"):
            setattr(module, name, DirectLauncher(value))


def _current_device_and_stream() -> tuple[Any, Any]:
    """Functions giving the current device and its current stream, on which a launch
    must go (so that it lands in a CUDA graph being captured): torch's own, which
    Triton's driver calls through a wrapper, where torch has them."""
    device = getattr(torch._C, "_cuda_getDevice", None)
    stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if device is not None and stream is not None:
        return device, stream
    from triton.runtime import driver

    return driver.active.get_current_device, driver.active.get_current_stream


Tensor = torch.Tensor
_BUSY = (None,)  # what a hook without a `calls` list counts as: a hook that does something
