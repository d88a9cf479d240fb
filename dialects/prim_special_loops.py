"""Elementwise prim ops whose scalar code runs a data-dependent loop: Hurwitz zeta and
the orthogonal polynomials of torch.special (each a binary op of (x, n), n a float of
x's dtype that the op truncates to an integer, as ATen's kernels do).

They join prim.py's ELEMENTWISE table (arity 2, float operands, float result); their
references are torch's own kernels. Code generation: codegen/llvm_special_loops.py and
codegen/triton_special_loops.py.
"""

from __future__ import annotations

from collections.abc import Callable

from strata.dialects.lazy_torch import torch, torch_fn

from strata.dialects.types import is_float

# The polynomial families, by torch.special name; each prim op is named the same.
POLYNOMIALS = tuple(
    f"{kind}_polynomial_{letter}"
    for kind, letters in (("chebyshev", "tuvw"), ("shifted_chebyshev", "tuvw"), ("hermite", ("h", "he")), ("laguerre", "l"), ("legendre", "p"))
    for letter in letters
)


def _float_only(dtype: str) -> bool:
    return is_float(dtype)


def degree(n: torch.Tensor) -> torch.Tensor:
    """ATen's static_cast<int64_t>(n) on x86: NaN, infinities and values out of the
    int64 range give INT64_MIN (a negative degree)."""
    in_range = torch.isfinite(n) & (n.abs() < 2.0**63)
    return torch.where(in_range, n.nan_to_num(0.0), 0.0).to(torch.int64).where(in_range, torch.iinfo(torch.int64).min)


def _wide(fn: Callable, name: str) -> Callable:
    """fn, which eager runs in f32 and f64 only, run in f32 for f16/bf16 operands;
    named `special.<name>` (docs/dialects/prim.md shows it as torch's)."""

    def run(*args: torch.Tensor) -> torch.Tensor:
        dtype = args[0].dtype
        if dtype in (torch.float16, torch.bfloat16):
            return fn(*(a.float() for a in args)).to(dtype)
        return fn(*args)

    run.__name__ = f"special.{name}"
    return run


def _polynomial(name: str) -> Callable:
    fn = torch_fn(f"special.{name}")

    def reference(x: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
        # With x NaN and n >= 2, several of ATen's kernels return an unset variable
        # (their loop stops before its first step on NaN); NaN is the value the
        # recurrence gives, and what the generated code returns.
        return torch.where(torch.isnan(x) & (degree(n) >= 1), torch.nan, fn(x, n)).to(x.dtype)

    return _wide(reference, name)


# name: (arity, operand dtype rule, result is bool, reference), as in prim.ELEMENTWISE
SPECIAL_LOOP_OPS: dict[str, tuple[int, Callable[[str], bool], bool, Callable]] = {
    "zeta": (2, _float_only, False, _wide(torch_fn("special.zeta"), "zeta")),
    **{name: (2, _float_only, False, _polynomial(name)) for name in POLYNOMIALS},
}
