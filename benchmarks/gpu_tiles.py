"""Tiles and code-generation features of strata's Triton kernels, timed kernel by
kernel: what the heuristics in codegen/triton_tiles.py are tuned from.

    python benchmarks/gpu_tiles.py --out results/     # on the GPU machine

For each case (the kernels of benchmarks/gpu_kernels.py), strata compiles the function
once to get its kernel.func, then one Triton module holding every tile of the case's
list is generated and each tile is launched through the module's `launch_tile` on the
same buffers, checked against eager and timed by CUDA events (median of rounds). Then
each switch of triton_source.FEATURES is turned off in turn, with the heuristic tile.
Lines print as they are measured; --budget stops early (seconds).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import sys
import tempfile
import time
import warnings

import torch

sys.path.insert(0, os.path.dirname(__file__))
from gpu_kernels import copy_bandwidth, make_cases  # noqa: E402

import strata  # noqa: E402
from strata.codegen import triton_gpu  # noqa: E402
from strata.codegen.triton_source import FEATURES, KernelSource  # noqa: E402
from strata.codegen.triton_tiles import Tile  # noqa: E402
from strata.dialects import kernel as kd  # noqa: E402
from strata.dialects.context import parse_module  # noqa: E402
from strata.dialects.types import DTYPES  # noqa: E402
from strata.runtime import cache  # noqa: E402

P, L = True, False
TILES: dict[str, list[Tile]] = {
    "pointwise_chain": [Tile(L, 1024, 1, 4), Tile(L, 512, 1, 4), Tile(L, 2048, 1, 8), Tile(L, 1024, 1, 8), Tile(L, 4096, 1, 16), Tile(L, 256, 1, 2)],
    "softmax/8192x4096": [Tile(P, 1, 4096, 8), Tile(P, 1, 4096, 4), Tile(P, 1, 4096, 16), Tile(P, 2, 4096, 8), Tile(P, 2, 4096, 16), Tile(L, 1, 2048, 8), Tile(L, 1, 1024, 4)],
    "softmax/4096x8192": [Tile(P, 1, 8192, 8), Tile(P, 1, 8192, 16), Tile(P, 1, 8192, 32), Tile(L, 1, 2048, 8), Tile(L, 1, 4096, 16)],
    "softmax/32768x1024": [Tile(P, 4, 1024, 8), Tile(P, 1, 1024, 4), Tile(P, 2, 1024, 4), Tile(P, 2, 1024, 8), Tile(P, 4, 1024, 4), Tile(P, 8, 1024, 8), Tile(P, 1, 1024, 2)],
    "softmax_transposed": [Tile(P, 4, 4096, 16), Tile(P, 4, 4096, 8), Tile(P, 4, 4096, 32), Tile(P, 2, 4096, 8), Tile(P, 2, 4096, 16),
                           Tile(P, 1, 4096, 16), Tile(P, 8, 4096, 16), Tile(L, 16, 128, 4)],
    "softmax_dim0": [Tile(P, 4, 8192, 16), Tile(P, 4, 8192, 32), Tile(P, 2, 8192, 16), Tile(P, 8, 8192, 32), Tile(L, 64, 64, 8), Tile(L, 32, 128, 8)],
    "column_sum": [Tile(L, 64, 64, 8, 8), Tile(L, 64, 64, 8, 4), Tile(L, 64, 64, 8, 16), Tile(L, 128, 32, 8, 8), Tile(L, 32, 128, 8, 8),
                   Tile(L, 64, 64, 8), Tile(L, 128, 64, 8), Tile(L, 256, 16, 8, 8)],
}
TILES["layer_norm/8192x4096"] = TILES["softmax/8192x4096"]
TILES["layer_norm/4096x8192"] = TILES["softmax/4096x8192"]
TILES["layer_norm/32768x1024"] = TILES["softmax/32768x1024"]


def kernel_module(case, device: str = "cuda") -> tuple[kd.FuncOp, list, list]:
    """The case's single kernel.func, its input tensors and fresh output tensors."""
    folder = tempfile.mkdtemp(prefix="strata-tiles-")
    torch._dynamo.reset()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        strata.compile(case.fn, options={"trace.enabled": True, "trace.dir": folder})(*case.args)
    (path,) = glob.glob(os.path.join(folder, "graph_*", "2_kernel.mlir"))
    module = parse_module(open(path).read())
    funcs = [op for op in module.body.block.ops if isinstance(op, kd.FuncOp)]
    program = next(op for op in module.body.block.ops if isinstance(op, kd.ProgramOp))
    launch = next(op for op in program.block.ops if isinstance(op, kd.LaunchOp))
    args = list(program.block.args)
    inputs = [case.args[args.index(v)] for v in launch.args]
    outputs = [torch.empty([int(d) for d in v.type.dims], dtype=DTYPES[v.type.dtype], device=device) for v in launch.outs]
    assert len(funcs) == 1, f"{case.name}: {len(funcs)} kernels"
    return funcs[0], inputs, outputs


def load(func: kd.FuncOp, tiles: list[Tile]):
    source = KernelSource(func, "cuda", tiles=tiles).module()
    key = cache.cache_key(source, "gpu_tiles")
    path = cache.write("triton", key, ".py", source.encode())
    return triton_gpu._load(path, key, "cuda")


def time_tile(module, tile, buffers, rounds: int) -> float:
    run = lambda: module.launch_tile(tile, buffers, [])  # noqa: E731
    run()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(rounds):
        start.record()
        for _ in range(5):
            run()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) / 5 / 1e3)
    return statistics.median(samples)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", default="pointwise_chain,softmax,layer_norm,softmax_transposed")
    p.add_argument("--shapes", default="8192x4096,4096x8192,32768x1024")
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--budget", type=float, default=1e9)
    p.add_argument("--features", default=",".join(FEATURES))
    p.add_argument("--out", default=None)
    a = p.parse_args()
    began = time.perf_counter()
    copy = copy_bandwidth("cuda", 20, 10)
    print(f"copy {copy / 1e9:.0f} GB/s", flush=True)
    results = []
    for case in make_cases(a.cases.split(","), a.shapes.split(","), "cuda"):
        if time.perf_counter() - began > a.budget:
            print("budget spent; stopping", flush=True)
            break
        tiles = TILES.get(f"{case.name}/{case.shape}") or TILES.get(case.name)
        if tiles is None:
            continue
        func, inputs, outputs = kernel_module(case)
        want = case.fn(*case.args)
        src = KernelSource(func, "cuda")
        heuristic = src.tiles[0]
        tiles = [heuristic] + [t for t in tiles if t != heuristic]
        print(f"== {case.name} {case.shape}: layout {src.layout}, heuristic {heuristic}", flush=True)
        variants = [("all features", dict(FEATURES), tiles)]
        variants += [(f"without {f}", {**FEATURES, f: False}, [heuristic]) for f in a.features.split(",") if f]
        saved = dict(FEATURES)
        for label, features, tile_list in variants:
            FEATURES.update(features)
            try:
                module = load(func, tile_list)
            finally:
                FEATURES.update(saved)
            for tile in tile_list:
                if time.perf_counter() - began > a.budget:
                    break
                for o in outputs:
                    o.fill_(float("nan"))
                try:
                    t = time_tile(module, tile, [*inputs, *outputs], a.rounds)
                except Exception as e:
                    print(f"   {label:26} {tile}: failed: {type(e).__name__}: {str(e)[:200]}", flush=True)
                    continue
                err = (outputs[0].double() - want.double()).abs().max().item()
                gbps = case.bytes / t / 1e9
                results.append({"case": case.name, "shape": case.shape, "variant": label, "tile": tile._asdict(), "us": t * 1e6,
                                 "gbps": gbps, "copy_pct": 100 * case.bytes / t / copy, "err": err})
                print(f"   {label:26} {str(tuple(tile)):32} {t * 1e6:8.1f} us {gbps:6.0f} GB/s {100 * case.bytes / t / copy:5.1f}% copy err {err:.1e}", flush=True)
    if a.out:
        os.makedirs(a.out, exist_ok=True)
        with open(os.path.join(a.out, "gpu_tiles.json"), "w") as f:
            json.dump({"copy": copy, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
