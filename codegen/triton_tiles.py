"""Tile sizes and warp counts for generated Triton kernels.

Called at compile time when a kernel's sizes are static and from the generated launcher
when they are symbolic, so one heuristic decides both. Blocks are powers of two (what
`tl.arange` needs); they are clamped so that tiny sizes do not compile one variant per
size.
"""

from __future__ import annotations

from typing import NamedTuple

# A row of at most this many elements is reduced in one tile held in registers
# (a persistent reduction); longer rows are walked in RBLOCK chunks.
PERSISTENT_LIMIT = 8192
# Elements of one tile: beyond this a thread holds too many values in registers.
TILE_ELEMENTS = 4096


class Tile(NamedTuple):
    persistent: bool
    xblock: int
    rblock: int
    num_warps: int


def next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def _warps(elements: int) -> int:
    return max(1, min(8, elements // 256))


def pointwise_tile(xnumel: int) -> Tile:
    xblock = max(128, min(1024, next_power_of_2(xnumel)))
    return Tile(False, xblock, 1, _warps(xblock))


def reduction_tile(xnumel: int, rnumel: int, inner: bool) -> Tile:
    """`inner`: consecutive reduction indices touch consecutive elements, so a tile
    should be long in R; otherwise consecutive x do, and it should be wide in X."""
    rblock = next_power_of_2(rnumel)
    xcap = next_power_of_2(xnumel)
    if rblock <= PERSISTENT_LIMIT:
        xblock = min(max(1, TILE_ELEMENTS // rblock), xcap, 1024)
        return Tile(True, xblock, rblock, _warps(xblock * rblock))
    if inner:
        return Tile(False, 1, 2048, 8)
    xblock = min(64, xcap)
    return Tile(False, xblock, 64, _warps(xblock * 64))
