"""complex(real, imag) and polar(abs, angle): a complex result built from two real
tensors, as (real, imag) pairs (complex_values.py).

Both take two tensors of one floating dtype (f32 → c64, f64 → c128; eager raises on
mixed dtypes and has no kernel for integers) and broadcast them. The formulas are
ATen's kernels' (ComplexKernel.cpp on CPU, ComplexKernel.cu on CUDA):
complex is c10::complex(a, b); polar is c10::complex(a * cos(b), a * sin(b)), so an
infinite abs with a zero angle gives inf + NaN i there too.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from strata.dialects.aten import AtenOp
from strata.passes.decompositions.builder import Decline, PrimBuilder, tensor_of
from strata.passes.decompositions.complex_values import complex_of, decomposes_complex, pack, part_dtype


def _halves(b: PrimBuilder, first: str, second: str) -> tuple[SSAValue, SSAValue]:
    """The two real operands, broadcast to the result's dims; both of the result's
    part dtype, as eager requires."""
    out = b.out()
    dtype = part_dtype(out)
    xs = [b.arg(first), b.arg(second)]
    for x in xs:
        if not isinstance(x, SSAValue) or tensor_of(x).dtype != dtype:
            raise Decline(f"{first} and {second} must both be {dtype} tensors (eager raises otherwise)")
    return b.broadcast(xs[0], out.dims), b.broadcast(xs[1], out.dims)


@decomposes_complex("aten::complex")
def complex_(op: AtenOp, b: PrimBuilder) -> SSAValue:
    re, im = _halves(b, "real", "imag")
    return complex_of(b, pack(b, re, im))


@decomposes_complex("aten::polar")
def polar(op: AtenOp, b: PrimBuilder) -> SSAValue:
    r, theta = _halves(b, "abs", "angle")
    return complex_of(b, pack(b, b.ew("mul", r, b.ew("cos", theta)), b.ew("mul", r, b.ew("sin", theta))))
