"""torch, imported when first used.

The dialects need torch for their ops' reference implementations and for dtypes, never
to parse, verify or rewrite IR. strata-opt on a prim or kernel program (every lit test
of a pass but decompose's) would otherwise spend seconds importing torch for nothing. A
module reads `torch` from here; the real import happens at the first attribute read
(importlib's LazyLoader), after which it is the ordinary module. Where torch is already
imported (any torch.compile process), this is that module.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_module(name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ImportError(f"no module named {name!r}")
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


def loaded(name: str) -> bool:
    """Whether module `name` has been executed (not just made lazily)."""
    module = sys.modules.get(name)
    return module is not None and type(module) is not importlib.util._LazyModule


torch = lazy_module("torch")


def torch_fn(path: str):
    """`torch.<path>` (dotted, e.g. "special.erfcx") as a function resolved at its first
    call, for tables of reference implementations built when a dialect is imported."""
    resolved = None

    def call(*args, **kwargs):
        nonlocal resolved
        if resolved is None:
            resolved = torch
            for part in path.split("."):
                resolved = getattr(resolved, part)
        return resolved(*args, **kwargs)

    call.__name__ = call.__qualname__ = path.replace(".", "_")  # as torch names them: special_erfcx
    return call
