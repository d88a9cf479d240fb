"""Hypothesis strategies for random, well-typed strata programs.

    from hypothesis import given
    from strata.testing import strategies as sst
    from strata.testing.checks import check_values

    @given(sst.aten_programs())
    def test_my_pass(program):
        after = program.module.clone()
        MyPass().apply(strata_context(), after)
        assert check_values(program.module, after, program.spec) is None

A `Program` is a module holding `func.func @graph` and an `InputSpec`
(testing/inputs.py): the seed of its input values and the sizes its shape symbols are
bound to. Its text and spec reproduce it completely:
`strata-opt program.mlir -p <pass> --check-values <spec>`.

What the generators draw (the details live in the modules named):
- inputs of rank 0 to 3 whose dims are small literals (0 and 1 among them) or shape
  symbols (s0, s1), bound at run time to sizes that include 0 and 1; dtypes: one
  floating dtype per program (f32, f16 or bf16), i64 and i1; layouts contiguous,
  permuted, with gaps (stride 2) or broadcast (stride 0), recorded in the
  `strata.strides` argument attribute as the importer does; symbols that no tensor
  binds arrive as `index` arguments, as SymInts do (testing/graphs.py);
- op sequences where any earlier value may be read again (fan-out and reuse) and be
  returned, with broadcasting between ranks and sizes 1;
- `aten_programs` (testing/aten_programs.py): Core ATen overloads as traced graphs hold
  them (elementwise with scalars and torch's promotion, reductions, softmax, views,
  cat, matmuls, creation, casts) and overloads outside the core set (`aten.call`);
  torch runs every op on stand-in tensors first, so programs are ones torch accepts;
- `prim_programs` (testing/prim_programs.py): every prim op, with explicit broadcasts
  and conversions; `favour=("prim.pow",)` and `constants=(2.0,)` aim them at a pattern,
  and `strata.testing.reach` counts the programs a pass changes (docs/writing-a-pass.md);
- `op_zoo(dialect)` (testing/op_zoo.py): one op of every op class of a dialect, for
  the printer and parser.
"""

from __future__ import annotations

from hypothesis import strategies as st

from strata.testing.aten_programs import aten_programs
from strata.testing.graphs import (
    GeneratorError,
    Program,
    broadcast_dims,
    contiguous_strides,
    dims_strategy,
    input_specs,
    layouts,
    tensor_types,
)
from strata.testing.op_zoo import op_zoo
from strata.testing.prim_programs import prim_programs


def programs(level: str, **kwargs) -> st.SearchStrategy[Program]:
    """aten_programs or prim_programs, by level name."""
    return {"aten": aten_programs, "prim": prim_programs}[level](**kwargs)


__all__ = [
    "GeneratorError",
    "Program",
    "aten_programs",
    "broadcast_dims",
    "contiguous_strides",
    "dims_strategy",
    "input_specs",
    "layouts",
    "op_zoo",
    "prim_programs",
    "programs",
    "tensor_types",
]
