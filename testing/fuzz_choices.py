"""Where the program generator (testing/python_programs.py) gets its decisions from:
hypothesis (`DrawnChoices`, so that a failing program shrinks) or a seeded random
generator (`RandomChoices`, for the fuzzer's command line, where every program of a
run is independent and reproduced by its seed alone).

Both give the simplest answer first: `pick` shrinks toward options[0] and `chance`
toward False, so list the options simplest first.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Protocol, TypeVar

from hypothesis import strategies as st

T = TypeVar("T")


class Choices(Protocol):
    def integer(self, low: int, high: int) -> int:
        """An int from low to high, both included."""

    def pick(self, options: Sequence[T]) -> T:
        """One of the options (repeat an option to weight it)."""

    def chance(self, percent: int) -> bool:
        """True `percent` times in 100."""


class RandomChoices:
    def __init__(self, seed: int | str):
        self.random = random.Random(seed)  # a str seed is hashed the same in every process

    def integer(self, low: int, high: int) -> int:
        return self.random.randint(low, high)

    def pick(self, options: Sequence[T]) -> T:
        return options[self.random.randrange(len(options))]

    def chance(self, percent: int) -> bool:
        return self.random.randrange(100) < percent


class DrawnChoices:
    def __init__(self, draw: Callable):
        self.draw = draw

    def integer(self, low: int, high: int) -> int:
        return self.draw(st.integers(low, high))

    def pick(self, options: Sequence[T]) -> T:
        return self.draw(st.sampled_from(options))

    def chance(self, percent: int) -> bool:
        return self.draw(st.integers(0, 99)) >= 100 - percent  # 0, the simplest, is False
