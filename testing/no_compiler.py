"""A process that must not import the compiler: the source that makes it so.

Tests of ahead-of-time packages run the loading side in a fresh process whose first
lines are `blocking_preamble(modules)`: each named module (and its submodules) is then
found but cannot be imported, so any import of it fails with an error naming it. Found,
not missing: torch's CUDA start-up asks `importlib.util.find_spec("triton")`, which
must still answer."""

from __future__ import annotations

from collections.abc import Sequence


def blocking_preamble(modules: Sequence[str], why: str = "must not be imported here") -> str:
    """Python source that blocks `modules` for the rest of the process."""
    return f'''
import importlib.abc as _abc, importlib.util as _util, sys as _sys
_BLOCKED = {tuple(modules)!r}


class _Blocked(_abc.MetaPathFinder, _abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in _BLOCKED):
            return _util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        raise ImportError(f"{{spec.name}} {why}")

    def exec_module(self, module):
        pass


_sys.meta_path.insert(0, _Blocked())
'''
