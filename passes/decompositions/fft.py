"""ATen's FFT primitives → prim.fft_r2c / fft_c2r / fft_c2c (dialects/prim_complex.py).

torch.fft.* and stft reach the graph as these three (Core ATen decomposes the rest:
padding, the conjugations of hfft and ihfft, the permutes of stft). The prim ops are
library calls on (real, imag) pairs, run by ATen's own FFT kernels.
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from strata.dialects.aten import AtenOp
from strata.dialects.prim_complex import PART_DTYPES, FftC2cOp, FftC2rOp, FftR2cOp
from strata.passes.decompositions.builder import Decline, PrimBuilder, tensor_of, wrap_dim
from strata.passes.decompositions.complex_values import complex_of, decomposes_complex, pairs


def _signal_dims(b: PrimBuilder, rank: int) -> list[int]:
    dims = b.arg("dim")
    if not dims or any(not isinstance(d, int) for d in dims):
        raise Decline(f"FFT over dims {dims}")
    return [wrap_dim(d, rank) for d in dims]


def _norm(b: PrimBuilder) -> int:
    mode = b.arg("normalization")
    if mode not in (0, 1, 2):
        raise Decline(f"FFT normalization {mode}")
    return mode


@decomposes_complex("aten::_fft_r2c")
def fft_r2c(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x = b.arg("self")
    t = tensor_of(x)
    if t.dtype not in PART_DTYPES:
        raise Decline(f"an FFT of {t.dtype}")  # eager's CPU FFT has no half precision
    fft = FftR2cOp(x, _signal_dims(b, t.rank), _norm(b), bool(b.arg("onesided")))
    return complex_of(b, b.add(fft))


@decomposes_complex("aten::_fft_c2r")
def fft_c2r(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x = b.arg("self")
    size = b.arg("last_dim_size")
    if not isinstance(size, int):
        raise Decline(f"a symbolic last_dim_size {size}")
    return b.add(FftC2rOp(pairs(b, x), _signal_dims(b, tensor_of(x).rank), _norm(b), size))


@decomposes_complex("aten::_fft_c2c")
def fft_c2c(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x = b.arg("self")
    fft = FftC2cOp(pairs(b, x), _signal_dims(b, tensor_of(x).rank), _norm(b), bool(b.arg("forward")))
    return complex_of(b, b.add(fft))
