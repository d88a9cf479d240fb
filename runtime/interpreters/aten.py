"""The aten dialect's reference semantics: each op runs as its eager torch kernel.

One implementation serves every aten op class (the ~190 Core ATen overloads and
`aten.call`): `call_eager` assembles the overload's arguments from the operand values
and the op's properties, decoding symbolic ints under the current bindings.
"""

from __future__ import annotations

from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from strata.dialects import aten
from strata.runtime.interpreters import symbols


class AtenFunctions(InterpreterFunctions):
    """Runs aten ops eagerly (registered below for every aten op class)."""

    def run_aten(self, interpreter: Interpreter, op: aten.AtenOp, args: PythonValues) -> PythonValues:
        # One value per result: a Tensor[] result (split_with_sizes) is one per element.
        return tuple(aten.call_eager(op, list(args), symbols.current(interpreter)))


for _cls in (*aten.CORE_OPS.values(), aten.CallOp):
    setattr(AtenFunctions, f"run_{_cls.__name__}", impl(_cls)(AtenFunctions.run_aten))
register_impls(AtenFunctions)
