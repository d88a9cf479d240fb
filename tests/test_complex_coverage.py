"""Complex values and FFTs (dialects/prim_complex.py, passes/decompositions/complex_*.py,
fft.py): compiled on CPU with no eager fallback allowed and compared with eager,
edge values included; the Triton interpreter path for complex arithmetic; and an op of
complex values without a rule running eagerly at a correct boundary."""

from __future__ import annotations

import math
import warnings

import pytest
import torch

import strata
from strata.testing.no_fallback import compiled
from strata.dialects.prim_complex import FftC2rOp, FftR2cOp, ViewAsComplexOp
from strata.dialects.types import TensorType
from strata.passes.decompositions.builder import Decline


def _compiled(fn, *args, options=None):
    return compiled(fn, *args, options=options)


def _same(got, want):
    if isinstance(want, torch.Tensor):
        assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
        torch.testing.assert_close(got.resolve_conj(), want.resolve_conj(), equal_nan=True)
        return
    assert len(got) == len(want)
    for g, w in zip(got, want):
        _same(g, w)


def _complex(*shape, dtype=torch.complex64, specials=True):
    torch.manual_seed(0)
    z = torch.randn(*shape, dtype=dtype)
    if specials:  # zeros, large, negative, inf and NaN parts
        flat = torch.view_as_real(z).view(-1)
        values = [0.0, -0.0, 1e30, -3.5, math.inf, -math.inf, math.nan]
        flat[: len(values)] = torch.tensor(values, dtype=flat.dtype)
    return z


# ---------------------------------------------------------------- FFTs
FFTS = {
    "fft": lambda x: torch.fft.fft(x),
    "fft_n": lambda x: torch.fft.fft(x, n=11, norm="ortho"),
    "ifft": lambda x: torch.fft.ifft(x, dim=0),
    "fft2": lambda x: torch.fft.fft2(x, s=(3, 9)),
    "ifftn": lambda x: torch.fft.ifftn(x, norm="forward"),
    "rfft": lambda x: torch.fft.rfft(x),
    "rfft2": lambda x: torch.fft.rfft2(x, norm="ortho"),
    "rfftn": lambda x: torch.fft.rfftn(x, s=(4, 6)),
    "irfft": lambda x: torch.fft.irfft(x),
    "irfft_n": lambda x: torch.fft.irfft(x, n=7),
    "irfft2": lambda x: torch.fft.irfft2(x),
    "irfftn": lambda x: torch.fft.irfftn(x, norm="forward"),
    "hfft": lambda x: torch.fft.hfft(x),
    "hfft2": lambda x: torch.fft.hfft2(x),
    "hfftn": lambda x: torch.fft.hfftn(x, s=(5, 6)),
    "ihfft": lambda x: torch.fft.ihfft(x),
    "ihfft2": lambda x: torch.fft.ihfft2(x),
    "ihfftn": lambda x: torch.fft.ihfftn(x, norm="ortho"),
    "stft": lambda x: torch.stft(x, 8, hop_length=3, window=torch.hann_window(8), return_complex=True),
    "stft_real": lambda x: torch.stft(x, 8, window=torch.hann_window(8), return_complex=False),
}


@pytest.mark.parametrize("name", FFTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_fft_matches_eager(name, dtype):
    if name.startswith("stft") and not dtype.is_floating_point:
        pytest.skip("eager's stft takes floating signals only")
    torch.manual_seed(0)
    x = (torch.randn(5, 16) * 4).to(dtype)
    fn = FFTS[name]
    _same(_compiled(fn, x), fn(x))


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_fft_of_complex_input_and_edge_values(dtype):
    z = _complex(4, 8, dtype=dtype)
    for fn in (lambda z: torch.fft.fft(z), lambda z: torch.fft.ifft2(z), lambda z: torch.fft.irfft(z), lambda z: torch.fft.hfft(z)):
        _same(_compiled(fn, z), fn(z))


def test_fft_round_trips():
    torch.manual_seed(0)
    x = torch.randn(6, 10, dtype=torch.float64)

    def fn(x):
        return torch.fft.irfft(torch.fft.rfft(x), n=10), torch.fft.ifft(torch.fft.fft(x)).real

    got = _compiled(fn, x)
    _same(got, fn(x))
    torch.testing.assert_close(got[0], x)
    torch.testing.assert_close(got[1], x)


def test_istft_of_a_complex_input():
    torch.manual_seed(0)
    x = torch.randn(40)
    window = torch.hann_window(8)
    spec = torch.stft(x, 8, window=window, return_complex=True)
    fn = lambda s: torch.istft(s, 8, window=torch.hann_window(8))  # noqa: E731
    _same(_compiled(fn, spec), fn(spec))


def test_fft_prim_ops_verify_their_types():
    x = TensorType([4, 10], "f32")
    from xdsl.ir import Block

    arg = Block(arg_types=[x]).args[0]
    r2c = FftR2cOp(arg, [1], 0, True)
    assert r2c.result.type == TensorType([4, 6, 2], "f32")
    r2c.verify()
    c2r = FftC2rOp(r2c.result, [1], 2, 10)
    assert c2r.result.type == TensorType([4, 10], "f32")
    c2r.verify()
    assert ViewAsComplexOp(r2c.result).result.type == TensorType([4, 6], "c64")


# ---------------------------------------------------------------- complex arithmetic
def _arith(z, w, r):
    a = z * w + z / w - 2.5 * z
    b = torch.view_as_complex(torch.stack([r, r], -1))
    c = (a * r).conj() + b.sum(0) + z.mean(0)
    return (
        c.real, c.imag, c.abs(), c.angle(), torch.view_as_real(c), c.t(), c[1:, 0],
        torch.cat([c, z]), torch.where(r > 0, c, z), c.to(torch.complex128), -c, c - w * 3,
        z / r, r / z, z.sum(), z.unsqueeze(0).expand(2, 3, 4).reshape(6, 4), z.to(torch.float32),
    )


@pytest.mark.parametrize("dtype", [torch.complex64, torch.complex128])
def test_complex_arithmetic_graph(dtype):
    z, w = _complex(3, 4, dtype=dtype), _complex(3, 4, dtype=dtype, specials=False).flip(1)
    w[0, 0], w[0, 1] = 0, complex(0, 1e-30)  # a zero divisor and a tiny one
    r = torch.randn(3, 4, dtype=torch.float64 if dtype == torch.complex128 else torch.float32)
    r[1, 1] = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # z.to(float) warns that it drops the imaginary part
        _same(_compiled(_arith, z, w, r), _arith(z, w, r))


def test_complex_division_edges():
    # c10::complex's scaled division: |c| >= |d| and |c| < |d|, zeros, infinities
    parts = [0.0, 1.0, -2.0, 1e30, 1e-30, math.inf, math.nan]
    grid = torch.tensor([complex(a, b) for a in parts for b in parts], dtype=torch.complex128)
    z, w = grid.repeat_interleave(len(grid)), grid.repeat(len(grid))
    fn = lambda z, w: z / w  # noqa: E731
    _same(_compiled(fn, z, w), fn(z, w))


def test_complex_graph_inputs_and_outputs_keep_values():
    z = _complex(2, 3)
    fn = lambda z: (z, z.permute(1, 0), torch.view_as_real(z) * 2)  # noqa: E731
    _same(_compiled(fn, z), fn(z))
    conj_input = _complex(2, 3).conj()  # a lazily conjugated input
    _same(_compiled(lambda z: z * 1, conj_input), conj_input * 1)


def test_empty_and_0d_complex():
    fn = lambda z: (z * z + 1, z.abs(), z.sum())  # noqa: E731
    for z in (torch.zeros(0, 3, dtype=torch.complex64), torch.tensor(complex(1.5, -2.0))):
        _same(_compiled(fn, z), fn(z))


def test_complex_graph_on_triton_interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    z, w = _complex(3, 5), _complex(3, 5, specials=False)
    fn = lambda z, w: (z * w - z.conj() / w, (z + w).abs(), torch.view_as_real(z).sum(-1))  # noqa: E731
    _same(_compiled(fn, z, w, options={"codegen": "triton"}), fn(z, w))


# ---------------------------------------------------------------- no rule: eager, correctly
def test_complex_op_without_rule_falls_back_correctly():
    z = _complex(3, 4, specials=False)
    fn = lambda z: (torch.exp(z * 2) + 1).abs()  # noqa: E731  exp of a complex has no rule
    torch._dynamo.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = strata.compile(fn, dynamic=False)(z)
    assert any("aten::exp" in str(w.message) and "no lowering covers" in str(w.message) for w in caught)
    _same(got, fn(z))


def test_complex_python_scalar_declines():
    from strata.passes.decompositions import complex_ops

    class FakeBuilder:
        def arg(self, name):
            return 2j

    with pytest.raises(Decline):
        complex_ops._operand(FakeBuilder(), "other", "f32")
