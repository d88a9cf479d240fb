"""linalg_eig → prim.eig (dialects/prim_linalg_eig.py): LAPACK's geev as a library
call on a real f32/f64 batch, its complex eigenvalues and eigenvectors returned as
pairs. eigvals reaches the graph as linalg_eig's first result. A complex input
declines (prim.eig takes real matrices)."""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import SSAValue

from strata.dialects.aten import AtenOp
from strata.dialects.prim import types_match
from strata.dialects.prim_complex import pairs_type
from strata.dialects.prim_linalg_eig import EigOp
from strata.passes.decompositions.builder import Decline, PrimBuilder
from strata.passes.decompositions.complex_values import complex_of, decomposes_complex, is_complex
from strata.passes.decompositions.lapack import _matrix


@decomposes_complex("aten::linalg_eig")
def eig(op: AtenOp, b: PrimBuilder) -> Sequence[SSAValue]:
    if is_complex(b.arg("self")):
        raise Decline("eig of a complex matrix")
    call = EigOp(_matrix(b, "self"))
    for i, r in enumerate(call.results):
        if not types_match(r.type, pairs_type(b.out(i))):
            raise Decline(f"prim.eig gives {r.type} where the aten op declares {b.out(i)}")
    b.add(call)
    return [complex_of(b, r) for r in call.results]
