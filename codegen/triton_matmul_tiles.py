"""The matmul template's tiles (codegen/triton_matmul.py): the configurations max-autotune
times, the heuristic tile default mode takes, and what a persistent TMA tile needs at its
launch. Imported by the generated kernel modules as well as by the template's writer."""

from __future__ import annotations

import functools
from typing import NamedTuple

from strata.dialects.lazy_torch import torch


class MatmulTile(NamedTuple):
    """A template configuration; `library`: torch.matmul, then the epilogue kernel."""

    block_m: int = 64
    block_n: int = 64
    block_k: int = 32
    group_m: int = 8
    num_warps: int = 4
    num_stages: int = 3
    library: bool = False
    # the product (up to its first rounding) by this tile, the rest of the epilogue by a
    # second kernel: a long epilogue (an erf or tanh GELU) on a short product costs the
    # template more than its own pass over the result
    epilogue_apart: bool = False
    # persistent: one program per multiprocessor walks the tiles, both operands read by
    # TMA (tensor descriptors), where they are plain 2-d strided reads (Hopper on)
    tma: bool = False
    # split-K: this many programs share each output tile, each summing a chunk of k
    # into an f32 workspace, and a second kernel adds the chunks and runs the epilogue
    # (a product of few tiles and a long k leaves most multiprocessors idle otherwise)
    split_k: int = 1

    @property
    def launches(self) -> int:
        """Launches a call takes (at most: a library tile that stores its product
        directly takes one)."""
        return 2 if self.library or self.epilogue_apart or self.split_k > 1 else 1

    def describe(self) -> str:
        if self.library:
            return "library (cuBLAS or cuDNN) + epilogue"
        text = (f"BLOCK_M={self.block_m} BLOCK_N={self.block_n} BLOCK_K={self.block_k} "
                f"warps={self.num_warps} stages={self.num_stages}")
        if self.tma:
            text += " persistent TMA"
        if self.split_k > 1:
            text += f" split-K {self.split_k}"
        return text + " + epilogue apart" if self.epilogue_apart else text


# (BLOCK_M, BLOCK_N, BLOCK_K, warps, stages) for 16-bit operands: TorchInductor's mm
# configurations that win on Hopper, and wide tiles for large products; f32 operands
# halve BLOCK_K (twice the bytes per element).
CONFIGS = (
    (128, 128, 64, 8, 3), (128, 128, 64, 4, 3), (128, 128, 64, 8, 5), (128, 128, 32, 4, 3), (128, 128, 32, 4, 4),
    (128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 256, 64, 8, 4), (256, 128, 64, 8, 4), (128, 128, 64, 8, 4),
    (64, 128, 64, 4, 4), (128, 64, 64, 4, 4), (64, 128, 128, 4, 4), (64, 64, 128, 4, 5), (64, 64, 64, 4, 4),
    (64, 64, 32, 4, 5), (32, 64, 64, 4, 5), (32, 64, 128, 4, 5), (16, 64, 128, 4, 4), (16, 128, 128, 4, 3),
    (32, 128, 128, 4, 3),
)


def _clamp(block: int, size: int, least: int = 16) -> int:
    fit = least
    while fit < block and fit < size:
        fit *= 2
    return fit


# asked at every launch of a template of symbolic sizes: pure, so each answer is kept
@functools.lru_cache(maxsize=4096)
def heuristic_tile(m: int, n: int, k: int, wide: bool) -> MatmulTile:
    """A tile without timing: square and large for large products, short in m for few
    rows (a decode step's batch), so that the grid still fills the GPU."""
    if m <= 16:
        bm, bn, bk, warps, stages = 16, 64, 128, 4, 4
    elif m <= 64:
        bm, bn, bk, warps, stages = 64, 64, 64, 4, 4
    elif m * n <= 512 * 512:
        bm, bn, bk, warps, stages = 64, 64, 64, 4, 4
    else:
        bm, bn, bk, warps, stages = 128, 128, 64, 8, 3
    if wide:
        bk //= 2
    return MatmulTile(_clamp(bm, m), _clamp(bn, n), _clamp(bk, k), 8, warps, stages)


# How many of the first candidates also run with the epilogue apart.
APART_CANDIDATES = 4


# The persistent TMA configurations: large tiles, where walking the tiles from one
# program per multiprocessor (no wave's tail) and TMA's loads pay.
TMA_CONFIGS = ((128, 128, 64, 8, 3), (128, 256, 64, 8, 3), (256, 128, 64, 8, 3), (128, 128, 64, 4, 4), (64, 128, 64, 4, 4))
# ...and only for products of at least this many multiply-adds (4096³/2). A TMA launch
# builds two tensor descriptors and goes through Triton's launcher with them: on an
# H200 a call of a [512, 4096] · [4096, 4096] product took 0.17 ms with the TMA tile the
# tuner had timed at 0.054 ms of GPU work. The tuner times GPU work only, so a product
# whose host time exceeds its GPU time must not be offered one.
TMA_MIN_WORK = 4096 ** 3 // 2


# Split-K: the tiles for few rows and columns, and how far k splits. A product is split
# while its tiles fill less than a wave of a large GPU (fewer programs than
# SPLIT_BELOW), into at most SPLIT_UPTO programs, each chunk of k at least four steps
# and SPLIT_CHUNK long (a shorter chunk's sum costs less than its store and re-read).
SPLIT_CONFIGS = ((32, 64, 128, 4, 4), (64, 128, 64, 4, 3))
SPLIT_CHUNK = 256
SPLIT_FACTORS = (2, 4, 8, 16)
SPLIT_BELOW, SPLIT_UPTO = 128, 512


def split_tiles(m: int, n: int, k: int, nbatch: int, wide: bool) -> list[MatmulTile]:
    """The split-K candidates of a product of these sizes (none for a product whose
    tiles already fill the GPU, or whose k is short)."""
    out = []
    for bm, bn, bk, warps, stages in SPLIT_CONFIGS:
        if wide:
            bk = max(16, bk // 2)
        tile = MatmulTile(_clamp(bm, m), _clamp(bn, n), _clamp(bk, k), 8, warps, stages)
        programs = -(-m // tile.block_m) * -(-n // tile.block_n) * nbatch
        if programs >= SPLIT_BELOW:
            continue
        for split in SPLIT_FACTORS:
            # the f32 workspace indexed in 32 bits
            if (programs * split <= SPLIT_UPTO and k >= split * max(4 * tile.block_k, SPLIT_CHUNK)
                    and split * nbatch * m * n < 2**31):
                out.append(tile._replace(split_k=split))
    return list(dict.fromkeys(out))


def candidate_tiles(m: int, n: int, k: int, wide: bool, library: bool, apart: bool = False,
                    tma: bool = False, split: bool = False, nbatch: int = 1) -> list[MatmulTile]:
    """The heuristic tile first, then the configurations clamped to the sizes (no
    duplicates), then the first few again with the epilogue apart where the kernel
    can split it, the persistent TMA tiles where the operands and the GPU allow them,
    split-K tiles where the kernel has them and the product is small but long, then
    the library tile where the operands allow it."""
    out = [heuristic_tile(m, n, k, wide)]
    for bm, bn, bk, warps, stages in CONFIGS:
        if wide:
            bk = max(16, bk // 2)
        tile = MatmulTile(_clamp(bm, m), _clamp(bn, n), _clamp(bk, k), 8, warps, stages)
        if tile not in out:
            out.append(tile)
    if apart:
        out += [t._replace(epilogue_apart=True) for t in out[:APART_CANDIDATES]]
    if tma and m * n * k >= TMA_MIN_WORK:
        for bm, bn, bk, warps, stages in TMA_CONFIGS:
            tile = MatmulTile(_clamp(bm, m), _clamp(bn, n), _clamp(max(16, bk // 2) if wide else bk, k), 8, warps,
                              stages, tma=True)
            if tile not in out:
                out.append(tile)
    if split:
        out += split_tiles(m, n, k, nbatch, wide)
    if library:
        out.append(MatmulTile(library=True))
    return out


def tma_available() -> bool:
    """Whether the tuner offers TMA tiles: on a GPU of compute capability 9 or more
    (Hopper). Triton's interpreter runs them too (tests launch them by hand), but the
    CPU has nothing to gain from them."""
    return torch.cuda.is_available() and torch.cuda.get_device_capability() >= (9, 0)


def tma_ready(t: torch.Tensor) -> bool:
    """Whether TMA can read `t` (a 2-d view, last stride 1): a 16-byte aligned start and
    16-byte multiples for its other stride."""
    size = t.element_size()
    return t.stride(-1) == 1 and t.data_ptr() % 16 == 0 and (t.stride(0) * size) % 16 == 0


@functools.lru_cache(maxsize=None)
def sm_count(device: torch.device) -> int:
    """Multiprocessors of the device: a persistent tile's programs (4 on the CPU, for
    the interpreter)."""
    return torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 4
