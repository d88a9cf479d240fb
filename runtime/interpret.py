"""The reference interpreter of the aten and prim levels.

It walks a `func.func` and runs each aten op as its eager kernel and each prim op as
its reference implementation: a lowering is correct when interpreting before and after
it gives the same values. The work is done by the interpreter functions in
runtime/interpreters/ (xDSL's interpreter framework); this module keeps the entry
point that tests and tools call.
"""

from __future__ import annotations

from strata.runtime.interpreters import graph_func, interpret, interpret_module

__all__ = ["graph_func", "interpret", "interpret_module"]
