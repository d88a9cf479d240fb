"""A fix for Triton 3.6's interpreter under NumPy 2: a scalar as a Python int.

The interpreter holds a scalar (a program id, an int argument, a reduction's result)
as a one-element NumPy array, and Triton 3.6 converts it for `range(...)` and indexing
with `int(array)`, which NumPy 2 refuses for arrays of one dimension ("only
0-dimensional arrays can be converted to Python scalars"). So every interpreted kernel
with a loop bound known only at run time failed there. Later Triton squeezes the array
first; `install` makes 3.6 do the same. It is a no-op on a Triton that needs nothing.
"""

from __future__ import annotations

import functools


@functools.cache
def install() -> bool:
    """Patch the interpreter's tensor conversion once; True where it was needed."""
    try:
        from triton.runtime import interpreter
    except ImportError:  # pragma: no cover - a Triton without the interpreter
        return False
    return patch_interpreter(interpreter)


def patch_interpreter(interpreter) -> bool:
    """Make `interpreter` (Triton's module) convert a one-element scalar to an int;
    True where its own conversion refused to."""
    patch = getattr(interpreter, "_patch_lang_tensor", None)
    if patch is None or _converts_one_element_arrays(patch):
        return False

    def patch_lang_tensor(tensor, scope):
        patch(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))

    interpreter._patch_lang_tensor = patch_lang_tensor
    return True


def _converts_one_element_arrays(patch) -> bool:
    """Whether `patch`'s `__index__` already takes a one-element array."""
    import numpy

    class Scope:
        def __init__(self):
            self.attrs = {}

        def set_attr(self, obj, name, value):
            self.attrs[name] = value

    class Handle:
        data = numpy.array([3])

    class Tensor:
        handle = Handle()

    scope = Scope()
    try:
        patch(Tensor, scope)
        return scope.attrs["__index__"](Tensor()) == 3
    except TypeError:
        return False
    except Exception:  # noqa: BLE001 - an interpreter of another shape: leave it alone
        return True
