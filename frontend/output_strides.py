"""The strides eager gives a graph's results, which strata's results keep.

torch.compile returns what eager returns, strides included: `torch.relu(x) + 1` of a
channels-last `x` is channels-last in eager and under TorchInductor, and so is a
convolution of it; `x.t() + 1` is laid out as `x.t()` is. The FX graph's output
FakeTensors carry those strides (torch's meta functions gave them).

They travel as IR, so that every cache (graph, capture, dynamo) keeps them with the
program: the importer puts them on `func.func @graph` as the result attribute
`strata.strides`, as it does an input's, and `annotate` puts on the lowered kernel.program, as
`strata.result_strides`, those of the results whose layout is a dense permutation of
the dims other than row-major (channels-last, a transpose). A kernel writes such a
result in that layout itself (passes/fusion/layouts.py, `result_layouts`), a convolution
keeps the one torch gives it, and the runtime copies what is left (a library result in
another layout) into it (runtime/compiled_graph.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, ModuleOp

from strata.dialects import kernel as kd
from strata.dialects.prim import dims_attr, dims_of
from strata.dialects.types import Dim, TensorType
from strata.passes.fusion.layouts import is_permuted_dense
from strata.runtime.layouts import RESULT_STRIDES_ATTR

STRIDES = "strata.strides"


def wanted(module: ModuleOp) -> list[tuple[Dim, ...] | None]:
    """For each result of @graph, the strides it must have where they are a dense
    layout other than row-major, else None (read before the pipeline replaces @graph)."""
    fn = _graph(module)
    if fn is None or fn.res_attrs is None:
        return []
    out: list[tuple[Dim, ...] | None] = []
    for t, attrs in zip(fn.function_type.outputs.data, fn.res_attrs.data):
        given = attrs.data.get(STRIDES)
        strides = tuple(dims_of(given)) if isinstance(given, ArrayAttr) else None
        keep = isinstance(t, TensorType) and strides is not None and len(strides) == t.rank
        out.append(strides if keep and is_permuted_dense(t.dims, strides) else None)
    return out


def annotate(module: ModuleOp, strides: Sequence[tuple[Dim, ...] | None]) -> None:
    """Puts the results' strides on the kernel.program (an empty list: as it is made)."""
    if not any(s is not None for s in strides):
        return
    program = next((op for op in module.ops if isinstance(op, kd.ProgramOp)), None)
    if program is not None and len(program.function_type.outputs.data) == len(strides):
        program.attributes[RESULT_STRIDES_ATTR] = ArrayAttr([dims_attr(s or ()) for s in strides])


def _graph(module: ModuleOp) -> func.FuncOp | None:
    return next((op for op in module.ops if isinstance(op, func.FuncOp)), None)
