"""Elementwise prim ops that work on a number's bits or run a short integer loop:
gcd (Euclid's algorithm), nextafter (one step of the bit pattern, of f32 and f64, and
of f16 and bf16 values held in f32) and the two halves of frexp. They join prim.py's ELEMENTWISE table; their references are torch's own
kernels. Code generation: codegen/llvm_bits.py and codegen/triton_bits.py.

frexp has two results of two dtypes, which an elementwise op cannot: its exponent is
computed as a float of the operand's dtype (exact: at most 1074 in magnitude, and
bf16 and f16 hold every exponent of theirs) and converted to int32 after.
"""

from __future__ import annotations

from strata.dialects.lazy_torch import torch, torch_fn

from strata.dialects.types import is_float


def _float_only(dtype: str) -> bool:
    return is_float(dtype)


def _integral_not_bool(dtype: str) -> bool:
    return not is_float(dtype) and dtype != "i1"


def _f32_or_f64(dtype: str) -> bool:
    return dtype in ("f32", "f64")


def _f32_only(dtype: str) -> bool:
    return dtype == "f32"


def _nextafter_in(half: str):
    """nextafter of f16 (bf16) values held in f32. Kernels compute 16-bit floats in f32
    (passes/fusion/lower.py), where one step of the 16-bit pattern is not one of f32's;
    these ops take the step in the narrow format and give it back in f32, exactly."""
    return lambda x, y: torch.nextafter(x.to(getattr(torch, half)), y.to(getattr(torch, half))).to(torch.float32)


def _frexp_exponent(x: torch.Tensor) -> torch.Tensor:
    return torch.frexp(x).exponent.to(x.dtype)


# name: (arity, operand dtype rule, result is bool, reference), as in prim.ELEMENTWISE
BIT_OPS = {
    "gcd": (2, _integral_not_bool, False, torch_fn("gcd")),
    "nextafter": (2, _f32_or_f64, False, torch_fn("nextafter")),
    "nextafter_f16": (2, _f32_only, False, _nextafter_in("float16")),
    "nextafter_bf16": (2, _f32_only, False, _nextafter_in("bfloat16")),
    "frexp_mantissa": (1, _float_only, False, lambda x: torch.frexp(x).mantissa),
    "frexp_exponent": (1, _float_only, False, _frexp_exponent),
}
