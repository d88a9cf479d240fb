"""Decomposition rules, aten → prim, one file a family; importing this package fills
the table `RULES` (see rules.py)."""

from strata.passes.decompositions import (  # noqa: F401  (each registers its rules)
    arg_reduction,
    attention,
    batch_norm,
    contractions,
    conversion,
    convolution,
    convolution_backward,
    copies,
    creation,
    dropout,
    elementwise,
    elementwise_float,
    indexing,
    lapack,
    linalg,
    norms,
    normalization,
    padding,
    pooling,
    random,
    rearrange,
    reduction,
    scan,
    selection,
    shape,
)
from strata.passes.decompositions.rules import RULES

__all__ = ["RULES"]
