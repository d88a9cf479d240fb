"""Launching a compiled Triton kernel through torch's static CUDA launcher.

Triton launches a kernel through C code it generates for the kernel's signature and
builds with a C compiler, once per signature: about a quarter of a second of gcc per
kernel. In a cold compile that was most of the time a graph's kernels took, even side
by side (the GPT block in bf16: ten kernels, 2.3-2.7 s of launcher builds summed over
the precompile threads against 1.6-2.1 s of Triton's own compiles; docs/performance-history.md).
torch ships a launcher compiled once for any cubin (torch._C._StaticCudaLauncher, which
TorchInductor uses), told each argument's type by a string. `static_entry` loads a
compiled kernel into it and gives what a CallSite launches with; None where it cannot
(a torch without it, launch attributes, scratch memory, an argument type it lacks), and
the site builds Triton's launcher as before. STRATA_TRITON_STATIC=0 turns it off.
"""

from __future__ import annotations

import logging
import os
from typing import Any, Callable

import torch

ENV_VAR = "STRATA_TRITON_STATIC"
log = logging.getLogger("strata.codegen")


def static_entry(compiled: Any, runtime_params: list[int]) -> tuple | None:
    """(launch, function, num_warps, shared, arg_types, pick, extra, kernel) for
    `launch(function, gx, gy, gz, num_warps, shared, arg_types, pick(args) + extra,
    stream)`, or None. runtime_params: the indices among the kernel's parameters of the
    arguments a CallSite passes (those that are not tl.constexpr); pick keeps those
    Triton did not make constants (an int equal to 1), or is None when it keeps all.
    `kernel` owns the loaded module (it unloads it when collected)."""
    if os.environ.get(ENV_VAR, "1") == "0":
        return None
    metadata = getattr(compiled, "metadata", None)
    if getattr(metadata, "launch_pdl", False) or getattr(metadata, "launch_cooperative_grid", False):
        log.info("%s: Triton's launcher, not torch's static one (launch attributes)", getattr(compiled, "name", "?"))
        return None
    try:
        from torch._inductor.runtime.static_triton_launcher import StaticallyLaunchedCudaKernel  # private

        compiled._cubin_path = _cubin_path(compiled)
        kernel = StaticallyLaunchedCudaKernel(compiled)
        kernel.load_kernel(torch.cuda.current_device())
        launch = kernel.C_impl._launch_kernel
    except Exception as e:  # noqa: BLE001 - Triton's own launcher instead
        log.info("%s: Triton's launcher, not torch's static one (%s: %s)",
                 getattr(compiled, "name", "?"), type(e).__name__, e)
        return None
    constants = set(kernel.full_constexprs)
    keep = [j for j, i in enumerate(runtime_params) if i not in constants]
    pick = None if len(keep) == len(runtime_params) else _picker(keep)
    extra = (None,) * (int(kernel.has_global_scratch) + int(kernel.has_profile_scratch))
    return launch, kernel.function, kernel.num_warps, kernel.shared, kernel.arg_tys + "O" * len(extra), pick, extra, kernel


def _cubin_path(compiled: Any) -> str:
    """The kernel's cubin in Triton's cache, written there if it is not."""
    from triton.runtime.cache import get_cache_manager

    manager = get_cache_manager(compiled.hash)
    name = f"{compiled.src.fn.__name__}.cubin"
    return manager.get_file(name) or manager.put(compiled.asm["cubin"], name, binary=True)


def _picker(keep: list[int]) -> Callable[[tuple], tuple]:
    return lambda args: tuple([args[j] for j in keep])
