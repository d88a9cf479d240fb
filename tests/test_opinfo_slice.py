"""A fixed slice of PyTorch's OpInfo database through strata: no wrong result, no error.

The full sweep is `make opinfo` (python -m strata.tools.opinfo)."""

from __future__ import annotations

import pytest

from strata.tools.opinfo import select, sweep

SLICE_DTYPES = ["f32", "i64", "bool", "bf16"]


@pytest.fixture(scope="module")
def outcomes():
    return sweep(select(None, use_slice=True), SLICE_DTYPES, "cpu", "strata", max_samples=2, log=lambda *_: None)


def test_slice_has_no_wrong_result_or_error(outcomes):
    bad = [(o.op, o.dtype, o.bin, o.detail[:200]) for o in outcomes if o.bin in ("wrong", "error")]
    assert not bad, bad


def test_slice_mostly_compiles_without_fallback(outcomes):
    judged = [o for o in outcomes if o.bin != "unsupported"]
    passed = [o for o in judged if o.bin == "pass"]
    assert len(judged) > 100
    assert len(passed) / len(judged) > 0.9, [(o.op, o.dtype, o.fallbacks) for o in judged if o.bin != "pass"]
