"""LLVM IR to machine code for the host CPU: O3 with vectorization, object code
cached on disk (strata.runtime.cache), loaded into an MCJIT engine.

Every kernel gets an engine of its own, so that kernels never clash on symbol names
and a kernel's code is freed with it. The cache key is the generated LLVM IR (with the
host CPU's name and features), not the kernel.func: a change to the code generator
then never serves stale code. Cache entries carry a sha256 of their content: an entry
that is damaged on disk fails the check and is compiled again, rather than reaching
LLVM's object loader.
"""

from __future__ import annotations

import ctypes.util
import functools
import hashlib

import llvmlite.binding as llvm

from strata.runtime import cache

CACHE_KIND = "llvm"
OBJECT_SUFFIX = ".o"
_DIGEST_BYTES = 32


@functools.cache
def _initialize() -> None:
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    # Kernels call libm (expf, lgammaf, fmodf, …); the JIT linker resolves them here.
    llvm.load_library_permanently(ctypes.util.find_library("m"))
    # and the C library's malloc and free (scratch rows, codegen/llvm_kernel.py).
    process = ctypes.CDLL(None)
    for name in ("malloc", "free"):
        llvm.add_symbol(name, ctypes.cast(getattr(process, name), ctypes.c_void_p).value)


initialize = _initialize


@functools.cache
def host_cpu() -> tuple[str, str]:
    """The host CPU's name and feature string, which the code is compiled for."""
    return llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()


@functools.cache
def host_triple() -> str:
    return llvm.get_process_triple()


def _target_machine() -> llvm.TargetMachine:
    """A new target machine for the host (an MCJIT engine takes ownership of one)."""
    _initialize()
    cpu, features = host_cpu()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=cpu, features=features, opt=3, jit=True)


@functools.cache
def _shared_target_machine() -> llvm.TargetMachine:
    """The target machine that optimizes and emits object code (never given away)."""
    return _target_machine()


def optimize(ir_text: str) -> llvm.ModuleRef:
    """Parses LLVM IR and runs the O3 pipeline on it, loop and SLP vectorizers on."""
    tm = _shared_target_machine()
    module = llvm.parse_assembly(ir_text)
    module.triple = tm.triple
    module.data_layout = str(tm.target_data)
    module.verify()
    options = llvm.create_pipeline_tuning_options(speed_level=3)
    options.loop_vectorization = True
    options.slp_vectorization = True
    passes = llvm.create_pass_builder(tm, options)
    passes.getModulePassManager().run(module, passes)
    return module


def ir_key(ir_text: str) -> str:
    """The disk cache key of the object code of `ir_text` for the host."""
    return cache.cache_key(ir_text, CACHE_KIND, *host_cpu())


def object_code(ir_text: str) -> bytes:
    """The host object code of `ir_text`, from the disk cache or compiled now."""
    key = ir_key(ir_text)
    code = _read_cached(key)
    if code is None:
        code = _shared_target_machine().emit_object(optimize(ir_text))
        _write_cached(key, code)
    return code


def cached_object_code(key: str) -> bytes | None:
    """The object code cached under an `ir_key`, if it is there and intact."""
    return _read_cached(key)


# Generating a kernel's LLVM IR in Python costs tens of milliseconds, more than the rest
# of a warm compile; a second table maps the kernel itself (its kernel.func text, the
# target, and a digest of the generator's own source) to the key of its LLVM IR, so a
# warm compile reads the object code without generating anything. The object code
# stays keyed (and checked) by its IR.
FRONT_KIND = "llvm-kernels"
FRONT_SUFFIX = ".key"


@functools.cache
def generator_digest() -> str:
    """A digest of the LLVM code generator's source files (codegen/llvm_*.py): a change
    to the generator never serves code it would no longer generate."""
    import pathlib

    h = hashlib.sha256()
    for path in sorted(pathlib.Path(__file__).parent.glob("llvm_*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def front_key(kernel_text: str, target: str) -> str:
    return cache.cache_key(kernel_text, FRONT_KIND, target, generator_digest(), *host_cpu())


def read_front(key: str) -> str | None:
    entry = cache.read(FRONT_KIND, key, FRONT_SUFFIX)
    if entry is None:
        return None
    text = entry.decode("ascii", errors="replace")
    return text if len(text) == 40 and all(c in "0123456789abcdef" for c in text) else None


def write_front(key: str, ir_key_: str) -> None:
    cache.store(FRONT_KIND, key, FRONT_SUFFIX, ir_key_.encode("ascii"))


def _read_cached(key: str) -> bytes | None:
    entry = cache.read(CACHE_KIND, key, OBJECT_SUFFIX)
    if entry is None:
        return None
    digest, code = entry[:_DIGEST_BYTES], entry[_DIGEST_BYTES:]
    return code if hashlib.sha256(code).digest() == digest else None


def _write_cached(key: str, code: bytes) -> None:
    cache.store(CACHE_KIND, key, OBJECT_SUFFIX, hashlib.sha256(code).digest() + code)


class JitCode:
    """Object code loaded into an engine of its own; `address(symbol)` stays valid for
    as long as this object lives."""

    def __init__(self, code: bytes):
        self.code = code  # kept for an ahead-of-time package (runtime/package_llvm.py)
        self._engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), _target_machine())
        self._engine.add_object_file(llvm.ObjectFileRef.from_data(code))
        self._engine.finalize_object()

    def global_address(self, symbol: str) -> int:
        address = self._engine.get_global_value_address(symbol)
        if not address:
            raise RuntimeError(f"the JIT found no global {symbol!r} in the compiled code")
        return address

    def address(self, symbol: str) -> int:
        address = self._engine.get_function_address(symbol)
        if not address:
            raise RuntimeError(f"the JIT found no function {symbol!r} in the compiled kernel")
        return address
