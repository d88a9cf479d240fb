"""max-autotune for generated Triton kernels: time a small set of tiles on the first
call with each size, keep the fastest, remember it on disk.

The candidates are triton_tiles' configurations for the kernel's sizes (the heuristic
tile first). Each is launched on the call's own buffers: a kernel.func never reads a
buffer it writes, so running it several times leaves the same results. While it
tunes, a tqdm progress bar goes to stderr; the winner is logged under `strata.codegen`
and stored in the disk cache (kind "triton-tune"), keyed by the kernel's module, its
sizes and the device's name, so a later process starts with it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import statistics
import sys
import time
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING

import torch

from strata.codegen.triton_tiles import Tile, pointwise_configs, reduction_configs
from strata.runtime import cache

if TYPE_CHECKING:
    from tqdm import tqdm

CACHE_KIND = "triton-tune"
log = logging.getLogger("strata.codegen")
# STRATA_AUTOTUNE_PROGRESS=0 turns the progress bar off.
PROGRESS_VAR = "STRATA_AUTOTUNE_PROGRESS"
# What the choice charges a candidate for each launch beyond its first: the tuner times
# the GPU's work alone, but each launch costs the host a few microseconds, which a
# program whose host is the bottleneck (small products, no CUDA graph) pays in full.
EXTRA_LAUNCH_S = 3e-6
# Bound launches kept per kernel (one per set of symbol values: a dynamic-shape kernel
# called at ever new sizes goes through launch_tile past this many).
MAX_BOUND = 64


def candidates(module: ModuleType, sizes: tuple[int, ...], reduction: bool) -> list[Tile]:
    """The tiles to time: the module's own (a matmul template's), or triton_tiles'."""
    if hasattr(module, "tile_candidates"):
        return module.tile_candidates(sizes)
    xnumel, rnumel = sizes
    if not reduction:
        return pointwise_configs(xnumel)
    return reduction_configs(xnumel, rnumel, module.LAYOUT, module.SPLITTABLE, module.ROW_LOADS, module.PASSES, module.ROW_ITEMSIZE)


class Autotuner:
    """A kernel's launcher under max-autotune: `(buffers, symbols)` like the module's
    own `launch`, with the tile chosen by timing."""

    def __init__(self, name: str, key: str, module: ModuleType, reduction: bool, device: str,
                 timer: Callable[[Callable[[], None]], float] | None = None, host_bound: bool = False,
                 host_timer: Callable[[Callable[[], None]], float] | None = None):
        self.name = name
        self.key = key
        self.module = module
        self.reduction = reduction
        self.device = device
        self.timer = timer or (_cuda_timer if device == "cuda" else _wall_timer)
        # no CUDA graph: a call costs the longer of its GPU work and its host work (a
        # library call's dispatch, a workspace, a second launch), each timed
        self.host_bound = host_bound
        self.host_timer = host_timer or _host_timer
        self.best: dict[tuple[int, int], Tile] = {}
        self.timings: dict[tuple[int, int], dict[Tile, float]] = {}
        # per symbols: the tuned tile's launch as a function of the buffers (the module's
        # bind_tile), so that a call pays neither the sizes nor launch_tile's dispatch
        self.bound: dict[tuple[int, ...], Callable[[list], None]] = {}

    def __call__(self, buffers: list[torch.Tensor], symbols: list[int]) -> None:
        bound = self.bound.get(tuple(symbols))
        if bound is not None:
            bound(buffers)
            return
        sizes = self.module.numels(symbols)
        tile = self.best.get(sizes)
        if tile is None:
            tile = self.best[sizes] = self._tune(sizes, buffers, symbols)
        self.module.launch_tile(tile, buffers, symbols)
        bind = getattr(self.module, "bind_tile", None)
        if bind is not None and len(self.bound) < MAX_BOUND:
            bound = bind(tile, symbols)
            if bound is not None:
                self.bound[tuple(symbols)] = bound

    def _tune(self, sizes: tuple[int, ...], buffers: list[torch.Tensor], symbols: list[int]) -> Tile:
        tiles = candidates(self.module, sizes, self.reduction)
        if 0 in sizes or len(tiles) == 1:
            return tiles[0]
        entry = f"{self.key}-{'-'.join(map(str, sizes))}-{_device_name(self.device)}{'-host' if self.host_bound else ''}"
        stored = _read(entry, type(tiles[0]))
        if stored is not None and stored in tiles:
            log.info("%s: autotuned tile from the cache: %s", self.name, describe(stored))
            return stored
        if self.device == "cuda":
            from strata.codegen.triton_precompile import prepare_tiles

            prepare_tiles(self.module, tiles, buffers, symbols)
        bar = progress(f"strata: autotuning {self.name} ({'x'.join(map(str, sizes))})", len(tiles))
        times: dict[Tile, float] = {}
        costs: dict[Tile, float] = {}
        bind = getattr(self.module, "bind_tile", None)
        for tile in tiles:
            bound = bind(tile, symbols) if bind is not None else None
            launch = (lambda: bound(buffers)) if bound is not None else (lambda: self.module.launch_tile(tile, buffers, symbols))
            try:
                gpu = self.timer(launch)
                cost = max(gpu, self.host_timer(launch)) if self.host_bound else gpu + EXTRA_LAUNCH_S * (tile.launches - 1)
                times[tile], costs[tile] = gpu, cost
            except Exception as e:  # a tile that fails to compile (resources) is skipped
                log.info("%s: tile %s failed: %s", self.name, describe(tile), e)
            bar.update()
        if not times:
            bar.close()
            raise RuntimeError(f"strata: no tile of kernel {self.name} ran; the first failed above")
        best = min(costs, key=costs.__getitem__)
        done(bar, f"{describe(best)}, {times[best] * 1e3:.3f} ms (heuristic {times.get(tiles[0], float('nan')) * 1e3:.3f} ms)")
        log.info("%s: autotuned %d tiles (GPU ms, cost ms): %s", self.name, len(times),
                 ", ".join(f"{describe(t)} {s * 1e3:.3f} {costs[t] * 1e3:.3f}" for t, s in times.items()))
        self.timings[sizes] = times
        _write(entry, best)
        return best


def describe(tile: Tile) -> str:
    if hasattr(tile, "describe"):  # a matmul template's tile
        return tile.describe()
    text = f"XBLOCK={tile.xblock}"
    if tile.rblock > 1 or tile.persistent:
        text += f" RBLOCK={tile.rblock} {'persistent' if tile.persistent else 'looped'}"
    if tile.split > 1:
        text += f" split={tile.split}"
    return f"{text} warps={tile.num_warps}"


def progress(label: str, total: int, stream=None) -> tqdm:
    """A tqdm bar on stderr, redrawn in place on a terminal; elsewhere (a log, a pipe)
    nothing until `done` writes the final line. STRATA_AUTOTUNE_PROGRESS=0: nothing."""
    from tqdm import tqdm  # here, not at import: only a tuning process pays for it

    stream = stream or sys.stderr
    enabled = os.environ.get(PROGRESS_VAR, "1") != "0"
    live = enabled and getattr(stream, "isatty", lambda: False)()
    # delay: a bar that is not live never draws itself
    return tqdm(total=total, desc=label, unit="tile", file=stream, disable=not enabled, leave=True,
                delay=0 if live else float("inf"))


def done(bar: tqdm, result: str) -> None:
    """Ends the bar with `best: result`, as the last line of a live bar or the only one
    of a bar that is not."""
    bar.set_postfix_str(f"best: {result}", refresh=False)
    if bar.disable or not bar.delay:
        bar.close()
        return
    line = str(bar)
    bar.close()
    type(bar).write(line, file=bar.fp)


def _cuda_timer(fn: Callable[[], None], rounds: int = 25) -> float:
    """Median seconds per launch of the GPU's work. Each sample's launches queue up
    behind a kernel that only waits, long enough for the host to issue them all, so the
    GPU runs them back to back and what is timed is the GPU's work, not Python's: a
    candidate of two kernels (a product, then its epilogue) or a library call pays
    several launches' host time, which in a model overlaps the GPU's work (and in a CUDA
    graph disappears), and which timed launch by launch outweighed the kernels
    themselves. (A CUDA graph replay would hide the host too, but a capture that fails
    leaves torch's random generators in capture mode.)"""
    fn()  # compiles, and allocates what the launches keep
    torch.cuda.synchronize()
    host = min(_host_seconds(fn) for _ in range(3))
    once = max(_queued_ms(fn, 1, host), 1e-3)
    # launches per sample: enough for about 0.2 ms of GPU work, so that tiny kernels time
    # well, and at most about 10 ms of host work
    inner = max(1, min(100, int(0.2 / once), int(0.01 / max(host, 1e-6))))
    samples = [_queued_ms(fn, inner, host) / inner for _ in range(rounds)]
    return statistics.median(samples) / 1e3


def _host_timer(fn: Callable[[], None]) -> float:
    """Seconds of host work a launch takes, the least of several (a shared machine's
    host is noisy, and only the fast path of a warm call counts)."""
    return min(_host_seconds(fn) for _ in range(5))


def _host_seconds(fn: Callable[[], None]) -> float:
    """Seconds the host takes to issue fn's work (the GPU idle, nothing waits)."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    fn()
    seconds = time.perf_counter() - start
    torch.cuda.synchronize()
    return seconds


def _queued_ms(fn: Callable[[], None], launches: int, host: float) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    # twice the host's time, at up to 2.5e9 cycles a second (no GPU clocks faster)
    torch.cuda._sleep(int((2 * launches * host + 50e-6) * 2.5e9))
    start.record()
    for _ in range(launches):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def _wall_timer(fn: Callable[[], None]) -> float:
    """Seconds of one run (Triton's interpreter on CPU: the tuner's path is exercised,
    the timing means little)."""
    fn()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _device_name(device: str) -> str:
    if device == "cuda" and torch.cuda.is_available():
        return torch.cuda.get_device_name().replace(" ", "_")
    return device


def _read(entry: str, kind: type = Tile) -> Tile | None:
    data = cache.read(CACHE_KIND, _hashed(entry), ".json")
    if data is None:
        return None
    try:
        return kind(**json.loads(data))
    except Exception:  # a broken entry is a miss
        return None


def _write(entry: str, tile: Tile) -> None:
    try:
        cache.write(CACHE_KIND, _hashed(entry), ".json", json.dumps(tile._asdict()).encode())
    except OSError as e:  # a read-only cache costs the next process a retune, nothing more
        log.info("could not store an autotuned tile: %s", e)


def _hashed(entry: str) -> str:
    return hashlib.sha256(entry.encode()).hexdigest()[:40]
