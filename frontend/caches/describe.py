"""A value as plain data that is the same in every process (Describer), for keys and
checks that must not depend on ids or addresses: frontend/caches/dynamo_cache.py's
fingerprint of a model and frontend/caches/identity_guards.py's record of what an identity
guard saw."""

from __future__ import annotations

import enum
import functools
import hashlib
import types
from typing import Any

import torch


def codes(code: types.CodeType):
    yield code
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            yield from codes(c)


def code_digest(code: types.CodeType) -> str:
    h = hashlib.sha256()
    for c in codes(code):
        h.update(c.co_code)
        h.update(repr([v for v in c.co_consts if not isinstance(v, types.CodeType)]).encode())
        h.update(repr(c.co_names).encode())
    return h.hexdigest()[:16]


def qualname(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', getattr(obj, '__name__', '?'))}"


class Describer:
    """A value as plain data that is the same in every process: primitives by value,
    tensors by their metadata, functions, classes and modules by name, modules as a
    reference (their contents are walked separately), other objects by their class and
    attributes, a few levels deep. Never an id or an address."""

    DEPTH = 4

    def __init__(self) -> None:
        self.memo: dict[int, Any] = {}

    def __call__(self, value: Any, modules: list, depth: int = 0) -> Any:
        if value is None or isinstance(value, bool | int | float | complex | str | bytes):
            return (type(value).__name__, value)
        if isinstance(value, torch.nn.Module):
            if all(m is not value for m in modules):
                modules.append(value)
            return ("module", qualname(type(value)))
        if isinstance(value, torch.Tensor):
            return ("tensor", type(value).__name__, tuple(value.shape), str(value.dtype), str(value.device),
                    value.requires_grad)
        if isinstance(value, torch.dtype | torch.device | torch.Size | torch.memory_format | torch.layout | enum.Enum):
            return (type(value).__name__, str(value))
        if isinstance(value, types.ModuleType):
            return ("pymodule", value.__name__)
        if isinstance(value, types.FunctionType):  # by name and code: which function, in any process
            return ("function", qualname(value), code_digest(value.__code__))
        if isinstance(value, types.CodeType):
            return ("code", value.co_qualname if hasattr(value, "co_qualname") else value.co_name, code_digest(value))
        if isinstance(value, type | types.BuiltinFunctionType | types.MethodDescriptorType
                      | types.WrapperDescriptorType | torch._ops.OpOverload | torch._ops.OpOverloadPacket):
            return ("named", qualname(value))
        if depth >= self.DEPTH:
            return ("deep", qualname(type(value)))
        if isinstance(value, types.MethodType):
            return ("method", qualname(value.__func__), self(value.__self__, modules, depth + 1))
        if isinstance(value, functools.partial):
            return ("partial", self(value.func, modules, depth + 1), self(value.args, modules, depth + 1),
                    self(value.keywords, modules, depth + 1))
        if isinstance(value, list | tuple):
            return (type(value).__name__, [self(v, modules, depth + 1) for v in value])
        if isinstance(value, set | frozenset):
            return (type(value).__name__, sorted(repr(self(v, modules, depth + 1)) for v in value))
        if isinstance(value, dict):
            return (type(value).__name__, sorted((repr(k), repr(self(v, modules, depth + 1))) for k, v in value.items()))
        key = id(value)
        if key not in self.memo:  # shared objects (a model's config) are described once
            attrs = getattr(value, "__dict__", None)
            self.memo[key] = ("object", qualname(type(value)),
                              None if not isinstance(attrs, dict) else self(attrs, modules, depth + 1))
        return self.memo[key]
