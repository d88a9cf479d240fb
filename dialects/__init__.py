"""strata's dialects: types.py (the tensor type), aten, prim, kernel.

prim is imported with the package: its op families in prim_*.py build on prim.py's
classes, and prim.py imports them at its end to register them, so that any import
order (`from strata.dialects.prim_random import ...` first, too) finds prim whole."""

from strata.dialects import prim as _prim  # noqa: F401
