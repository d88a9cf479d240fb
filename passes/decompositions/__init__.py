"""Decomposition rules, aten → prim, one file a family; importing this package fills
the table `RULES` (see rules.py)."""

from strata.passes.decompositions import (  # noqa: F401  (each registers its rules)
    attention,
    conversion,
    convolution,
    creation,
    dropout,
    elementwise,
    linalg,
    normalization,
    reduction,
    shape,
)
from strata.passes.decompositions.rules import RULES

__all__ = ["RULES"]
