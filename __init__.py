"""strata: an MLIR-style multi-level IR compiler for PyTorch programs.

    import torch
    compiled = torch.compile(model, backend="strata")      # no import of strata needed
    compiled = strata.compile(model, mode="max-autotune", dynamic=True)

Seeing inside (docs/debugging.md):

    strata.explain(model, x)            # graph breaks, kernels, fallbacks, time, bytes
    strata.set_logs("+fusion,passes")   # or STRATA_LOGS=+fusion,passes
    strata.compile(model, options={"trace.enabled": True, "trace.graph_diagram": True})
"""

from __future__ import annotations

__version__ = "0.1.0"

from typing import Any, Callable

from strata.frontend.inspection.logs import configure_from_env as _configure_logs
from strata.frontend.inspection.logs import set_logs

_configure_logs()

from strata.codegen.triton_ptxas import pin_ptxas as _pin_ptxas

_pin_ptxas()


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

    Unlike torch.compile, `mode` and `options` may be given together (options win).
    Both are checked here, before anything is traced: an unknown mode or option, or a
    value an option does not take, raises ValueError (TypeError for `options` that is
    no dict, or a `mode` that is no str). The result pickles as torch.compile's does."""
    import torch

    from strata.frontend.backend import make_backend

    backend = make_backend(mode, options)

    def compile_one(m: Callable):
        if backend.options["dynamo_cache"] and not disable:
            from strata.frontend.caches import dynamo_cache

            compiled = dynamo_cache.compile(m, backend, backend.options, fullgraph, dynamic)
            if compiled is not None:  # None: this torch lacks the machinery (it warned)
                return compiled
        return torch.compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend, disable=disable)

    return compile_one if model is None else compile_one(model)


def list_options() -> dict[str, Any]:
    """Every compile option and its default."""
    from strata.frontend.options import list_options as _list

    return _list()


def list_mode_options(mode: str | None = None) -> dict[str, Any]:
    """The options each mode sets, as torch._inductor.list_mode_options does."""
    from strata.frontend.options import list_mode_options as _list

    return _list(mode)


def explain(fn: Callable, *args: Any, **kwargs: Any):
    """What strata makes of `fn(*args, **kwargs)`: Dynamo's graph breaks, then for each
    graph its ops per level, kernels (with the aten ops and source lines each fuses),
    library calls, eager fallbacks with the reason, compile time per pass, and the
    estimated bytes moved. Prints the report and returns it (an ExplainReport).

    Keywords for strata itself: `options`, `mode`, `dynamic`, `print_report` (default
    True); any other keyword goes to fn. fn runs twice: once under Dynamo's explain,
    once compiled."""
    from strata.frontend.inspection.explain import explain as _explain

    return _explain(fn, *args, **kwargs)
