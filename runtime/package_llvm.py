"""CPU kernels in an ahead-of-time package: LLVM object code, written and loaded.

At packaging, each compiled kernel's object code (what codegen/llvm_jit.py caches) is
written as it is, with what its Python side needs to call it: the entry symbol, its
buffer and symbol counts, and its index checks (llvm_bounds' sites, as data). strata's
thread pool, which kernels call to run on several cores, is machine code too and is
packaged with them. At load the object code goes into an MCJIT engine (llvmlite's
linker: relocation only, no compile), and nothing imports a code generator or xDSL.

The code is for the CPU it was built on (its name and features, as llvm_jit compiles
for the host): a host that lacks one of the features the package was built with
refuses it at load, naming them.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from typing import Any

from strata.codegen import llvm_jit, llvm_pool
from strata.errors import IndexOutOfBounds, out_of_bounds_message
from strata.runtime.package_format import Package, PackageError, PackagingError
from strata.runtime.package_runner import int_function, ints_function

SLOTS_PER_SITE = 2  # codegen/llvm_bounds.py: the largest out-of-range index (0: none), the size
POOL_FILE = "kernels/strata_pool.o"
_ENTRY_POINT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)


def target() -> dict[str, Any]:
    """The CPU the kernels are built for, as the manifest records it."""
    name, features = llvm_jit.host_cpu()
    return {"triple": llvm_jit.host_triple(), "cpu": name, "features": features}


def check_target(built: dict[str, Any]) -> None:
    """Refuses a package whose machine code this CPU cannot run, naming why."""
    here = target()
    if built.get("triple") != here["triple"]:
        raise PackageError(f"the package's CPU kernels are for {built.get('triple')}; this machine is {here['triple']}")
    have = {f[1:] for f in here["features"].split(",") if f.startswith("+")}
    need = {f[1:] for f in built.get("features", "").split(",") if f.startswith("+")}
    missing = sorted(need - have)
    if missing:
        raise PackageError(f"the package's CPU kernels were built for {built.get('cpu')} and use CPU features this "
                           f"machine ({here['cpu']}) lacks: {', '.join(missing)}")


def pack_kernel(name: str, compiled: Any, func: Any) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The manifest entry and files of a compiled LLVM kernel (codegen/llvm_cpu.CompiledKernel)."""
    from strata.codegen.llvm_bounds import check_ops
    from strata.codegen.llvm_kernel import entry_point
    from strata.dialects.kernel_text import as_func

    code = getattr(getattr(compiled, "_code", None), "code", None)
    if code is None:
        raise PackagingError(f"kernel {name} has no machine code to package (it runs in the kernel interpreter)")
    kernel = as_func(func)
    meta: dict[str, Any] = {
        "kind": "llvm", "object": f"kernels/{name}.o", "entry": entry_point(kernel),
        "buffers": kernel.num_buffers, "symbols": len(kernel.symbol_names),
        "threads": compiled._target.threads if compiled._target is not None else "none",
        "source_ops": list(kernel.source_ops),
    }
    report = compiled._checks
    if report is not None:
        from strata.runtime.package_plan import int_code

        meta["checks"] = {
            "symbol_names": list(report._symbol_names),
            "domain": [int_code(d) for d in report._domain],
            "may_be_empty": [[k, int_code(size)] for k, size in report.may_be_empty],
            "sites": [{"dim": op.dim.value.data, "op": op.indexing_op.data, "wraps": bool(op.wraps_negative)}
                      for op in check_ops(kernel)],
        }
    return meta, {meta["object"]: code}


def pack_pool() -> tuple[dict[str, Any], dict[str, bytes]]:
    """strata's thread pool (codegen/llvm_pool.py), for kernels compiled to call it."""
    pool = llvm_pool.pool_code()
    if pool is None:
        raise PackagingError("the kernels run on strata's thread pool, which is not running in this process")
    code, openmp = pool
    return {"object": POOL_FILE, "openmp": openmp}, {POOL_FILE: code}


def load_kernels(package: Package, metas: dict[str, dict[str, Any]]) -> dict[str, Callable[[list, list], None]]:
    """Each packaged CPU kernel, loaded and callable as kernel(buffers, symbols)."""
    check_target(package.manifest["target"]["cpu"])
    llvm_jit.initialize()
    pool = package.manifest["target"].get("pool")
    threads = {m["threads"] for m in metas.values()}
    if "omp" in threads or pool and pool["openmp"]:
        from strata.codegen.llvm_openmp import openmp_available

        if not openmp_available():
            raise PackageError("the package's CPU kernels call OpenMP, which this process does not have")
    if "pool" in threads:
        if not pool:
            raise PackageError("the package's CPU kernels call strata's thread pool, which it does not hold")
        llvm_pool.start_pool(package.read(pool["object"]), pool["openmp"])
    return {name: LoadedKernel(name, meta, package.read(meta["object"])) for name, meta in metas.items()}


class LoadedKernel:
    """A packaged kernel's machine code, called with tensors and symbol values."""

    def __init__(self, name: str, meta: dict[str, Any], code: bytes):
        self.name = name
        self.source_ops = meta.get("source_ops", [])
        self._code = llvm_jit.JitCode(code)  # owns the machine code _entry points into
        try:
            self._entry = _ENTRY_POINT(self._code.address(meta["entry"]))
        except RuntimeError as e:
            raise PackageError(f"kernel {name}: {e}") from None
        self._buffers = ctypes.c_void_p * meta["buffers"]
        checks = meta.get("checks")
        self._checks = _Checks(checks, meta["symbols"]) if checks else None
        extra = SLOTS_PER_SITE * len(checks["sites"]) if checks else 0
        self._symbols = ctypes.c_int64 * (meta["symbols"] + extra)
        self._count = meta["buffers"]

    def __call__(self, buffers: Sequence[Any], symbols: Sequence[int]) -> None:
        if len(buffers) != self._count:
            raise PackageError(f"kernel {self.name} takes {self._count} buffers, got {len(buffers)}")
        llvm_pool.adapt()
        pointers = self._buffers(*[t.data_ptr() for t in buffers])
        if self._checks is None:
            self._entry(pointers, self._symbols(*symbols))
            return
        self._checks.raise_if_empty_dim(symbols)
        slots = self._symbols(*symbols)
        self._entry(pointers, slots)
        self._checks.raise_if_written(slots)


class _Checks:
    """codegen/llvm_bounds.OutOfBoundsReport, from the package's data."""

    def __init__(self, data: dict[str, Any], first: int):
        self.first = first
        self.names = data["symbol_names"]
        self.domain = ints_function(data["domain"]) if data["domain"] else (lambda env: [])
        self.may_be_empty = [(k, int_function(code)) for k, code in data["may_be_empty"]]
        self.sites = data["sites"]

    def raise_if_empty_dim(self, symbols: Sequence[int]) -> None:
        if not self.may_be_empty:
            return
        env = dict(zip(self.names, symbols))
        for k, size in self.may_be_empty:
            if size(env) == 0 and all(d > 0 for d in self.domain(env)):
                site = self.sites[k]
                raise IndexOutOfBounds(out_of_bounds_message(None, site["dim"], 0, site["op"]))

    def raise_if_written(self, array: Sequence[int]) -> None:
        for k, site in enumerate(self.sites):
            wrapped = array[self.first + SLOTS_PER_SITE * k]
            if wrapped:
                size = array[self.first + SLOTS_PER_SITE * k + 1]
                index = wrapped - size if wrapped < 0 and site["wraps"] else wrapped
                raise IndexOutOfBounds(out_of_bounds_message(index, site["dim"], size, site["op"]))

