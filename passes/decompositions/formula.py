"""Scalar formulas written over prim elementwise ops, for the special functions that
ATen computes with fixed formulas (Cephes series, rational approximations).

A `Formula` works in one tensor type, the computation dtype of a `pointwise` body:
Python numbers become constants of that type (one prim.full each, rounded as a C++
`static const T[]` table rounds them), and the helpers evaluate polynomials and
Chebyshev series in the order ATen's loops do, so that each step rounds as there.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from xdsl.ir import SSAValue

from strata.dialects.types import DTYPES
from strata.passes.decompositions.builder import PrimBuilder, tensor_of

Value = SSAValue | float


class Formula:
    """Arithmetic on tensors of `like`'s type; operands may be Python numbers."""

    def __init__(self, b: PrimBuilder, like: SSAValue):
        self.b = b
        self.like = like
        self.dtype = tensor_of(like).dtype
        self._constants: dict[str, SSAValue] = {}

    # ------------------------------------------------------------ constants
    def rounded(self, value: float) -> float:
        """`value` rounded to the computation dtype, as `T(value)` in C++."""
        return torch.tensor(value, dtype=DTYPES[self.dtype]).item()

    def folded(self, fn: Callable[..., torch.Tensor], *values: float) -> float:
        """A constant expression of ATen's (`T(1.0) / T(6.0)`), each step rounded in
        the computation dtype as the C++ compiler folds it."""
        return fn(*(torch.tensor(v, dtype=DTYPES[self.dtype]) for v in values)).item()

    def const(self, value: float) -> SSAValue:
        value = self.rounded(value)
        key = repr(value)  # tells -0.0 from 0.0, and names NaN
        if key not in self._constants:
            self._constants[key] = self.b.constant_like(self.like, value)
        return self._constants[key]

    def _v(self, a: Value) -> SSAValue:
        return a if isinstance(a, SSAValue) else self.const(float(a))

    # ------------------------------------------------------------ arithmetic
    def add(self, a: Value, b: Value) -> SSAValue:
        return self.b.ew("add", self._v(a), self._v(b))

    def sub(self, a: Value, b: Value) -> SSAValue:
        return self.b.ew("sub", self._v(a), self._v(b))

    def mul(self, a: Value, b: Value) -> SSAValue:
        return self.b.ew("mul", self._v(a), self._v(b))

    def div(self, a: Value, b: Value) -> SSAValue:
        return self.b.ew("div", self._v(a), self._v(b))

    def neg(self, a: SSAValue) -> SSAValue:
        return self.b.ew("neg", a)

    def fn(self, name: str, a: Value) -> SSAValue:
        """A unary prim op: exp, log, sqrt, sin, cos, abs, …"""
        return self.b.ew(name, self._v(a))

    # ------------------------------------------------------------ choices
    def cmp(self, name: str, a: Value, b: Value) -> SSAValue:
        """A comparison (lt, le, gt, ge, eq, ne): a bool tensor."""
        return self.b.ew(name, self._v(a), self._v(b))

    def either(self, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.b.ew("logical_or", a, b)

    def where(self, cond: SSAValue, a: Value, b: Value) -> SSAValue:
        return self.b.where(cond, self._v(a), self._v(b))

    # ------------------------------------------------------------ series
    def polevl(self, x: SSAValue, coefficients: Sequence[float]) -> SSAValue:
        """c[0]·x^n + … + c[n] by Horner's rule, as Cephes' polevl and ATen's
        `r = r * x + C[i]` loops (whose first step, 0·x + c[0], is c[0])."""
        result = self._v(coefficients[0])
        for c in coefficients[1:]:
            result = self.add(self.mul(result, x), c)
        return result

    def chbevl(self, x: SSAValue, coefficients: Sequence[float]) -> SSAValue:
        """Cephes' chbevl (ATen's Math.h): the Chebyshev series at x/2 by Clenshaw's
        recurrence b0 = x·b1 - b2 + c[i], then (b0 - b2) / 2."""
        b0: Value = coefficients[0]
        b1: Value = 0.0
        b2: Value = 0.0
        for i, c in enumerate(coefficients[1:]):
            b2, b1 = b1, b0
            product = self.mul(x, b1)
            b0 = self.add(product if i == 0 else self.sub(product, b2), c)  # b2 = 0 at first
        return self.mul(0.5, self.sub(self._v(b0), self._v(b2)))
