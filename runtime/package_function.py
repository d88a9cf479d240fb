"""A strata package as the compiled function of torch's own ahead-of-time path.

torch (2.10 and later) saves a function compiled with `torch.compile(f,
fullgraph=True).aot_compile(...)` through `save_compiled_function` and loads it with
`torch.compiler.load_compiled_function`, if the backend's compiled graph is a
`SerializableCallable`: it serializes itself to bytes and is made again from them in
the loading process. With backend="strata" that callable is a strata package of the
Dynamo graph (frontend/packaging/aot_function.py makes it): the loading process runs it with no
strata compile, as strata.aot.load_package does.
"""

from __future__ import annotations

from typing import Any

try:
    from torch._dynamo.aot_compile_types import SerializableCallable
except ImportError:  # a torch without the protocol: nothing subclasses it there
    SerializableCallable = object  # type: ignore[assignment, misc]


class PackagedFunction(SerializableCallable):
    """A Dynamo graph's compiled form: the package's bytes, loaded."""

    def __init__(self, data: bytes):
        from strata.runtime.package_loader import load_package

        self.data = data
        self._run = load_package(data)

    @classmethod
    def serialize_compile_artifacts(cls, fn: PackagedFunction) -> bytes:
        return fn.data

    @classmethod
    def deserialize_compile_artifacts(cls, data: bytes) -> PackagedFunction:
        return cls(data)

    def __call__(self, *args: Any) -> Any:
        return self._run(*args)
