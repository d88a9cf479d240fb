"""The Triton back end: one kernel.func → Triton source → a loaded module → launches.

The source (written by triton_source) goes to the disk cache and is imported from
there, since Triton's jit reads a kernel's source through `inspect`, which needs a real
file; a second compile of the same IR for the same device imports the cached file.
The module's `launch(buffers, symbols)` computes sizes, picks tiles and launches; it is
generated Python, so a call does no sympy work, and on CUDA its launches skip Triton's
per-launch argument binding (triton_launch). Under max-autotune the kernel's launcher
is an Autotuner (triton_autotune), which times the candidate tiles on the first call
with each size and remembers the winner, on disk too.

CPU tensors run in Triton's interpreter. Triton (3.6 and 3.9 alike) reads
TRITON_INTERPRET through `triton.knobs.runtime.interpret`, which looks at the
environment on every access: when `@triton.jit` decorates a function and again while an
interpreted kernel runs. So the variable is set around both the import of a CPU module
and each of its launches, then restored, and CUDA kernels of the same process stay
compiled. Setting it is not thread-safe: do not compile CUDA kernels in another thread
while a CPU kernel runs. triton.language's own @jit functions (tl.sum, tl.zeros, …)
were fixed to one mode when triton was imported, so generated code calls only builtins.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType

import numpy
import torch

from strata.codegen import triton_interpreter_compat
from strata.codegen.triton_autotune import Autotuner
from strata.codegen.triton_bounds import as_index_error, interpreter_debug
from strata.codegen.triton_launch import direct_launchers
from strata.codegen.triton_loop_order import contiguous_last
from strata.codegen.triton_matmul import matmul_template
from strata.codegen.triton_source import FEATURES, KernelSource, kernel_name
from strata.dialects.kernel_text import Kernel, as_func
from strata.runtime import cache

CACHE_KIND = "triton"
DEVICES = ("cuda", "cpu")


def _generator_fingerprint() -> str:
    """A hash of this code generator's sources: part of every cache key, so that a
    cached module never outlives the code that wrote it (strata's version alone does
    not change with every fix)."""
    h = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("triton_*.py")):
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


GENERATOR = _generator_fingerprint()


class CompiledKernel:
    """A kernel ready to launch on buffers (block-argument order) and symbol values."""

    def __init__(self, name: str, source: str, launch: Callable[[list[torch.Tensor], list[int]], None], interpret: bool,
                 module: ModuleType | None = None):
        self.name = name
        self.source = source
        self.module = module
        self.run = _interpreted(launch) if interpret else launch

    def __call__(self, buffers: list[torch.Tensor], symbols: list[int]) -> None:
        self.run(buffers, symbols)

    def bind(self, symbols: list[int]) -> Callable[[list[torch.Tensor]], None] | None:
        """The launch for these symbol values as a function of the buffers alone, its
        tile, grid and int arguments worked out now (the module's `bind`); None where
        the module has none to give (a split reduction, a static module, the
        interpreter, max-autotune's tuner)."""
        bind = getattr(self.module, "bind", None)
        if bind is None or self.run is not getattr(self.module, "launch", None):
            return None
        return bind(list(symbols))

    def __repr__(self) -> str:
        return f"<CompiledKernel {self.name} (triton)>"


def compile_kernel(func: Kernel, device: str = "cuda", max_autotune: bool = False, host_bound: bool = False,
                   **_: object) -> CompiledKernel:
    """Triton code for `func` (a kernel.func, or its KernelText: parsed only on a cache
    miss), for tensors on `device` ("cuda", or "cpu" for Triton's interpreter); raises
    CodegenError naming an op it cannot lower. `max_autotune`:
    the tile is chosen by timing candidates on the first call with each size
    (triton_autotune), counting each tile's host time too where `host_bound` (no CUDA
    graph); otherwise by triton_tiles' heuristic. Other keyword arguments
    (options of other back ends) are ignored."""
    device = _device_kind(device)
    # Keyed on func as given: its loop order is chosen only on a miss (on a warm
    # compile, contiguous_last's index algebra was a fifth of the kernels' load time).
    key = cache.cache_key(str(func), CACHE_KIND, device, GENERATOR, "tune" if max_autotune else "", str(sorted(FEATURES.items())))
    path = cache.path_of(CACHE_KIND, key, ".py")
    module = _load_cached(path, key, device)
    if module is None:
        func = contiguous_last(as_func(func))
        template = matmul_template(func, device)
        source = template.module() if template is not None else KernelSource(func, device, tune=max_autotune).module()
        path = cache.write(CACHE_KIND, key, ".py", source.encode())
        module = _load(path, key, device)
    launch = module.launch
    if max_autotune:
        launch = Autotuner(kernel_name(func), key, module, bool(as_func(func).reduction_dims), device,
                           host_bound=host_bound and device == "cuda")
    return CompiledKernel(kernel_name(func), path.read_text(), launch, device == "cpu", module)


def _device_kind(device: str) -> str:
    kind = str(device).split(":")[0]
    if kind not in DEVICES:
        raise ValueError(f"the Triton back end runs on {' or '.join(DEVICES)}, not '{device}'")
    return kind


def _load_cached(path: Path, key: str, device: str) -> ModuleType | None:
    """The cached module, or None: a missing or broken entry is a miss."""
    if not path.exists():
        return None
    try:
        return _load(path, key, device)
    except Exception:
        return None


def _load(path: Path, key: str, device: str) -> ModuleType:
    name = f"strata_triton_{key}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    with _interpreting() if device == "cpu" else contextlib.nullcontext():
        spec.loader.exec_module(module)
    if device == "cuda":
        direct_launchers(module)
    sys.modules[name] = module
    return module


@contextlib.contextmanager
def _interpreting() -> Iterator[None]:
    """Triton's interpreter on, with device asserts (triton_bounds), and numpy quiet:
    masked-off lanes compute on garbage (0/0, log of 0) whose results are never stored."""
    triton_interpreter_compat.install()
    old = os.environ.get("TRITON_INTERPRET")
    os.environ["TRITON_INTERPRET"] = "1"
    try:
        with numpy.errstate(all="ignore"), interpreter_debug():
            yield
    finally:
        if old is None:
            del os.environ["TRITON_INTERPRET"]
        else:
            os.environ["TRITON_INTERPRET"] = old


def _interpreted(launch: Callable[[list[torch.Tensor], list[int]], None]) -> Callable[[list[torch.Tensor], list[int]], None]:
    def run(buffers: list[torch.Tensor], symbols: list[int]) -> None:
        with _interpreting():
            try:
                launch(buffers, symbols)
            except Exception as e:
                index_error = as_index_error(e)
                if index_error is None:
                    raise
                raise index_error from None

    return run
