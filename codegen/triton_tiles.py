"""Tile sizes and warp counts for generated Triton kernels: a heuristic, and the small
set of configurations that max-autotune times.

Called at compile time when a kernel's sizes are static and from the generated launcher
when they are symbolic, so one heuristic decides both. Blocks are powers of two (what
`tl.arange` needs); they are clamped so that tiny sizes do not compile one variant per
size.

A reduction's *layout* says which way its rows run through memory: "inner" when
consecutive reduction indices touch consecutive elements (a row softmax), "outer" when
consecutive pointwise indices do (a column sum), "mixed" when some accesses run one way
and some the other (a softmax over a transposed input: columns read, rows written). An
inner tile is long in R, an outer one wide in X, a mixed one square enough for both
(Triton moves the tile through shared memory between the two layouts).

A *split* reduction cuts each row into `split` chunks reduced by separate programs into
a workspace, then combined by a second kernel: for long rows and few of them, which
would otherwise leave most of the GPU idle.
"""

from __future__ import annotations

import functools

from typing import NamedTuple

# A row of at most this many elements is reduced in one tile held in registers
# (a persistent reduction); longer rows are walked in RBLOCK chunks.
PERSISTENT_LIMIT = 8192
# Elements of one tile: beyond this a thread holds too many values in registers.
TILE_ELEMENTS = 4096
# Programs that keep every multiprocessor of a large GPU busy (an H100 or H200 has 132).
FILL_PROGRAMS = 512
# A split reduction's programs each reduce at least this many elements.
MIN_SPLIT_ELEMENTS = 8192
# Split only rows at least this long. Transformer training sums its weight gradients
# over batch x tokens rows (4096 in GPT-2's, 6304 in ViT-small's): unsplit, a layer
# norm's backward over 384 columns ran in 6 programs, 300 us a call on an H200.
SPLIT_MIN_RNUMEL = 1024
# Registers of one multiprocessor, and the fewest programs that should share one (so
# that one loads while another reduces).
REGISTERS = 65536
MIN_RESIDENT = 2


class Tile(NamedTuple):
    persistent: bool
    xblock: int
    rblock: int
    num_warps: int
    split: int = 1

    @property
    def launches(self) -> int:
        """Kernel launches a call takes: a split reduction's second kernel combines."""
        return 2 if self.split > 1 else 1


def next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def _warps(elements: int, limit: int = 8) -> int:
    return max(1, min(limit, elements // 256))


# A pointwise kernel of at most this many elements is bound by latency (a decode step's
# rotations): it spreads them over programs of 256 at 2 warps, so that more
# multiprocessors load at once. H200, in a chain of PDL launches in a CUDA graph (the
# rotations of a 0.85B Llama's q and k, 2026-11-28): 2,048 elements 1.02 us a launch
# against 1.32 at 1,024 a program (4 warps); 512, 1.10 against 1.17 at 512 (2 warps).
SMALL_POINTWISE = 4096


# A launch of symbolic sizes asks for its tile at every call, with the sizes of earlier
# calls: the heuristics are pure, so each answer is kept.
@functools.lru_cache(maxsize=4096)
def pointwise_tile(xnumel: int) -> Tile:
    if 256 < xnumel <= SMALL_POINTWISE:
        return Tile(False, 256, 1, 2)
    xblock = max(128, min(1024, next_power_of_2(xnumel)))
    return Tile(False, xblock, 1, _warps(xblock))


def pointwise_configs(xnumel: int) -> list[Tile]:
    """The heuristic tile first, then the alternatives max-autotune times."""
    cap = max(128, next_power_of_2(xnumel))
    out = [pointwise_tile(xnumel)]
    for xblock, warps in ((512, 4), (1024, 8), (2048, 8), (256, 2), (4096, 16)):
        if xblock <= cap:
            out.append(Tile(False, xblock, 1, warps))
    return _unique(out)


def persistent_fits(rnumel: int, layout: str, passes: int = 1) -> bool:
    """Whether rows of `rnumel` elements are reduced in registers. Up to
    PERSISTENT_LIMIT for inner rows. An outer or mixed tile must be wide in X to read
    memory well, so only short rows fit, unless a looped kernel would walk its rows
    several times (a softmax): then a narrow persistent tile, which reads once, wins."""
    rblock = next_power_of_2(rnumel)
    if layout == "inner" or passes > 1:
        return rblock <= PERSISTENT_LIMIT
    return rblock <= 256


# Elements a thread of a persistent tile holds at least, by the size of the row's
# elements. H200, softmax and layer norm over rows of 1024 to 8192: f32 rows are
# fastest at 8 a thread (more costs up to 4%), 16-bit rows at 32 (8192x4096 bf16
# softmax: 40.5 us at 4 warps, 51.8 at 16; bf16 layer norm 44.8 against 52.6; and
# 1024 to 2048-long bf16 rows 10-20% faster at 1-2 warps than at 4-8).
MIN_PER_THREAD = {1: 32, 2: 32, 4: 8, 8: 8}
# A row kernel that loads this many rows or more (layer norm: x, weight and bias) keeps
# 32 elements a thread whatever their size, over rows of at least MANY_ROWS_MIN_R
# elements and at least as many rows (what was measured: fewer warps a row must still
# fill the GPU). H200, f32 layer norm, x-block 1 (the sweep of 2026-11-23): 8192x4096
# 70.1 us at 4 warps against 71.3 at 16, 16384x2048 70.9 against 72.1 at 8, 4096x8192
# unchanged (8 warps), 32768x1024 alike at 1 and 4 warps (68.5, 68.7); f32 softmax
# (one row) keeps 8 (8192x4096: 69.2 at 16 warps, 70.5 at 4).
MANY_ROWS = 3
MANY_ROWS_PER_THREAD = 32
MANY_ROWS_MIN_R = 2048
# At most this many long inner rows, one a program (a decode step's K and V products,
# [1, 2048] x [512, 2048]): too few programs to keep enough loads in flight at 1-2
# warps each, so each takes 8. H200, bf16 rows in CUDA graphs, L2 cold (2026-11-27):
# 512 rows of 2048, 3.93 us at 2 warps against 3.24 at 8; 1024 rows of 4096, 6.25 at 4
# against 6.17 at 8; 2048 rows of 2048 were fastest at 2 (3.65 us; 3.68 at 4).
FEW_ROWS = 1024


def persistent_warps(elements: int, loads: int, itemsize: int = 4, least: int | None = None) -> int:
    """Warps for a persistent tile of `elements` (of `itemsize` bytes): as many as
    keep at least `least` elements a thread (default MIN_PER_THREAD's; so that each
    thread's loads are wide and several are in flight) and MIN_RESIDENT programs a
    multiprocessor, by an estimate of the registers a thread needs: the elements of
    each row it loads, plus bookkeeping."""
    least = least or MIN_PER_THREAD.get(itemsize, 8)
    for warps in (16, 8, 4, 2, 1):
        per_thread = elements // (32 * warps)
        registers = loads * per_thread + 24
        if per_thread >= least and REGISTERS // (registers * 32 * warps) >= MIN_RESIDENT:
            return warps
    # a tile too large for two programs a multiprocessor: all the warps one can have,
    # at up to 64 elements a thread
    return max(1, min(32, elements // (32 * 64)))


@functools.lru_cache(maxsize=4096)
def reduction_tile(xnumel: int, rnumel: int, layout: str = "inner", splittable: bool = False,
                   loads: int = 1, passes: int = 1, itemsize: int = 4) -> Tile:
    """The heuristic tile; a split one only for a kernel that can be split. `loads`:
    rows the kernel loads; `passes`: loops a looped variant would make over R;
    `itemsize`: bytes of the narrowest element those rows hold."""
    rblock = next_power_of_2(rnumel)
    xcap = next_power_of_2(xnumel)
    split = split_of(xnumel, rnumel, layout) if splittable else 1
    if split > 1:
        return _split_tile(xnumel, rnumel, layout, split)
    if persistent_fits(rnumel, layout, passes):
        # inner rows: about 1024 elements a tile (one row of 1024 or more, 8 elements a
        # thread); outer or mixed rows: a few columns, whole
        least = None
        if layout == "inner":
            xblock = min(max(1, 1024 // rblock), xcap, 1024)
            if loads >= MANY_ROWS and rblock >= MANY_ROWS_MIN_R and xnumel >= MANY_ROWS_MIN_R:
                least = max(MANY_ROWS_PER_THREAD, MIN_PER_THREAD.get(itemsize, 8))
        elif rblock <= 256:
            xblock = min(max(32, 4096 // rblock), xcap, 1024)
        else:
            # columns of 4 (16 bytes) for rows up to 4096, 8 for longer ones: H200, a
            # softmax over dim 0 of [8192, 4096]: 202 us at 8 columns, 281 at 4, 422 at 2
            xblock = min(8 if rblock >= 8192 else max(4, 16384 // rblock), xcap)
        warps = persistent_warps(xblock * rblock, loads, itemsize, least)
        if layout == "inner" and xblock == 1 and xnumel <= FEW_ROWS and rblock >= 2048:
            warps = max(warps, min(8, rblock // 256))
        return Tile(True, xblock, rblock, warps)
    if layout == "inner":
        return Tile(False, 1, 2048, 8)
    xblock = min(64 if layout == "outer" else 32, xcap)
    rblock = 64 if layout == "outer" else 32
    return Tile(False, xblock, rblock, _warps(xblock * rblock))


def reduction_configs(xnumel: int, rnumel: int, layout: str, splittable: bool, loads: int = 1, passes: int = 1,
                      itemsize: int = 4) -> list[Tile]:
    """The heuristic tile first, then the alternatives max-autotune times (only tiles
    whose variant, persistent or looped, the kernel has: `persistent_fits` decides)."""
    best = reduction_tile(xnumel, rnumel, layout, splittable, loads, passes, itemsize)
    out = [best]
    rblock = next_power_of_2(rnumel)
    xcap = next_power_of_2(xnumel)
    if best.split > 1:
        for split in (best.split // 2, best.split * 2):
            if split > 1 and rnumel // split >= best.rblock:
                out.append(best._replace(split=split))
        out.append(reduction_tile(xnumel, rnumel, layout, False, loads, passes, itemsize))
        return _unique(out)
    if persistent_fits(rnumel, layout, passes):
        for xblock in (best.xblock // 2, best.xblock, best.xblock * 2):
            if 1 <= xblock <= xcap and xblock * rblock <= 4 * TILE_ELEMENTS:
                for warps in (best.num_warps // 2, best.num_warps, best.num_warps * 2):
                    if 1 <= warps <= 16 and xblock * rblock >= 32 * warps:
                        out.append(Tile(True, xblock, rblock, warps))
    elif layout == "inner":
        for r, w in ((1024, 4), (4096, 8), (4096, 16)):
            out.append(Tile(False, 1, r, w))
    else:
        for x, r, w in ((64, 64, 8), (32, 64, 4), (32, 32, 4), (128, 32, 8), (16, 128, 4)):
            out.append(Tile(False, min(x, xcap), r, w))
    return _unique(out)[:8]


def split_of(xnumel: int, rnumel: int, layout: str) -> int:
    """How many chunks each row is cut into: 1 (no split) unless the rows are long
    and too few to fill the GPU; then enough chunks for FILL_PROGRAMS programs, each
    reducing at least MIN_SPLIT_ELEMENTS elements and one RBLOCK."""
    if rnumel < SPLIT_MIN_RNUMEL or xnumel == 0:
        return 1
    tile = _split_tile(xnumel, rnumel, layout, 2)
    programs = -(-xnumel // tile.xblock)
    if programs >= FILL_PROGRAMS // 4:
        return 1
    split = next_power_of_2(-(-FILL_PROGRAMS // programs))
    while split > 1 and (rnumel // split < tile.rblock or (rnumel // split) * tile.xblock < MIN_SPLIT_ELEMENTS):
        split //= 2
    return min(split, 1024)


def _split_tile(xnumel: int, rnumel: int, layout: str, split: int) -> Tile:
    if layout == "inner":
        return Tile(False, 1, 2048, 8, split)
    xblock = min(64, next_power_of_2(xnumel))
    return Tile(False, xblock, 64, _warps(xblock * 64), split)


def _unique(tiles: list[Tile]) -> list[Tile]:
    seen: dict[Tile, None] = {}
    for t in tiles:
        seen.setdefault(t, None)
    return list(seen)
