"""Timing that survives a noisy machine: interleaved rounds, medians, ratios."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def interleaved_medians(fns: dict[str, Callable[[], object]], rounds: int = 30, inner: int = 3, sync: Callable[[], None] = lambda: None) -> dict[str, float]:
    """Median seconds per call of each function, timed round-robin so that drift in the
    machine's speed hits every contender alike."""
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            sync()
            start = time.perf_counter()
            for _ in range(inner):
                fn()
            sync()
            samples[name].append((time.perf_counter() - start) / inner)
    return {k: statistics.median(v) for k, v in samples.items()}
