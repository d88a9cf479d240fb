"""Decomposition rules, aten → prim, one file a family; importing this package fills
the table `RULES` (see rules.py)."""

from strata.passes.decompositions import (  # noqa: F401  (each registers its rules)
    arg_reduction,
    attention,
    batch_norm,
    conversion,
    convolution,
    convolution_backward,
    creation,
    dropout,
    elementwise,
    indexing,
    linalg,
    normalization,
    padding,
    pooling,
    random,
    rearrange,
    reduction,
    scan,
    shape,
)
from strata.passes.decompositions.rules import RULES

__all__ = ["RULES"]
