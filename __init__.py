"""strata: an MLIR-style multi-level IR compiler for PyTorch programs.

    import torch
    compiled = torch.compile(model, backend="strata")      # no import of strata needed
    compiled = strata.compile(model, mode="max-autotune", dynamic=True)
"""

from __future__ import annotations

__version__ = "0.1.0"

from typing import Any, Callable


def compile(
    model: Callable | None = None,
    *,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    mode: str | None = None,
    options: dict[str, Any] | None = None,
    disable: bool = False,
):
    """torch.compile with strata as the backend: same arguments, same meaning.

    Unlike torch.compile, `mode` and `options` may be given together (options win)."""
    import torch

    from strata.frontend.backend import make_backend

    backend = make_backend(mode, options)
    if model is None:
        return lambda m: torch.compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend, disable=disable)
    return torch.compile(model, fullgraph=fullgraph, dynamic=dynamic, backend=backend, disable=disable)


def list_options() -> dict[str, Any]:
    """Every compile option and its default."""
    from strata.frontend.options import list_options as _list

    return _list()


def list_mode_options(mode: str | None = None) -> dict[str, Any]:
    """The options each mode sets, as torch._inductor.list_mode_options does."""
    from strata.frontend.options import list_mode_options as _list

    return _list(mode)
