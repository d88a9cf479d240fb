"""The CPU code generator: a kernel.func becomes LLVM IR with explicit vector code
(codegen/llvm_kernel.py), then machine code for the host through llvmlite
(codegen/llvm_jit.py).

One compiled kernel serves every binding of the shape symbols: the domain sizes are
computed in the generated code from the symbol values passed at each call. A call runs
on several cores when the kernel is large enough: through strata's own thread pool
(codegen/llvm_pool.py) by default, or torch's OpenMP runtime (codegen/llvm_parallel.py);
ctypes releases the GIL meanwhile.
"""

from __future__ import annotations

import ctypes
import functools
import os
from collections.abc import Sequence

import torch

from strata.codegen import llvm_jit, llvm_openmp, llvm_pool
from strata.codegen.llvm_bounds import OutOfBoundsReport, site_count
from strata.codegen.errors import CodegenError
from strata.codegen.llvm_kernel import Target, build_module, entry_point
from strata.codegen.llvm_pool import adapt
from strata.dialects.kernel import FuncOp
from strata.dialects.kernel_text import Kernel, as_func

_ENTRY_POINT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)


class CompiledKernel:
    """A kernel.func compiled for the host CPU; `source` is the LLVM IR it came from.

    Call it with the func's buffers as CPU tensors (inputs, then the preallocated
    outputs; element 0 of each at `data_ptr()`) and the values of its shape symbols.
    A kernel that checks indices (llvm_bounds) raises IndexOutOfBounds after a call
    that met one out of range."""

    def __init__(self, func: Kernel, source: str | None, code: llvm_jit.JitCode, target: Target | None = None):
        self.name = func.sym_name.data
        self._func = func
        self._target = target
        self._source = source
        self._code = code  # owns the machine code that _entry points into
        self._entry = _ENTRY_POINT(code.address(entry_point(func)))
        self._num_buffers = func.num_buffers
        self._buffer_array = ctypes.c_void_p * self._num_buffers
        sites = site_count(func)
        # Past the symbols, zeroed slots where the kernel reports an index out of range.
        self._checks = OutOfBoundsReport(func, len(func.symbol_names), sites) if sites else None
        self._symbol_array = ctypes.c_int64 * (len(func.symbol_names) + (self._checks.slots() if sites else 0))

    def __call__(self, buffers: Sequence[torch.Tensor], symbols: Sequence[int]) -> None:
        if len(buffers) != self._num_buffers:
            raise ValueError(f"kernel {self.name} takes {self._num_buffers} buffers, got {len(buffers)}")
        self.launch([t.data_ptr() for t in buffers], symbols)

    def launch(self, pointers: Sequence[int], symbols: Sequence[int]) -> None:
        """The call without checks of its arguments, for the runtime: `pointers` are the
        buffers' `data_ptr()`s, in order."""
        adapt()
        if self._checks is None:
            self._entry(self._buffer_array(*pointers), self._symbol_array(*symbols))
            return
        if self._checks.may_be_empty:
            self._checks.raise_if_empty_dim(symbols)
        slots = self._symbol_array(*symbols)
        self._entry(self._buffer_array(*pointers), slots)
        self._checks.raise_if_written(slots)

    @property
    def source(self) -> str:
        """The LLVM IR (generated again on demand when the code came from the cache)."""
        if self._source is None:
            self._source = llvm_source(as_func(self._func), self._target)
        return self._source

    def __repr__(self) -> str:
        return f"<CompiledKernel {self.name} (LLVM, CPU)>"


def llvm_source(func: FuncOp, target: Target | None = None) -> str:
    """The LLVM IR of `func`, headed by comments naming it and the aten ops it computes."""
    header = f"; strata kernel {func.sym_name.data}\n; from aten ops: {', '.join(func.source_ops)}\n"
    return header + str(build_module(func, target or host_target()))


@functools.cache
def host_target() -> Target:
    """The vector width of the host's widest float vectors, and whether to use threads."""
    features = set(llvm_jit.host_cpu()[1].split(","))
    bits = 512 if "+avx512f" in features else 256 if "+avx" in features else 128
    x86 = llvm_jit.host_triple().startswith(("x86_64", "i686", "i386"))
    return Target(vector_bits=bits, threads=threads_runtime(), avx512=x86 and bits == 512)


def threads_runtime() -> str:
    """How kernels run on several cores: through strata's pool (codegen/llvm_pool.py),
    which runs each job on its own workers or on torch's OpenMP team, whichever suits
    the machine's load (STRATA_CPU_THREADS=auto, the default; pool or omp fix the
    choice); through torch's OpenMP runtime directly where the pool cannot run; or not
    at all (STRATA_CPU_THREADS=none)."""
    wanted = os.environ.get("STRATA_CPU_THREADS", "auto")
    if wanted not in ("auto", "pool", "omp", "none"):
        raise ValueError(f"STRATA_CPU_THREADS={wanted!r}: use auto, pool, omp or none")
    if wanted == "none":
        return "none"
    llvm_openmp.openmp_available()  # registers the OpenMP symbols (team size) where there is one
    if llvm_pool.pool():
        return "pool"
    return "omp" if llvm_openmp.openmp_available() else "none"


def optimized_ir(func: FuncOp) -> str:
    """The LLVM IR of `func` after the O3 pipeline, for inspection."""
    return str(llvm_jit.optimize(llvm_source(func)))


def compile_kernel(func: Kernel, target: Target | None = None) -> CompiledKernel:
    """Compiles `func` (a kernel.func, or its KernelText: parsed only on a cache miss)
    for the host CPU; CodegenError names an op it cannot compile.
    A kernel compiled before (same kernel.func, target and generator) is read from the
    disk cache without generating its LLVM IR (codegen/llvm_jit.py). `target` narrows
    what the host offers (tests run the generic vector code that way)."""
    target = target or host_target()
    if target.threads == "pool" and not llvm_pool.pool() or target.threads == "omp" and not llvm_openmp.openmp_available():
        raise CodegenError(f"no {target.threads} runtime for kernel {func.sym_name.data} in this process")
    front = llvm_jit.front_key(str(func), repr(target))
    known = llvm_jit.read_front(front)
    code = llvm_jit.cached_object_code(known) if known else None
    if code is not None:
        return CompiledKernel(func, None, llvm_jit.JitCode(code), target)
    source = llvm_source(as_func(func), target)
    compiled = CompiledKernel(func, source, llvm_jit.JitCode(llvm_jit.object_code(source)), target)
    llvm_jit.write_front(front, llvm_jit.ir_key(source))
    return compiled
