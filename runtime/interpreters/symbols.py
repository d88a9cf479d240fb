"""The shape-symbol bindings that every strata interpreter shares.

A run binds each shape symbol to an int, read off its inputs (runtime/bindings.py);
aten ops need the values to decode symbolic arguments, prim references read them
through `bound_symbols` (dialects/types.py), and kernels size their domains with them.
The interpreter keeps the current bindings as its data, keyed by this module's class.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from xdsl.interpreter import Interpreter, InterpreterFunctions

from strata.dialects.types import bound_symbols


class SymbolBindings(InterpreterFunctions):
    """Owner of the bindings in an interpreter's data (it implements no ops)."""



def current(interpreter: Interpreter) -> dict[str, int]:
    """The bindings of the run in progress."""
    return interpreter.get_data(SymbolBindings, "bindings", dict)


@contextlib.contextmanager
def binding(interpreter: Interpreter, bindings: dict[str, int]) -> Iterator[dict[str, int]]:
    """Binds these symbols for the ops that run inside the block (nested runs, such as
    a kernel launched by a program, see the program's bindings)."""
    outer = current(interpreter)
    merged = {**outer, **bindings}
    interpreter.set_data(SymbolBindings, "bindings", merged)
    try:
        with bound_symbols(merged):
            yield merged
    finally:
        interpreter.set_data(SymbolBindings, "bindings", outer)
