"""Every persistent tile (x-block 1-8, 1-32 warps) of strata's softmax and layer norm
kernels, f32 and bf16 (and bf16 in, f32 out), over rows of 1024 to 8192: what
codegen/triton_tiles.py's MIN_PER_THREAD is set from.

    python benchmarks/gpu_tile_sweep.py [--shapes 8192x4096,4096x8192]     # on the GPU machine

Each case is compiled by strata (its kernel module kept through trace.dir), then each
tile is launched through the module's `launch_tile` on the same buffers and timed by
triton.testing.do_bench; a tile whose output is off the heuristic's is marked `!`.
Prints, per case, the whole call's time, the heuristic's tile and the tiles fastest first.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import re
import tempfile

import torch
import torch.nn.functional as F
from triton.testing import do_bench

import strata
from strata.codegen.triton_tiles import Tile


def layer_norm(x, w, b):
    return F.layer_norm(x, (x.shape[-1],), w, b, eps=1e-5)


def layer_norm_in_f32(x, w, b):
    return F.layer_norm(x.float(), (x.shape[-1],), w, b, eps=1e-5)


def softmax(x):
    return torch.softmax(x, -1)


def cases(shapes):
    for rows, cols in shapes:
        for dtype in (torch.float32, torch.bfloat16):
            x = torch.randn(rows, cols, device="cuda", dtype=dtype)
            w, b = (torch.randn(cols, device="cuda", dtype=dtype) for _ in range(2))
            yield f"layer_norm {rows}x{cols} {dtype}", layer_norm, (x, w, b)
            yield f"softmax {rows}x{cols} {dtype}", softmax, (x,)
            if dtype == torch.bfloat16:
                yield f"layer_norm bf16 -> f32 {rows}x{cols}", layer_norm_in_f32, (x, w.float(), b.float())


def load(path: str, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sweep(i: int, name: str, fn, args) -> None:
    trace = tempfile.mkdtemp(prefix="tile-sweep-")
    torch._dynamo.reset()  # each case compiles anew (Dynamo's recompile limit)
    compiled = strata.compile(fn, options={"trace.enabled": True, "trace.dir": trace})
    with torch.no_grad():
        out = compiled(*args)
    paths = glob.glob(f"{trace}/graph_*/kernels/k*.py")
    if len(paths) != 1:
        print(f"## {name}: {len(paths)} kernels, not one: skipped")
        return
    source = open(paths[0]).read()
    site = re.search(r"_site0 = CallSite\(k0, (.*)\)", source)
    module = load(paths[0], f"sweep{i}")
    moved = sum(a.numel() * a.element_size() for a in args) + out.numel() * out.element_size()
    call = do_bench(lambda: compiled(*args), rep=100) * 1000
    print(f"## {name}: call {call:.1f} us ({moved / call / 1e3:.0f} GB/s), heuristic {site[1] if site else '?'}")
    rblock = 1 << (args[0].shape[-1] - 1).bit_length()
    results = []
    for xblock in (1, 2, 4, 8):
        for warps in (1, 2, 4, 8, 16, 32):
            if xblock * rblock > 32768 or xblock * rblock // (32 * warps) < 4:
                continue
            tile = Tile(True, xblock, rblock, warps)
            o = torch.empty_like(out)
            module.launch_tile(tile, [*args, o], [])
            ok = torch.allclose(o.float(), out.float(), atol=1e-2, rtol=1e-2)
            t = do_bench(lambda: module.launch_tile(tile, [*args, o], []), rep=100) * 1000
            results.append((t, xblock, warps, ok))
    results.sort()
    print("   " + "  ".join(f"x{x}w{w}:{t:.1f}{'' if ok else '!'}" for t, x, w, ok in results))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default="8192x4096,4096x8192,32768x1024,16384x2048")
    shapes = [tuple(map(int, s.split("x"))) for s in p.parse_args().shapes.split(",")]
    for i, (name, fn, args) in enumerate(cases(shapes)):
        sweep(i, name, fn, args)


if __name__ == "__main__":
    main()
