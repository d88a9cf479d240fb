"""Launching compiled Triton kernels with little Python in the way.

`kernel[grid](*args, **options)` on a `triton.JITFunction` binds every argument,
computes a specialization key, looks the compiled kernel up and only then launches:
tens of microseconds of Python per launch, which is most of the cost of a small
compiled graph. A generated module's launch statements each call one kernel with fixed
options, so a `CallSite` remembers, per argument specialization (each pointer 16-byte
aligned or not; each integer 1, a multiple of 16, 64-bit), the compiled kernel that
Triton's own first launch made, and later launches it directly through the kernel's
launcher, as TorchInductor does. `DirectLauncher` stands in for a JITFunction whose
options vary from call to call (tiles chosen at run time): one CallSite per options.

Anything unusual goes through Triton's own path: launch hooks set (a profiler), an
argument that is neither a tensor nor an int, Triton's interpreter, or a Triton whose
compiled kernels lack the launcher this code expects. STRATA_TRITON_DIRECT=0 turns the
direct path off.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any

import torch

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
        self.options = options
        jit = _jit_function_type()
        self.hooks = _hooks()
        self.direct = (
            jit is not None and isinstance(fn, jit) and self.hooks is not None and os.environ.get(ENV_VAR, "1") != "0"
        )
        self.constants = tuple(options[p.name] for p in fn.params if p.is_constexpr) if self.direct else ()
        self.entries: dict[tuple, tuple] = {}
        self.device = self.stream = None

    def __call__(self, grid: tuple[int, ...], *args: Any) -> None:
        # The hot path of every launch: one specialization key, one dict lookup, the
        # launcher; no other Python call (each costs about a microsecond).
        if self.direct:
            # What Triton specializes a compiled kernel on (each pointer 16-byte aligned
            # or not; each int 1, a multiple of 16, 32-bit); None: an argument the
            # direct path does not handle. Written out here: a call fewer per launch.
            key = tuple([
                (a.data_ptr() % 16 == 0)
                if isinstance(a, Tensor)
                else ((a == 1, a % 16 == 0, -2147483648 <= a < 2147483648) if type(a) is int else None)
                for a in args
            ])
            if None in key:
                key = None
            entry = self.entries.get(key)
            hooks = self.hooks
            enter, exit_ = hooks.launch_enter_hook, hooks.launch_exit_hook
            # Launch hooks idle: None (Triton 3.9) or an empty HookChain (Triton 3.6,
            # whose hooks are never None), tested here rather than in a function call.
            if (
                entry is not None
                and (enter is None or not getattr(enter, "calls", _BUSY))
                and (exit_ is None or not getattr(exit_, "calls", _BUSY))
            ):
                run, function, metadata = entry
                run(grid[0], grid[1] if len(grid) > 1 else 1, 1, self.stream(self.device()), function, metadata,
                    None, None, None, *args, *self.constants)
                return
            compiled = self.fn[grid](*args, **self.options)
            if key is not None and compiled is not None:
                self._remember(key, compiled)
            return
        self.fn[grid](*args, **self.options)

    def _remember(self, key: tuple, compiled: Any) -> None:
        try:
            run = compiled.run  # loads the binary on first access
            self.entries[key] = (run, compiled.function, compiled.packed_metadata)
            self.device, self.stream = _current_device_and_stream()
        except AttributeError:  # a Triton without this launcher: stay on its own path
            self.direct = False


class DirectLauncher:
    """A JITFunction's stand-in, `launcher[grid](*args, **options)`, with a CallSite
    for each set of options."""

    def __init__(self, fn: Any):
        self.fn = fn
        self.sites: dict[tuple, CallSite] = {}

    def __getitem__(self, grid: tuple[int, ...]):
        return lambda *args, **options: self._site(options)(grid, *args)

    def _site(self, options: dict[str, Any]) -> CallSite:
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
