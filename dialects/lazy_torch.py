"""torch, imported when first used.

The dialects need torch for their ops' reference implementations and for dtypes, never
to parse, verify or rewrite IR. strata-opt on a prim or kernel program (every lit test
of a pass but decompose's) would otherwise spend seconds importing torch for nothing. A
module reads `torch` from here; the real import happens at the first attribute read
(a stand-in that imports it then and reads through to it). Where torch is already
imported (any torch.compile process), this is that module.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType


class _Deferred(ModuleType):
    """A stand-in for a module not imported yet: the first read of an attribute
    imports the module, and each attribute read is kept on the stand-in, so that the
    next read costs what a module's does.

    Not importlib's LazyLoader: on Python 3.12 its module recurses without end when the
    module's own import deletes one of its attributes, as torch's does."""

    def __getattr__(self, attr: str):
        value = getattr(importlib.import_module(self.__name__), attr)
        setattr(self, attr, value)
        return value


def lazy_module(name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    if importlib.util.find_spec(name) is None:
        raise ImportError(f"no module named {name!r}")
    return _Deferred(name)


def loaded(name: str) -> bool:
    """Whether module `name` has been imported (not just stood in for)."""
    return name in sys.modules


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
