"""igamma and igammac (torch.special.gammainc / gammaincc), onto prim.igamma and
prim.igammac (dialects/prim_igamma.py).

Operands promote to their common dtype as eager's binary kernels do; eager has
kernels for floating dtypes only (two integer or bool tensors raise), so a
non-floating common dtype declines. f16/bf16 compute in f32 and round once, as
ATen's Half kernels call calc_igamma<float>.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from strata.dialects.aten import AtenOp
from strata.dialects.types import is_float
from strata.dialects.attributes import graph_device
from strata.passes.decompositions.builder import Decline, PrimBuilder, promote
from strata.passes.decompositions.rules import decomposes


def _rule(prim_name: str):
    def rule(op: AtenOp, b: PrimBuilder) -> SSAValue:
        if graph_device(op) == "cuda":
            # ATen's asymptotic series is 625 unrolled steps in Triton (its coefficients
            # are a table Triton cannot index): 70 s to compile one f32 kernel on an
            # H200's host, more for f64. Eager's kernel, as Inductor does.
            raise Decline(f"{prim_name}'s Triton code takes over a minute to compile for a GPU")
        args = [b.arg("self"), b.arg("other")]
        if not is_float(promote("DEFAULT", *args)[1]):
            raise Decline(f"eager has no {prim_name} kernel for integer or bool operands")
        return b.pointwise("DEFAULT", args, lambda a, x: b.ew(prim_name, a, x))

    return rule


decomposes("aten::igamma")(_rule("igamma"))
decomposes("aten::igammac")(_rule("igammac"))
