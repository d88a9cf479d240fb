"""GPU kernels in a package (runtime/package_triton.py).

On any machine: the launcher text kept and checked, the tiles and argument patterns
chosen at packaging, and a loaded kernel's choices (binary, tile, refusals), with the
compile and the CUDA launcher replaced by fakes. On a GPU: kernels packed, loaded in a
process where Triton, xDSL and the code generators cannot be imported, and compared
with the JIT's over sizes the packaging run never saw.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import types

import pytest
import torch

from strata.codegen.triton_gpu import compile_kernel
from strata.codegen.triton_tiles import Tile
from strata.testing.no_compiler import blocking_preamble
from strata.runtime import package_triton as pt
from tests.test_codegen_triton import SOFTMAX, kernel_func, load, prim, split_kernel, store

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
F32 = torch.float32


def pointwise_func():
    body = "\n".join([load("a", "in0", "x0", "f32"), prim("e", "exp", ["a"], "f32"), prim("s", "add", ["e", "a"], "f32"),
                      store("s", "out0", "x0", "f32")])
    return kernel_func(body, ["f32", "f32"], 1, '"s0"', symbols='"s0"')


def softmax_func():
    return kernel_func(SOFTMAX, ["f32", "f32"], 1, '"s0"', '"s1"', symbols='"s0", "s1"', sources='"aten._softmax.default"')


# ---------------------------------------------------------------- fakes (CPU)
class FakeCuda:
    """The static launcher's stand-in: a 'function' is the fake cubin (which names the
    kernel, its options and its pattern); launches are recorded."""

    def __init__(self):
        self.launches = []
        self.unloaded = 0

    def load(self, cubin, function, shared, index):
        return "module", json.loads(cubin)

    def launch(self, function, gx, gy, gz, warps, shared, arg_types, args, stream):
        assert len(arg_types) == len(args)
        self.launches.append({**function, "grid": (gx, gy, gz), "warps": warps})

    def unload(self, module):
        self.unloaded += 1

    stream = staticmethod(lambda index: 0)
    device = staticmethod(lambda: 0)
    on = staticmethod(lambda index: contextlib.nullcontext())
    alloc = staticmethod(lambda index: lambda sizes, strides, dtype: torch.empty_strided(sizes, strides, dtype=dtype))


def fake_compile(name, jobs, jits, device):
    out = []
    for kernel, options, arg_dtypes, pattern in jobs:
        function = {"kernel": kernel, "options": dict(options), "pattern": list(pattern)}
        binary = {"function": kernel, "num_warps": dict(options)["num_warps"], "shared": 0,
                  "arg_types": "".join("l" if d is None else "O" for d in arg_dtypes), "scratch": 1}
        out.append((binary, json.dumps(function).encode()))
    return out


@pytest.fixture
def fake_gpu(monkeypatch):
    monkeypatch.setattr(pt, "_compile", fake_compile)
    monkeypatch.setattr(pt, "_gpu_arch", lambda index: "sm_90")
    monkeypatch.setattr(pt, "_gpu_name", lambda index: "a fake GPU")
    fake = FakeCuda()
    monkeypatch.setattr(pt, "_cuda_api", lambda: fake)
    return fake


def packed(func, **kwargs):
    """pack then load through JSON, as a package holds it."""
    compiled = compile_kernel(func, "cuda")  # generated and imported; nothing is compiled
    meta, files = pt.pack_kernel(compiled, torch.device("cuda", 0), dtypes=[F32, F32], **kwargs)
    meta = json.loads(json.dumps(meta))
    return meta, files, pt.load_kernel(meta, files, torch.device("cuda", 0))


# ---------------------------------------------------------------- the launcher text
def test_launcher_text_keeps_the_launcher_and_no_kernel():
    compiled = compile_kernel(split_kernel('"s0"', '"s1"', symbols='"s0", "s1"', index="s1*x0 + r0"), "cuda")
    text = pt.launcher_source(compiled.source, compiled.name)
    assert "def launch(" in text and "def launch_tile(" in text and "def numels(" in text
    assert "import" not in text and "@triton.jit" not in text and "tl." not in text
    assert pt._check_launcher(text) == {"k0_persistent", "k0_looped", "k0_split", "k0_combine"}


@pytest.mark.parametrize("code", [
    "import os",
    "def launch(buffers, symbols):\n    return buffers.__class__",
    "def launch(buffers, symbols):\n    return getattr(buffers, 'x')",
    "def launch(buffers, symbols):\n    return buffers[0]",
    "def launch(buffers, symbols):\n    return [b for b in buffers]",
    "def launch(buffers, symbols):\n    return (lambda: 0)()",
    "def launch(buffers, symbols):\n    k0[1,](*buffers)",
    "def launch(buffers, symbols):\n    return __builtins__",
    "def launch(buffers, symbols):\n    return torch.ones",
    "x = open('f')",
    "_site0 = CallSite(k0(), XBLOCK=1)",
])
def test_launcher_text_outside_the_grammar_is_refused(code):
    with pytest.raises(ValueError, match="launcher"):
        pt._check_launcher(code)


# ---------------------------------------------------------------- packaging and loading (fakes)
def test_pointwise_runs_its_fallback_tile_and_the_binary_its_pointers_allow(fake_gpu):
    meta, files, kernel = packed(pointwise_func())
    assert meta["fallback"] == [False, 1024, 1, 4, 1] and meta["tiles"] == [meta["fallback"]]
    (site,) = meta["sites"]
    assert site["dtypes"] == ["float32", "float32", None]
    assert [b["pattern"] for b in site["binaries"]] == [[True, True, True], [True, True, False], [False, False, False]]
    assert len(files) == 3
    for n in (1, 17, 1000, 4096, 5000):
        kernel([torch.randn(n), torch.empty(n)], [n])
    assert [(la["grid"][0], la["options"]["XBLOCK"], la["pattern"]) for la in fake_gpu.launches] == [
        (1, 1024, [True, True, False]), (1, 1024, [True, True, False]), (1, 1024, [True, True, False]),
        (4, 1024, [True, True, True]), (5, 1024, [True, True, False])]
    fake_gpu.launches.clear()
    kernel([torch.randn(101)[1:], torch.empty(100)], [100])  # an input at an odd offset
    assert fake_gpu.launches[0]["pattern"] == [False, False, False]


def test_ranges_package_the_heuristics_tiles(fake_gpu):
    meta, _, kernel = packed(pointwise_func(), ranges={"s0": [2, 4096]})
    # up to 256 elements one program; up to 4,096 (SMALL_POINTWISE) programs of 256 at 2
    # warps; the fallback's 1,024 beyond
    assert sorted((t[1], t[3]) for t in meta["tiles"]) == [(128, 1), (256, 1), (256, 2), (1024, 4)]
    for n in (17, 200, 600, 3000):
        kernel([torch.randn(n), torch.empty(n)], [n])
    assert [(la["options"]["XBLOCK"], la["options"]["num_warps"]) for la in fake_gpu.launches] == [
        (128, 1), (256, 1), (256, 2), (256, 2)]


def test_reduction_outside_its_ranges_runs_the_looped_fallback(fake_gpu):
    compiled = compile_kernel(softmax_func(), "cuda")
    meta, files = pt.pack_kernel(compiled, torch.device("cuda", 0), ranges={"s0": [1, 64], "s1": [1, 1024]},
                                 dtypes=[F32, F32])
    kernel = pt.load_kernel(json.loads(json.dumps(meta)), files, torch.device("cuda", 0))
    assert meta["fallback"] == [False, 1, 2048, 8, 1]
    kernel([torch.randn(4, 7), torch.empty(4, 7)], [4, 7])
    kernel([torch.randn(2, 20000), torch.empty(2, 20000)], [2, 20000])
    first, second = fake_gpu.launches
    assert first["kernel"] == "k0_persistent" and first["options"]["RBLOCK"] == 8
    assert second["kernel"] == "k0_looped" and second["grid"] == (2, 1, 1)


def test_sizes_outside_the_ranges_run_the_nearest_tile_right_for_them(fake_gpu):
    compiled = compile_kernel(softmax_func(), "cuda")
    meta, files = pt.pack_kernel(compiled, torch.device("cuda", 0), ranges={"s0": [1, 4], "s1": [1, 64]},
                                 dtypes=[F32, F32])
    kernel = pt.load_kernel(meta, files, torch.device("cuda", 0))
    assert [True, 16, 64, 4, 1] not in meta["tiles"]  # what the heuristic picks for 100 rows of 50
    kernel([torch.randn(100, 50), torch.empty(100, 50)], [100, 50])
    kernel([torch.randn(100, 100), torch.empty(100, 100)], [100, 100])  # rows longer than any packaged RBLOCK
    assert [(la["kernel"], la["options"]["XBLOCK"], la["options"]["RBLOCK"]) for la in fake_gpu.launches] == [
        ("k0_persistent", 4, 64), ("k0_looped", 1, 2048)]


def test_nearest_tile():
    fallback = Tile(False, 1, 2048, 8)
    tiles = {fallback, Tile(True, 8, 64, 1), Tile(True, 1, 1024, 4), Tile(False, 1, 2048, 8, 4)}
    assert pt.nearest_tile(Tile(True, 16, 64, 2), tiles, fallback) == Tile(True, 8, 64, 1)
    assert pt.nearest_tile(Tile(True, 4, 256, 2), tiles, fallback) == Tile(True, 1, 1024, 4)
    assert pt.nearest_tile(Tile(True, 1, 4096, 8), tiles, fallback) == fallback
    assert pt.nearest_tile(Tile(False, 1, 2048, 8, 64), tiles, fallback) == Tile(False, 1, 2048, 8, 4)
    assert pt.nearest_tile(Tile(False, 1024, 1, 4), {Tile(False, 128, 1, 1), Tile(False, 512, 1, 2)}, fallback) == \
        Tile(False, 512, 1, 2)


def test_static_split_reduction_launches_both_kernels(fake_gpu):
    compiled = compile_kernel(split_kernel("3", "40000"), "cuda")
    meta, files = pt.pack_kernel(compiled, torch.device("cuda", 0), dtypes=[F32] * 4)
    assert not meta["symbolic"] and meta["fallback"] is None
    kernel = pt.load_kernel(meta, files, torch.device("cuda", 0))
    kernel([torch.randn(3, 40000), torch.ones(3), torch.empty(3), torch.empty(3)], [])
    assert [(la["kernel"], la["grid"]) for la in fake_gpu.launches] == [("k0_split", (3, 4, 1)), ("k0_combine", (1, 1, 1))]


def test_patterns_the_run_launched_are_packaged(fake_gpu):
    compiled = compile_kernel(pointwise_func(), "cuda")
    plan = pt._Plan(pt.launcher_source(compiled.source, compiled.name))
    ((kernel, options, _),) = plan.launches(Tile(False, 128, 1, 1))
    # as a CallSite holds what it launched: its specialization key (codegen/triton_launch.py)
    compiled.module.k0.site(dict(options)).entries[(True, True, (False, True, True))] = ("launch",)
    meta, _ = pt.pack_kernel(compiled, torch.device("cuda", 0), dtypes=[F32, F32])
    assert [False, 128, 1, 1, 1] in meta["tiles"]
    site = next(s for s in meta["sites"] if dict(s["options"])["XBLOCK"] == 128)
    assert [b["pattern"] for b in site["binaries"]] == [[True, True, True], [True, True, False], [False, False, False]]
    loaded = pt.load_kernel(meta, _, torch.device("cuda", 0))
    for n in (32, 33):
        loaded([torch.randn(n), torch.empty(n)], [n])
    assert [la["pattern"] for la in fake_gpu.launches] == [[True, True, True], [True, True, False]]


def test_autotuned_winners_are_fixed_at_packaging(fake_gpu):
    compiled = compile_kernel(pointwise_func(), "cuda")
    tuned = types.SimpleNamespace(name=compiled.name, source=compiled.source, module=compiled.module,
                                  run=types.SimpleNamespace(best={(1000, 1): Tile(False, 256, 1, 2)}))
    meta, files = pt.pack_kernel(tuned, torch.device("cuda", 0), dtypes=[F32, F32])
    kernel = pt.load_kernel(meta, files, torch.device("cuda", 0))
    for n in (1000, 5000):  # the winner at its size, the heuristic's tile at another
        kernel([torch.randn(n), torch.empty(n)], [n])
    assert [la["options"]["XBLOCK"] for la in fake_gpu.launches] == [256, 1024]


def test_refusals_name_the_kernel(fake_gpu, monkeypatch):
    meta, files, kernel = packed(pointwise_func())
    with pytest.raises(RuntimeError, match=r"k0 .* was packaged for \(float32, float32, int\)"):
        kernel([torch.randn(8, dtype=torch.float64), torch.empty(8, dtype=torch.float64)], [8])
    aligned_only = json.loads(json.dumps(meta))
    aligned_only["sites"][0]["binaries"].pop()
    kernel = pt.load_kernel(aligned_only, files, torch.device("cuda", 0))
    with pytest.raises(RuntimeError, match="k0 .* has no binary for these arguments' alignment"):
        kernel([torch.randn(9)[1:], torch.empty(8)], [8])
    monkeypatch.setattr(pt, "_gpu_arch", lambda index: "sm_80")
    with pytest.raises(RuntimeError, match="built for sm_90 .* this GPU .* is sm_80"):
        pt.load_kernel(meta, files, torch.device("cuda", 0))
    monkeypatch.setattr(pt, "_gpu_arch", lambda index: "sm_90")
    with pytest.raises(RuntimeError, match="k0 lacks its binary"):
        pt.load_kernel(meta, {}, torch.device("cuda", 0))
    tampered = {**meta, "launcher": meta["launcher"] + "\nimport os\n"}
    with pytest.raises(RuntimeError, match="k0: its launcher is not one a package holds"):
        pt.load_kernel(tampered, files, torch.device("cuda", 0))


def test_packaging_needs_the_buffers_dtypes(fake_gpu):
    compiled = compile_kernel(pointwise_func(), "cuda")  # never run: Triton compiled nothing to read them from
    with pytest.raises(ValueError, match="kernel k0: the dtype of k0's in0 is unknown"):
        pt.pack_kernel(compiled, torch.device("cuda", 0))


# ---------------------------------------------------------------- on a GPU
GPU_CASES = {
    # name: (func, ranges, the packaging run's sizes, sizes checked), sizes as the symbols
    "pointwise": (pointwise_func, {"s0": [1, 8192]}, [1000], [[1], [17], [128], [1000], [4099], [70000]]),
    "softmax": (softmax_func, {"s0": [1, 4096], "s1": [1, 2048]}, [1000, 1000],
                [[1, 1], [3, 17], [128, 128], [1000, 1000], [2, 9000], [17, 1000]]),
    "softmax_nearest": (softmax_func, {"s0": [1, 4], "s1": [1, 64]}, [4, 50], [[100, 50], [100, 100], [7, 3], [4, 64]]),
    "split": (lambda: split_kernel('"s0"', '"s1"', symbols='"s0", "s1"', index="s1*x0 + r0", dtype="bf16"),
              {"s0": [1, 64], "s1": [1, 65536]}, [2, 40007], [[2, 40007], [3, 100], [1, 1], [64, 2048], [1, 70000]]),
    "static_split": (lambda: split_kernel("3", "40000"), None, [], [[]]),
}


def gpu_buffers(name: str, symbols: list[int], offset: bool = False) -> list[torch.Tensor]:
    """Inputs (random; one at an odd offset where `offset`) and outputs for a case."""
    g = torch.Generator(device="cuda").manual_seed(sum(symbols) + 7)
    dtype = torch.bfloat16 if name == "split" else F32
    shape = {"pointwise": lambda: (symbols[0],), "softmax": lambda: tuple(symbols), "softmax_nearest": lambda: tuple(symbols),
             "split": lambda: tuple(symbols), "static_split": lambda: (3, 40000)}[name]()
    n = 1
    for d in shape:
        n *= d
    x = torch.randn(n + 1, generator=g, device="cuda").to(dtype)
    x = (x[1:] if offset else x[:n]).view(shape)
    if name in ("pointwise", "softmax", "softmax_nearest"):
        return [x, torch.empty(shape, device="cuda")]
    rows = shape[0]
    return [x, torch.full((rows,), 2.0, device="cuda", dtype=dtype), torch.empty(rows, device="cuda", dtype=dtype),
            torch.empty(rows, device="cuda", dtype=dtype)]


@cuda
@pytest.mark.parametrize("name", list(GPU_CASES))
def test_packaged_kernels_match_the_jit_in_a_process_without_triton(name, tmp_path):
    func, ranges, example, sizes = GPU_CASES[name]
    compiled = compile_kernel(func(), "cuda")
    compiled(gpu_buffers(name, example), example)  # the packaging run
    meta, files = pt.pack_kernel(compiled, torch.device("cuda"), ranges=ranges)
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    for f, data in files.items():
        (tmp_path / f).write_bytes(data)
    cases = [(gpu_buffers(name, s, offset), s) for s in sizes for offset in (False, True)]
    torch.save(cases, tmp_path / "cases.pt")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    run = subprocess.run([sys.executable, "-c", LOADER, str(tmp_path)], capture_output=True, text=True, env=env,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == []  # nothing of Triton, xDSL or the code generators
    packaged = torch.load(tmp_path / "out.pt")
    for (buffers, symbols), (theirs, _) in zip(cases, packaged):
        compiled(buffers, symbols)
        for ours, got in zip(buffers, theirs):
            torch.testing.assert_close(got, ours, rtol=2e-2 if name == "split" else 1e-5, atol=1e-5,
                                       msg=lambda m: f"{name} at {symbols}: {m}")


BLOCKED = ("triton", "xdsl", "torch._dynamo", "torch._inductor", "strata.dialects", "strata.passes",
           "strata.frontend.backend", "strata.codegen.triton_gpu", "strata.codegen.triton_launch",
           "strata.codegen.triton_source", "strata.codegen.triton_precompile", "strata.codegen.llvm_jit")
LOADER = blocking_preamble(BLOCKED, "may not be imported where a package is loaded") + f"""
import json, sys
BLOCKED = {BLOCKED!r}
""" + r"""
import torch
from strata.runtime import package_triton
folder = sys.argv[1]
meta = json.load(open(f"{folder}/meta.json"))
files = {b["file"]: open(f"{folder}/{b['file']}", "rb").read() for s in meta["sites"] for b in s["binaries"]}
kernel = package_triton.load_kernel(meta, files, torch.device("cuda"))
cases = torch.load(f"{folder}/cases.pt")
for buffers, symbols in cases:
    kernel(buffers, symbols)
torch.cuda.synchronize()
torch.save(cases, f"{folder}/out.pt")
print(json.dumps(sorted(m for m in sys.modules if any(m == b or m.startswith(b + ".") for b in BLOCKED))))
"""
