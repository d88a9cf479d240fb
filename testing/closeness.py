"""How close a pass's results must be to the results before it. Kept apart from
capture.py so that value checks (strata-opt --check-values) need not import Dynamo."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch


def tolerance(dtype: torch.dtype) -> float:
    """The relative and absolute tolerance of a floating dtype's results."""
    return {torch.float16: 1e-2, torch.bfloat16: 2e-2}.get(dtype, 1e-5)


def assert_close(before: Sequence[Any], after: Sequence[Any]) -> None:
    """Same dtypes and shapes; bit-equal for integers and bools; within the dtype's
    rounding for floats (the passes may compute f16/bf16 in f32, as kernels do)."""
    assert len(before) == len(after)
    for b, a in zip(before, after):
        assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
        if b.dtype.is_floating_point:
            tol = tolerance(b.dtype)
            torch.testing.assert_close(a, b, rtol=tol, atol=tol, equal_nan=True)
        else:
            assert torch.equal(a, b)
