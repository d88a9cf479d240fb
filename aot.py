"""Ahead of time: torch.export → a strata package that loads and runs with no compiler.

    ep = torch.export.export(model, (x,), dynamic_shapes={"x": {0: torch.export.Dim("batch", max=64)}})
    strata.aot.compile_and_package(ep, "model.strata")     # compiles every kernel now
    run = strata.aot.load_package("model.strata")          # no trace, no pass, no compile
    y = run(x)

docs/aot.md walks through it: what the package holds, how to inspect it, swapping weights,
and what it refuses. Loading imports only strata's runtime: not the frontend, the
passes, the code generators or xDSL.
"""

from __future__ import annotations

import os
from typing import Any

from strata.runtime.package_format import PackageError, PackagingError

__all__ = ["compile_and_package", "load_package", "PackageError", "PackagingError"]


def compile_and_package(exported_program: Any, path: str | os.PathLike, options: dict[str, Any] | None = None):
    """Compiles a torch.export.ExportedProgram and writes its package to `path`
    (frontend/packaging/aot_package.py). `options` are strata.compile's."""
    from strata.frontend.packaging.aot_package import compile_and_package as package

    return package(exported_program, path, options)


def load_package(path: str | os.PathLike | bytes, device: Any = None):
    """The package at `path` (or its bytes) as a callable taking the exported program's
    inputs (runtime/package_loader.py)."""
    from strata.runtime.package_loader import load_package as load

    return load(path, device)
