"""The prim dialect's reference semantics: each op's own `reference` (torch code).

The same implementation serves both forms of a prim op: on whole tensors in a
`func.func`, and on the scalars of a kernel body, which the kernel interpreter
represents as tensors with one value per point of the iteration domain.
"""

from __future__ import annotations

from xdsl.interpreter import Interpreter, InterpreterFunctions, PythonValues, impl, register_impls

from strata.dialects import prim
from strata.dialects.prim import PrimOp


class PrimFunctions(InterpreterFunctions):
    """Runs prim ops by their reference (registered below for every prim op class)."""

    def run_prim(self, interpreter: Interpreter, op: PrimOp, args: PythonValues) -> PythonValues:
        # Shape symbols in properties (reshape sizes, slice bounds) are read through
        # `bound_symbols`, which the run that called us has set.
        out = op.reference(*args)
        return tuple(out) if len(op.results) > 1 else (out,)


for _cls in prim.Prim.operations:
    setattr(PrimFunctions, f"run_{_cls.__name__}", impl(_cls)(PrimFunctions.run_prim))
register_impls(PrimFunctions)
