"""The CPU code generator: a kernel.func becomes LLVM IR (codegen/llvm_kernel.py),
then vectorized machine code for the host through llvmlite (codegen/llvm_jit.py).

One compiled kernel serves every binding of the shape symbols: the domain sizes are
computed in the generated code from the symbol values passed at each call.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence

import torch

from strata.codegen import llvm_jit
from strata.codegen.llvm_kernel import build_module, entry_point
from strata.dialects.kernel import FuncOp

_ENTRY_POINT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)


class CompiledKernel:
    """A kernel.func compiled for the host CPU; `source` is the LLVM IR it came from.

    Call it with the func's buffers as CPU tensors (inputs, then the preallocated
    outputs; element 0 of each at `data_ptr()`) and the values of its shape symbols."""

    def __init__(self, func: FuncOp, source: str, code: llvm_jit.JitCode):
        self.name = func.sym_name.data
        self.source = source
        self._code = code  # owns the machine code that _entry points into
        self._entry = _ENTRY_POINT(code.address(entry_point(func)))
        self._num_buffers = len(func.block.args)
        self._buffer_array = ctypes.c_void_p * self._num_buffers
        self._symbol_array = ctypes.c_int64 * len(func.symbol_names)

    def __call__(self, buffers: Sequence[torch.Tensor], symbols: Sequence[int]) -> None:
        if len(buffers) != self._num_buffers:
            raise ValueError(f"kernel {self.name} takes {self._num_buffers} buffers, got {len(buffers)}")
        self._entry(self._buffer_array(*[t.data_ptr() for t in buffers]), self._symbol_array(*symbols))

    def __repr__(self) -> str:
        return f"<CompiledKernel {self.name} (LLVM, CPU)>"


def llvm_source(func: FuncOp) -> str:
    """The LLVM IR of `func`, headed by comments naming it and the aten ops it computes."""
    header = f"; strata kernel {func.sym_name.data}\n; from aten ops: {', '.join(func.source_ops)}\n"
    return header + str(build_module(func))


def optimized_ir(func: FuncOp) -> str:
    """The LLVM IR of `func` after the O3 pipeline, for inspection."""
    return str(llvm_jit.optimize(llvm_source(func)))


def compile_kernel(func: FuncOp) -> CompiledKernel:
    """Compiles `func` for the host CPU; CodegenError names an op it cannot compile."""
    source = llvm_source(func)
    return CompiledKernel(func, source, llvm_jit.JitCode(llvm_jit.object_code(source)))
