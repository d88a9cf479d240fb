"""An op no decomposition rule covers, for the tests of eager fallbacks (warnings,
logs, diagrams, provenance): `opaque(x, y)` is x * y to eager, a custom op to strata,
so that it stays a fallback however many aten ops gain lowerings."""

from __future__ import annotations

import torch


@torch.library.custom_op("strata_tests::opaque", mutates_args=())
def opaque(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return x * y


@opaque.register_fake
def _(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return torch.empty_like(x)
