"""prim's complex boundary and FFTs: prim itself stays real.

A complex tensor of dims S is, below the aten level, a real tensor of dims S + [2]
holding (real, imaginary) pairs: torch.view_as_real's layout, f32 for c64 and f64 for
c128 (passes/decompositions/complex_values.py). Two ops cross between the forms,
where a complex value enters the program (a graph input, an eager fallback's result)
or leaves it (a graph output, a fallback's operand); both are library calls, so no
kernel ever sees a complex element.

- `prim.view_as_real`: complex [S] → pairs [S, 2]: torch.view_as_real.
- `prim.view_as_complex`: pairs [S, 2] → complex [S]: torch.view_as_complex.

The FFTs are library calls on pairs whose reference is ATen's own FFT kernels (pocketfft
or MKL on CPU, cuFFT on CUDA), called on the complex view of the pairs, so that
results, normalizations and half-spectrum conventions are eager's:

- `prim.fft_r2c`: real [S] → pairs over `dim`, the last of them halved
  (n // 2 + 1) when `onesided`: aten._fft_r2c.
- `prim.fft_c2r`: pairs → real, the last of `dim` becoming `last_dim_size`:
  aten._fft_c2r (the input holds the half spectrum of a Hermitian signal).
- `prim.fft_c2c`: pairs → pairs, forward or inverse: aten._fft_c2c.

`normalization` is ATen's fft_norm_mode: 0 none, 1 by 1/sqrt(n), 2 by 1/n.
"""

from __future__ import annotations

from collections.abc import Sequence

from strata.dialects.lazy_torch import torch
from xdsl.dialects.builtin import DenseArrayBase, IntegerAttr, i64
from xdsl.ir import Attribute, SSAValue
from xdsl.irdl import irdl_op_definition, operand_def, prop_def, result_def
from xdsl.utils.exceptions import VerifyException

from strata.dialects.prim import TensorOp, ints_attr, ints_of
from strata.dialects.types import COMPLEX_DTYPES, Dim, TensorType, sym

PART_DTYPES = tuple(COMPLEX_DTYPES.values())  # f32, f64
COMPLEX_OF = {part: c for c, part in COMPLEX_DTYPES.items()}
NORM_MODES = (0, 1, 2)


def pairs_type(t: TensorType) -> TensorType:
    """The pair form of complex type t: dims + [2], of its parts' dtype."""
    return TensorType([*t.dims, 2], COMPLEX_DTYPES[t.dtype])


def _pairs(op: TensorOp, v: SSAValue) -> TensorType:
    t = op.tensor(v)
    if t.rank < 1 or sym(t.dims[-1]) != 2 or t.dtype not in PART_DTYPES:
        raise VerifyException(f"{op.name}: expected (real, imag) pairs [..., 2] of f32 or f64, got {t}")
    return t


@irdl_op_definition
class ViewAsRealOp(TensorOp):
    """A complex tensor [S] as its (real, imag) pairs [S, 2]."""

    name = "prim.view_as_real"
    x = operand_def()
    result = result_def()

    def __init__(self, x: SSAValue):
        super().__init__(operands=[x], result_types=[pairs_type(x.type)])

    def infer_type(self) -> Attribute:
        t = self.tensor(self.x)
        if t.dtype not in COMPLEX_DTYPES:
            raise VerifyException(f"prim.view_as_real: expected a complex tensor, got {t}")
        return pairs_type(t)

    def reference(self, x):
        return torch.view_as_real(x.resolve_conj())  # a lazily conjugated input is made physical


@irdl_op_definition
class ViewAsComplexOp(TensorOp):
    """(real, imag) pairs [S, 2] as a complex tensor [S]."""

    name = "prim.view_as_complex"
    x = operand_def()
    result = result_def()

    def __init__(self, x: SSAValue):
        t = x.type
        super().__init__(operands=[x], result_types=[TensorType(t.dims[:-1], COMPLEX_OF[t.dtype])])

    def infer_type(self) -> Attribute:
        t = _pairs(self, self.x)
        return TensorType(t.dims[:-1], COMPLEX_OF[t.dtype])

    def reference(self, x):
        return torch.view_as_complex(x.contiguous())  # it needs unit stride over the pair


class FftOp(TensorOp):
    """An FFT over the dims `dim` of the (complex) signal, by ATen's kernel."""

    def signal_dims(self, rank: int) -> list[int]:
        dims = ints_of(self.dim)
        if not dims or any(not 0 <= d < rank for d in dims) or len(set(dims)) != len(dims):
            raise VerifyException(f"{self.name}: dims {dims} are not distinct dims of a rank-{rank} signal")
        if self.normalization.value.data not in NORM_MODES:
            raise VerifyException(f"{self.name}: normalization {self.normalization.value.data} is not one of {NORM_MODES}")
        return dims


def _fft_props(dim: Sequence[int], normalization: int, **flags: int) -> dict[str, Attribute]:
    props: dict[str, Attribute] = {"dim": ints_attr(dim), "normalization": IntegerAttr(normalization, i64)}
    props.update({k: IntegerAttr(v, i64) for k, v in flags.items()})
    return props


@irdl_op_definition
class FftR2cOp(FftOp):
    """The FFT of a real signal [S] over `dim` as pairs; with `onesided` the last of
    `dim` keeps n // 2 + 1 bins (the rest are conjugates): aten._fft_r2c."""

    name = "prim.fft_r2c"
    x = operand_def()
    result = result_def()
    dim = prop_def(DenseArrayBase)
    normalization = prop_def(IntegerAttr)
    onesided = prop_def(IntegerAttr)

    def __init__(self, x: SSAValue, dim: Sequence[int], normalization: int, onesided: bool):
        super().__init__(
            operands=[x],
            result_types=[_r2c_type(x.type, list(dim), onesided)],
            properties=_fft_props(dim, normalization, onesided=int(onesided)),
        )

    def infer_type(self) -> Attribute:
        t = self.tensor(self.x)
        if t.dtype not in PART_DTYPES:
            raise VerifyException(f"prim.fft_r2c: expected an f32 or f64 signal, got {t}")
        return _r2c_type(t, self.signal_dims(t.rank), bool(self.onesided.value.data))

    def reference(self, x):
        out = torch.ops.aten._fft_r2c(x, ints_of(self.dim), self.normalization.value.data, bool(self.onesided.value.data))
        return torch.view_as_real(out)


def _r2c_type(t: TensorType, dim: list[int], onesided: bool) -> TensorType:
    dims: list[Dim] = list(t.dims)
    if onesided:
        dims[dim[-1]] = sym(dims[dim[-1]]) // 2 + 1
    return TensorType([*dims, 2], t.dtype)


@irdl_op_definition
class FftC2rOp(FftOp):
    """The real signal whose half spectrum the pairs hold, over `dim`; the last of
    `dim` becomes `last_dim_size` long: aten._fft_c2r."""

    name = "prim.fft_c2r"
    x = operand_def()
    result = result_def()
    dim = prop_def(DenseArrayBase)
    normalization = prop_def(IntegerAttr)
    last_dim_size = prop_def(IntegerAttr)

    def __init__(self, x: SSAValue, dim: Sequence[int], normalization: int, last_dim_size: int):
        super().__init__(
            operands=[x],
            result_types=[_c2r_type(x.type, list(dim), last_dim_size)],
            properties=_fft_props(dim, normalization, last_dim_size=last_dim_size),
        )

    def infer_type(self) -> Attribute:
        t = _pairs(self, self.x)
        size = self.last_dim_size.value.data
        if size < 1:
            raise VerifyException(f"prim.fft_c2r: last_dim_size {size} is not positive")
        return _c2r_type(t, self.signal_dims(t.rank - 1), size)

    def reference(self, x):
        signal = torch.view_as_complex(x.contiguous())
        return torch.ops.aten._fft_c2r(signal, ints_of(self.dim), self.normalization.value.data, self.last_dim_size.value.data)


def _c2r_type(t: TensorType, dim: list[int], last_dim_size: int) -> TensorType:
    dims: list[Dim] = list(t.dims[:-1])
    dims[dim[-1]] = last_dim_size
    return TensorType(dims, t.dtype)


@irdl_op_definition
class FftC2cOp(FftOp):
    """The FFT (`forward`) or inverse FFT of pairs over `dim`, as pairs of the same
    dims: aten._fft_c2c."""

    name = "prim.fft_c2c"
    x = operand_def()
    result = result_def()
    dim = prop_def(DenseArrayBase)
    normalization = prop_def(IntegerAttr)
    forward = prop_def(IntegerAttr)

    def __init__(self, x: SSAValue, dim: Sequence[int], normalization: int, forward: bool):
        super().__init__(
            operands=[x], result_types=[x.type], properties=_fft_props(dim, normalization, forward=int(forward))
        )

    def infer_type(self) -> Attribute:
        t = _pairs(self, self.x)
        self.signal_dims(t.rank - 1)
        return t

    def reference(self, x):
        signal = torch.view_as_complex(x.contiguous())
        out = torch.ops.aten._fft_c2c(signal, ints_of(self.dim), self.normalization.value.data, bool(self.forward.value.data))
        return torch.view_as_real(out)


COMPLEX_OPS = (ViewAsRealOp, ViewAsComplexOp, FftR2cOp, FftC2rOp, FftC2cOp)
# Their results share their operand's memory (the runtime's memory plan must know).
COMPLEX_VIEW_OPS = (ViewAsRealOp, ViewAsComplexOp)
