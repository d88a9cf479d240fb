"""The OpenMP runtime torch loads (libgomp), registered for the JIT linker.

A module of its own, with no code generator behind it, so that a process that only
loads compiled kernels (an ahead-of-time package, runtime/package_llvm.py) can register
the symbols kernels and the pool call without importing the generators."""

from __future__ import annotations

import ctypes
import functools

import llvmlite.binding as llvm

# The OpenMP entry points generated code calls (codegen/llvm_parallel.py declares them).
SYMBOLS = ("GOMP_parallel", "omp_get_thread_num", "omp_get_num_threads", "omp_get_max_threads")


@functools.cache
def openmp_available() -> bool:
    """Whether the process has an OpenMP runtime (torch's), registered for the JIT linker."""
    import torch  # noqa: F401  (loads libgomp with libtorch)

    try:
        process = ctypes.CDLL(None)
        addresses = {name: ctypes.cast(getattr(process, name), ctypes.c_void_p).value for name in SYMBOLS}
    except (AttributeError, OSError):
        return False
    for name, address in addresses.items():
        llvm.add_symbol(name, address)
    return True
