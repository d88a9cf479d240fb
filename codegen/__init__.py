"""Code generators: kernel.func → Triton source (GPU) or LLVM machine code (CPU)."""

from strata.codegen.errors import CodegenError

__all__ = ["CodegenError"]
