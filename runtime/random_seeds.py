"""A compiled graph's seeds: all drawn at once, each time the graph runs.

Every `prim.random_seed` of a program is one seed of a single draw, made where the
first of them stands: one `torch.randint` on the default generator of the graph's
device (as TorchInductor does), so that a call costs one generator call however many
random ops the graph has, results follow `torch.manual_seed`, and two calls draw
different numbers. Each seed is a 0-d view of the drawn tensor, which kernels read
at its first element.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from strata.dialects.prim_random import SEED_BOUND


def draw_seeds_step(slots: Sequence[int], device: torch.device) -> Callable[[list, dict], None]:
    """The step that fills the registers `slots` with fresh seeds."""
    slots = list(slots)
    count = len(slots)

    def draw(regs: list, env: dict) -> None:
        seeds = torch.randint(SEED_BOUND, (count,), dtype=torch.int64, device=device)
        for k, slot in enumerate(slots):
            regs[slot] = seeds[k]

    return draw
