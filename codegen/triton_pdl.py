"""Programmatic dependent launch (PDL) of generated Triton kernels on Hopper and later.

A GPU starts a kernel only when the one before it in the stream has finished and its
writes are flushed; between two small kernels (a decode step's: a few microseconds
each) the GPU idles for the launch of the next grid and the ramp of its first loads.
With PDL a kernel is launched while its predecessor still runs: its programs become
resident as soon as every program of the predecessor has started, and wait for the
predecessor to finish (`griddepcontrol.wait`) before they touch memory.

The rule that keeps it exact: every program of a PDL-launched kernel waits before its
first load or store. A kernel waits for its predecessor only, but the predecessor
finished only after its own wait returned, so every earlier kernel has finished too;
a kernel that is not PDL-launched (torch's, a library's) starts after its predecessor
finished, as always. Each program also tells the GPU at once that the next kernel may
launch (`griddepcontrol.launch_dependents`): that only lets it become resident.

Generated kernels (triton_source) take a `PDL: tl.constexpr` parameter, False by
default; `launch_options` turns it on, with Triton's `launch_pdl`, for launches through
a CallSite (triton_launch) on a GPU of compute capability 9 or more, with a Triton
that has both. STRATA_PDL=0 turns it off.
"""

from __future__ import annotations

import functools
import logging
import os
from typing import Any

log = logging.getLogger("strata.codegen")
ENV_VAR = "STRATA_PDL"
PARAM = "PDL"

# Lines of a generated CUDA module: the two instructions, or None on a Triton without
# them (its kernels are then never launched with PDL: `supported`).
MODULE_LINES = [
    "try:",
    "    from triton.language.extra.cuda import gdc_launch_dependents, gdc_wait",
    "except ImportError:  # a Triton without grid dependency control: PDL stays off",
    "    gdc_launch_dependents = gdc_wait = None",
]
# The first statements of each kernel body.
BODY_LINES = [
    f"if {PARAM}:  # launched while the previous kernel runs: wait for it first",
    "    gdc_launch_dependents()",
    "    gdc_wait()",
]
PARAM_DECL = f"{PARAM}: tl.constexpr = False"


@functools.cache
def supported(device_index: int) -> bool:
    """Whether kernels on this GPU launch with PDL: capability 9+, a Triton with the
    instructions and the launch option, STRATA_PDL not 0."""
    why = _why_not(device_index)
    if why:
        log.info("GPU %d: generated kernels launch without PDL (%s)", device_index, why)
    else:
        log.info("GPU %d: generated kernels launch with PDL (programmatic dependent launch)", device_index)
    return why is None


def _why_not(device_index: int) -> str | None:
    if os.environ.get(ENV_VAR, "1") == "0":
        return f"{ENV_VAR}=0"
    try:
        import torch
        from triton.backends.nvidia.compiler import CUDAOptions
        from triton.language.extra.cuda import gdc_wait  # noqa: F401

        if "launch_pdl" not in getattr(CUDAOptions, "__dataclass_fields__", {}):
            return "this Triton has no launch_pdl option"
        capability = torch.cuda.get_device_capability(device_index)
        return None if capability[0] >= 9 else f"compute capability {capability[0]}.{capability[1]}, PDL needs 9.0"
    except Exception as e:  # noqa: BLE001 - no CUDA, an older Triton: plain launches
        return f"{type(e).__name__}: {e}"


def launch_options(fn: Any, options: dict) -> dict:
    """`options` with the PDL parameter set, for a kernel `fn` that takes it: on, with
    Triton's launch_pdl, where the current GPU supports it (decided once, when a
    CallSite is made), else off."""
    params = getattr(fn, "params", None) or []
    if not any(getattr(p, "name", None) == PARAM for p in params) or PARAM in options:
        return options
    return {**options, PARAM: True, "launch_pdl": True} if _current_gpu_supports() else {**options, PARAM: False}


def _current_gpu_supports() -> bool:
    try:
        import torch

        return torch.cuda.is_available() and supported(torch.cuda.current_device())
    except Exception:  # noqa: BLE001 - no usable CUDA: plain launches
        return False
