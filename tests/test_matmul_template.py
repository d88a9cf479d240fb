"""max-autotune's matmul template (passes/matmul_to_dot.py, codegen/triton_matmul.py):
matrix products with what surrounds them as Triton tl.dot kernels, run here in Triton's
interpreter, against eager PyTorch; every tile the tuner may pick; the library tile;
epilogue_fusion=False; the tuner's cache."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import strata
from strata.codegen import triton_autotune
from strata.codegen.triton_gpu import _interpreting, compile_kernel
from strata.codegen.triton_matmul import matmul_template
from strata.codegen.triton_matmul_tiles import MatmulTile, _clamp, candidate_tiles
from strata.dialects import kernel
from strata.dialects.context import parse_module
from strata.frontend.compile_graph import run_pipeline

TOLERANCE = {torch.float32: {}, torch.float16: {"rtol": 2e-3, "atol": 2e-3}, torch.bfloat16: {"rtol": 1.6e-2, "atol": 2e-2}}
MODE = "max-autotune-no-cudagraphs"


def _compile(fn, tmp_path: Path, **options):
    opts = {"codegen": "triton", "trace.enabled": True, "trace.dir": str(tmp_path / "trace"), **options}
    return strata.compile(fn, mode=MODE, options=opts)


def _kernel_sources(tmp_path: Path) -> list[str]:
    return [p.read_text() for p in sorted((tmp_path / "trace").glob("graph_*/kernels/*.py"))]


def _templates(tmp_path: Path) -> list[str]:
    return [s for s in _kernel_sources(tmp_path) if "matmul template" in s]


def _linear_gelu(x, w, b):
    return F.gelu(F.linear(x, w, b))


def _linear_residual(x, w, r):
    return x @ w.t() + r


def _bmm_scale(q, k):
    return torch.bmm(q, k.transpose(1, 2)) * 0.125


def _at_t(x, w):  # transposed left operand
    return x.t() @ w


def _batched_broadcast(x, w):  # [b, m, k] @ [k, n]: a matmul of a batch and one matrix
    return torch.relu(x @ w)


def _attention_scores(q, k):  # 4-d batches, as attention computes them
    return (q @ k.transpose(-1, -2)).softmax(-1)


CASES = {
    "linear+bias+gelu": (_linear_gelu, [(37, 70), (45, 70), (45,)]),
    "linear+residual": (_linear_residual, [(33, 40), (24, 40), (33, 24)]),
    "bmm+scale": (_bmm_scale, [(3, 17, 16), (3, 19, 16)]),
    "transposed-left": (_at_t, [(20, 9), (20, 31)]),
    "batch-times-matrix": (_batched_broadcast, [(2, 5, 24), (24, 18)]),
    "4d-scores": (_attention_scores, [(2, 2, 9, 16), (2, 2, 11, 16)]),
    "one-row-batched": (torch.bmm, [(4, 1, 32), (4, 32, 20)]),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("case", list(CASES))
def test_products_with_epilogues_run_as_templates_and_match_eager(case, dtype, tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path / "cache"))
    fn, shapes = CASES[case]
    torch.manual_seed(0)
    args = [torch.randn(s, dtype=dtype) for s in shapes]
    out = _compile(fn, tmp_path)(*args)
    torch.testing.assert_close(out, fn(*args), **TOLERANCE[dtype])
    (template,) = _templates(tmp_path)
    assert "tl.dot(" in template


def test_symbolic_rows_run_one_template_for_every_size(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path / "cache"))
    w, b = torch.randn(24, 40), torch.randn(24)
    f = strata.compile(_linear_gelu, mode=MODE, dynamic=True,
                       options={"codegen": "triton", "trace.enabled": True, "trace.dir": str(tmp_path / "trace")})
    for rows in (5, 19, 64):
        x = torch.randn(rows, 40)
        torch.testing.assert_close(f(x, w, b), _linear_gelu(x, w, b))
    (template,) = _templates(tmp_path)
    assert "M = " in template and "s" in template.split("def numels(symbols):")[1].split("return")[0]


def test_siblings_reading_one_input_share_a_template(tmp_path, monkeypatch):
    """Three projections of one input (q, k, v) fuse into one kernel of three dots."""
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path / "cache"))

    def qkv(x, wq, wk, wv):
        return x @ wq, x @ wk, x @ wv

    args = [torch.randn(20, 32)] + [torch.randn(32, 16) for _ in range(3)]
    for got, want in zip(_compile(qkv, tmp_path)(*args), qkv(*args)):
        torch.testing.assert_close(got, want)
    (template,) = _templates(tmp_path)
    assert template.count("tl.dot(") == 3


def test_epilogue_fusion_off_stores_the_product_and_runs_the_epilogue_apart(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path / "cache"))
    x, w, b = torch.randn(37, 70), torch.randn(45, 70), torch.randn(45)
    fused_dir, apart_dir = tmp_path / "fused", tmp_path / "apart"
    fused = _compile(_linear_gelu, fused_dir)(x, w, b)
    apart = _compile(_linear_gelu, apart_dir, epilogue_fusion=False)(x, w, b)
    torch.testing.assert_close(fused, _linear_gelu(x, w, b))
    torch.testing.assert_close(apart, _linear_gelu(x, w, b))
    (with_epilogue,) = _templates(fused_dir)
    (alone,) = _templates(apart_dir)
    assert "erf" in with_epilogue and "erf" not in alone  # gelu is in the template only when fused
    assert len(_kernel_sources(fused_dir)) == 1 and len(_kernel_sources(apart_dir)) == 2


def test_default_mode_keeps_library_calls(tmp_path):
    x, w, b = torch.randn(37, 70), torch.randn(45, 70), torch.randn(45)
    f = strata.compile(_linear_gelu, options={"codegen": "triton", "trace.enabled": True,
                                              "trace.dir": str(tmp_path / "trace")})
    torch.testing.assert_close(f(x, w, b), _linear_gelu(x, w, b))
    assert not _templates(tmp_path) and all("tl.dot" not in s for s in _kernel_sources(tmp_path))


def test_max_autotune_puts_the_pass_in_the_pipeline_with_its_options():
    resolved = strata.list_options  # noqa: F841  (the public listing stays as it was)
    from strata.frontend.options import resolve

    assert "matmul-to-dot" not in resolve()["pipeline"]
    assert "matmul-to-dot{epilogue_fusion=true}" in resolve(MODE)["pipeline"]
    off = resolve(MODE, {"epilogue_fusion": False, "codegen": "triton"})["pipeline"]
    assert 'matmul-to-dot{epilogue_fusion=false target="triton"}' in off
    assert off.index("matmul-to-dot") < off.index(",fuse")


# ---------------------------------------------------------------- every tile
PRODUCT_IR = """
func.func @graph(%x: !strata.tensor<[{m}, {k}], {t}>, %w: !strata.tensor<[{n}, {k}], {t}>, %b: !strata.tensor<[{n}], {t}>) -> !strata.tensor<[{m}, {n}], {t}> {{
  %wt = prim.permute %w {{dims = array<i64: 1, 0>}} : (!strata.tensor<[{n}, {k}], {t}>) -> !strata.tensor<[{k}, {n}], {t}>
  %y = prim.addmm %b, %x, %wt : (!strata.tensor<[{n}], {t}>, !strata.tensor<[{m}, {k}], {t}>, !strata.tensor<[{k}, {n}], {t}>) -> !strata.tensor<[{m}, {n}], {t}>
  %z = prim.tanh %y : (!strata.tensor<[{m}, {n}], {t}>) -> !strata.tensor<[{m}, {n}], {t}>
  func.return %z : !strata.tensor<[{m}, {n}], {t}>
}}
"""


# a linear layer of a 3-d input: summed as [b, t, n], the tanh reading it through the view
PRODUCT_3D_IR = """
func.func @graph(%x: !strata.tensor<[2, {t}, {k}], {dt}>, %w: !strata.tensor<[{n}, {k}], {dt}>, %b: !strata.tensor<[{n}], {dt}>) -> !strata.tensor<[2, {t}, {n}], {dt}> {{
  %x2 = prim.reshape %x {{shape = [{m} : i64, {k} : i64]}} : (!strata.tensor<[2, {t}, {k}], {dt}>) -> !strata.tensor<[{m}, {k}], {dt}>
  %wt = prim.permute %w {{dims = array<i64: 1, 0>}} : (!strata.tensor<[{n}, {k}], {dt}>) -> !strata.tensor<[{k}, {n}], {dt}>
  %y = prim.addmm %b, %x2, %wt : (!strata.tensor<[{n}], {dt}>, !strata.tensor<[{m}, {k}], {dt}>, !strata.tensor<[{k}, {n}], {dt}>) -> !strata.tensor<[{m}, {n}], {dt}>
  %y3 = prim.reshape %y {{shape = [2 : i64, {t} : i64, {n} : i64]}} : (!strata.tensor<[{m}, {n}], {dt}>) -> !strata.tensor<[2, {t}, {n}], {dt}>
  %z = prim.tanh %y3 : (!strata.tensor<[2, {t}, {n}], {dt}>) -> !strata.tensor<[2, {t}, {n}], {dt}>
  func.return %z : !strata.tensor<[2, {t}, {n}], {dt}>
}}
"""


def test_every_tile_of_a_3d_linear_with_its_epilogue_apart(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    t, n, k = 9, 20, 24
    module = parse_module(PRODUCT_3D_IR.format(t=t, m=2 * t, n=n, k=k, dt="bf16"))
    run_pipeline(module, ["matmul-to-dot", "fuse"], step_options=[{"target": "triton"}, {}])
    (func,) = [op for op in module.ops if isinstance(op, kernel.FuncOp)]
    compiled = compile_kernel(func, "cpu")
    x, w, b = (torch.randn(s, dtype=torch.bfloat16) for s in ((2, t, k), (n, k), (n,)))
    want = torch.tanh(F.linear(x, w, b))
    tiles = [tile for tile in compiled.module.tile_candidates(compiled.module.numels([])) if tile.epilogue_apart]
    assert len(tiles) == 4
    for tile in tiles:
        out = _at_an_offset(torch.full((2, t, n), float("nan"), dtype=torch.bfloat16))
        with _interpreting():
            compiled.module.launch_tile(tile, [_at_an_offset(x), _at_an_offset(w), _at_an_offset(b), out], [])
        torch.testing.assert_close(out, want, **TOLERANCE[torch.bfloat16], msg=lambda e: f"{tile.describe()}: {e}")


def _template_kernel(m: int, n: int, k: int, dtype: str) -> kernel.FuncOp:
    module = parse_module(PRODUCT_IR.format(m=m, n=n, k=k, t=dtype))
    run_pipeline(module, ["matmul-to-dot", "fuse"], step_options=[{"target": "triton"}, {}])
    (func,) = [op for op in module.ops if isinstance(op, kernel.FuncOp)]
    return func


@pytest.mark.parametrize("m,n,k", [(33, 20, 48), (64, 64, 64), (2, 24, 40), (70, 3, 130), (5, 24, 600)])
@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_every_candidate_tile_computes_the_product(m, n, k, dtype, tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    func = _template_kernel(m, n, k, dtype)
    assert matmul_template(func, "cpu") is not None
    compiled = compile_kernel(func, "cpu")
    torch_dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[dtype]
    x, w, b = (torch.randn(s, dtype=torch_dtype) for s in ((m, k), (n, k), (n,)))
    want = torch.tanh(torch.addmm(b, x, w.t()))
    tiles = compiled.module.tile_candidates(compiled.module.numels([]))
    assert any(t.library for t in tiles) and len(tiles) > 4
    assert "torch.addmm(bias, a, b)" in compiled.source  # the library adds the bias in cuBLAS's epilogue
    # the tanh apart: the product kernel stores the biased product (bf16: rounded, as
    # eager's addmm rounds it), a second kernel reads it
    assert sum(t.epilogue_apart for t in tiles) == 4
    assert f"def {func.sym_name.data}_product(" in compiled.source and f"def {func.sym_name.data}_rest(" in compiled.source
    # split-K for a product of few tiles and a long k (the last chunk masked: 600 is
    # no multiple of a block)
    assert any(t.split_k > 1 for t in tiles) == (k >= 512)
    x, w, b = (_at_an_offset(t) for t in (x, w, b))  # as a memory plan hands them over
    for tile in tiles:
        out = _at_an_offset(torch.full((m, n), float("nan"), dtype=torch_dtype))
        with _interpreting():
            compiled.module.launch_tile(tile, [x, w, b, out], [])
        torch.testing.assert_close(out, want, **TOLERANCE[torch_dtype], msg=lambda e: f"{tile.describe()}: {e}")


# a batched product with an epilogue: the library tile's and the apart tiles' epilogue
# kernels run on a 3-d grid, the batch along its z axis
BATCHED_IR = """
func.func @graph(%q: !strata.tensor<[3, 40, {k}], {t}>, %k: !strata.tensor<[3, {k}, 24], {t}>, %r: !strata.tensor<[3, 40, 24], {t}>) -> !strata.tensor<[3, 40, 24], {t}> {{
  %y = prim.bmm %q, %k : (!strata.tensor<[3, 40, {k}], {t}>, !strata.tensor<[3, {k}, 24], {t}>) -> !strata.tensor<[3, 40, 24], {t}>
  %z = prim.add %y, %r : (!strata.tensor<[3, 40, 24], {t}>, !strata.tensor<[3, 40, 24], {t}>) -> !strata.tensor<[3, 40, 24], {t}>
  %o = prim.tanh %z : (!strata.tensor<[3, 40, 24], {t}>) -> !strata.tensor<[3, 40, 24], {t}>
  func.return %o : !strata.tensor<[3, 40, 24], {t}>
}}
"""


@pytest.mark.parametrize("k", [32, 600])
@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="launches through the direct CUDA launcher"))])
def test_every_tile_of_a_batched_product_computes_every_batch(device, k, tmp_path, monkeypatch):
    """Each candidate, the library tile, the apart and split-K ones included, writes all
    three batches (on a GPU through the direct launcher, which once dropped a grid's z)."""
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    module = parse_module(BATCHED_IR.format(t="bf16", k=k))
    run_pipeline(module, ["matmul-to-dot", "fuse"], step_options=[{"target": "triton"}, {}])
    (func,) = [op for op in module.ops if isinstance(op, kernel.FuncOp)]
    compiled = compile_kernel(func, device)
    q, w, r = (torch.randn(s, dtype=torch.bfloat16, device=device) for s in ((3, 40, k), (3, k, 24), (3, 40, 24)))
    want = torch.tanh(torch.bmm(q, w) + r)
    tiles = compiled.module.tile_candidates(compiled.module.numels([]))
    assert any(t.library for t in tiles) and any(t.epilogue_apart for t in tiles)
    assert any(t.split_k > 1 for t in tiles) == (k > 500)
    for tile in tiles:
        out = torch.full((3, 40, 24), float("nan"), dtype=torch.bfloat16, device=device)
        with _interpreting() if device == "cpu" else contextlib.nullcontext():
            compiled.module.launch_tile(tile, [q, w, r, out], [])
        torch.testing.assert_close(out, want, **TOLERANCE[torch.bfloat16], msg=lambda e: f"{tile.describe()}: {e}")


def _at_an_offset(t: torch.Tensor) -> torch.Tensor:
    """`t`'s values in a view that starts 5 elements into a larger allocation."""
    storage = torch.full((t.numel() + 5,), float("nan"), dtype=t.dtype)
    view = storage[5:].view(t.shape)
    view.copy_(t)
    return view


def test_library_tile_writes_a_plain_product_directly(tmp_path, monkeypatch):
    """Without an epilogue, the library tile is one torch.matmul into the output."""
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    module = parse_module("""
func.func @graph(%x: !strata.tensor<[2, 9, 12], f32>, %w: !strata.tensor<[2, 12, 7], f32>) -> !strata.tensor<[2, 9, 7], f32> {
  %y = prim.bmm %x, %w : (!strata.tensor<[2, 9, 12], f32>, !strata.tensor<[2, 12, 7], f32>) -> !strata.tensor<[2, 9, 7], f32>
  func.return %y : !strata.tensor<[2, 9, 7], f32>
}
""")
    run_pipeline(module, ["matmul-to-dot", "fuse"], step_options=[{"target": "triton"}, {}])
    (func,) = [op for op in module.ops if isinstance(op, kernel.FuncOp)]
    compiled = compile_kernel(func, "cpu")
    assert "torch.matmul(a, b, out=out)" in compiled.source
    assert "TMA = False" in compiled.source  # a batched product: no persistent TMA tile
    assert "APART = False" in compiled.source  # nothing after the product to set apart
    # buffers that are views into larger allocations (a memory plan's arena), at offsets
    arena = torch.randn(2 * 9 * 12 + 2 * 12 * 7 + 2 * 9 * 7 + 10)
    x = arena[3:3 + 216].view(2, 9, 12)
    w = arena[219:219 + 168].view(2, 12, 7)
    out = arena[390:390 + 126].view(2, 9, 7)
    want = torch.bmm(x, w)
    with _interpreting():
        compiled.module.launch_tile(MatmulTile(library=True), [x, w, out], [])
    torch.testing.assert_close(out, want)


SCALED_BMM_IR = """
func.func @graph(%q: !strata.tensor<[2, 9, 12], {t}>, %k: !strata.tensor<[2, 12, 7], {t}>) -> !strata.tensor<[2, 9, 7], {t}> {{
  %y = prim.bmm %q, %k : (!strata.tensor<[2, 9, 12], {t}>, !strata.tensor<[2, 12, 7], {t}>) -> !strata.tensor<[2, 9, 7], {t}>
  %w = prim.convert_element_type %y {{dtype = "f32"}} : (!strata.tensor<[2, 9, 7], {t}>) -> !strata.tensor<[2, 9, 7], f32>
  %c = prim.full {{shape = [2 : i64, 9 : i64, 7 : i64], value = {scale} : f64, dtype = "f32"}} : !strata.tensor<[2, 9, 7], f32>
  %z = prim.mul %w, %c : (!strata.tensor<[2, 9, 7], f32>, !strata.tensor<[2, 9, 7], f32>) -> !strata.tensor<[2, 9, 7], f32>
  %o = prim.convert_element_type %z {{dtype = "{t}"}} : (!strata.tensor<[2, 9, 7], f32>) -> !strata.tensor<[2, 9, 7], {t}>
  func.return %o : !strata.tensor<[2, 9, 7], {t}>
}}
"""


@pytest.mark.parametrize("scale, alpha", [(0.125, True), (-4.0, True), (0.3, False)])
def test_library_tile_scales_by_a_power_of_two_as_cublas_alpha(scale, alpha, tmp_path, monkeypatch):
    """A product times a power of two is written by cuBLAS with that scale as its alpha,
    bit for bit eager's (scaling by 2**k commutes with rounding); any other scale is
    the epilogue kernel's."""
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    module = parse_module(SCALED_BMM_IR.format(t="bf16", scale=scale))
    run_pipeline(module, ["matmul-to-dot", "fuse"], step_options=[{"target": "triton"}, {}])
    (func,) = [op for op in module.ops if isinstance(op, kernel.FuncOp)]
    compiled = compile_kernel(func, "cpu")
    assert (f"out.baddbmm_(a, b, beta=0, alpha={scale!r})" in compiled.source) == alpha
    q, k = torch.randn(2, 9, 12, dtype=torch.bfloat16), torch.randn(2, 12, 7, dtype=torch.bfloat16)
    want = (torch.bmm(q, k).float() * scale).bfloat16()
    out = torch.full((2, 9, 7), float("nan"), dtype=torch.bfloat16)  # beta=0 ignores it
    with _interpreting():
        compiled.module.launch_tile(MatmulTile(library=True), [q, k, out], [])
    torch.testing.assert_close(out, want, rtol=0, atol=0)


def test_candidates_fit_the_sizes():
    tiles = candidate_tiles(8, 4096, 4096, wide=False, library=True)
    assert tiles[0].block_m == 16 and all(t.block_m <= 16 for t in tiles if not t.library)
    assert len(set(tiles)) == len(tiles)
    narrow = candidate_tiles(512, 512, 512, wide=False, library=False)
    wide = candidate_tiles(512, 512, 512, wide=True, library=False)
    assert max(t.block_k for t in wide) == max(t.block_k for t in narrow) // 2  # f32: twice the bytes
    assert not any(t.library for t in wide)


def test_the_tuner_times_templates_and_remembers_the_winner(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    func = _template_kernel(20, 16, 32, "f32")
    tuned = compile_kernel(func, "cpu", max_autotune=True)
    tuner = tuned.run.__closure__[0].cell_contents
    assert isinstance(tuner, triton_autotune.Autotuner)
    x, w, b = torch.randn(20, 32), torch.randn(16, 32), torch.randn(16)
    out = torch.empty(20, 16)
    tuned([x, w, b, out], [])
    torch.testing.assert_close(out, torch.tanh(torch.addmm(b, x, w.t())))
    (timings,) = tuner.timings.values()
    assert MatmulTile(library=True) in timings and len(timings) > 4
    bar = next(line for line in capsys.readouterr().err.splitlines() if line.startswith("strata: autotuning k0 (20x16x32x1)"))
    assert "best: " in bar
    again = compile_kernel(func, "cpu", max_autotune=True)
    again([x, w, b, out], [])
    assert "autotuning" not in capsys.readouterr().err  # the winner came from the disk cache


def _autocast_mlp(x, w, b, w2, b2):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        return torch.addmm(b2, F.gelu(torch.addmm(b, x, w)), w2)


def test_a_tuned_autocast_mlp_matches_eager(tmp_path, monkeypatch):
    """Two linear layers under autocast, tuned: the casts are kernels of their own, each
    product a template or cuBLAS, in buffers a memory plan places (a library tile once
    read them from the wrong place)."""
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    torch.manual_seed(0)
    x, w, b = torch.randn(64, 48), torch.randn(48, 96) / 7, torch.randn(96)
    w2, b2 = torch.randn(96, 48) / 10, torch.randn(48)
    f = _compile(_autocast_mlp, tmp_path)
    want = _autocast_mlp(x, w, b, w2, b2)
    for _ in range(2):  # the tuning call and a tuned one
        torch.testing.assert_close(f(x, w, b, w2, b2), want, **TOLERANCE[torch.bfloat16])
    assert len(_templates(tmp_path)) == 2


def _linear_3d_residual(x, w, b, r):
    return F.linear(x, w, b) + r


def test_a_linear_of_a_3d_input_takes_what_follows_its_view(tmp_path, monkeypatch):
    """linear on [b, t, d] is a view, an addmm and a view back: the product is computed
    in the viewed shape, so the residual add is its epilogue (one kernel), and the
    library tile still sees plain [m, k] and [k, n] operands."""
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path / "cache"))
    args = torch.randn(2, 5, 24), torch.randn(16, 24), torch.randn(16), torch.randn(2, 5, 16)
    torch.testing.assert_close(_compile(_linear_3d_residual, tmp_path)(*args), _linear_3d_residual(*args))
    (source,) = _kernel_sources(tmp_path)
    assert "matmul template" in source and "torch.addmm(bias, a, b)" in source


def test_training_runs_its_products_as_templates_and_matches_eager(tmp_path, monkeypatch):
    """Forward and backward graphs both: the weight and input gradients are products too."""
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path / "cache"))
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(24, 40), torch.nn.GELU(), torch.nn.Linear(40, 8))
    x, y = torch.randn(3, 7, 24), torch.randn(3, 7, 8)

    def grads(m):
        F.mse_loss(m(x), y).backward()
        out = [p.grad.clone() for p in model.parameters()]
        model.zero_grad(set_to_none=True)
        return out

    want = grads(model)
    got = grads(_compile(model, tmp_path))
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w)
    assert len(_templates(tmp_path)) >= 4  # two forward products, and the backward's


def test_a_marked_product_the_template_cannot_run_is_computed_and_said(tmp_path, monkeypatch):
    """A marked sum that is no product of two sides (written here by hand) runs as the
    generic reduction, correct but slow, and a warning names the kernel and the reason."""
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    module = parse_module("""
builtin.module {
kernel.func @k0 attributes {pointwise = [4 : i64, 3 : i64], reduction = [5 : i64], num_inputs = 2 : i64, symbols = [], sources = ["aten.test.default"]} {
^bb0(%a: !kernel.buffer<f32>, %b: !kernel.buffer<f32>, %out: !kernel.buffer<f32>):
  %x = kernel.load %a["5*x0 + r0"] : !kernel.buffer<f32> -> f32
  %y = kernel.load %b["3*r0 + x1"] : !kernel.buffer<f32> -> f32
  %s = prim.add %x, %y : (f32, f32) -> f32
  %t = kernel.reduce "sum" %s {strata.dot = "ieee"} : f32 -> f32
  kernel.store %t, %out["3*x0 + x1"] : f32, !kernel.buffer<f32>
}
}""")
    (func,) = list(module.ops)
    with pytest.warns(UserWarning, match=r"kernel k0 \(aten.test.default\) holds a matrix product .* something other than a product"):
        compiled = compile_kernel(func, "cpu")
    a, b = torch.randn(4, 5), torch.randn(5, 3)
    out = torch.empty(4, 3)
    compiled([a, b, out], [])
    torch.testing.assert_close(out, (a[:, :, None] + b[None]).sum(1))


def test_a_candidate_of_two_launches_wins_only_by_more_than_a_launch(tmp_path, monkeypatch):
    """The tuner times GPU work alone; a library or apart tile, which takes a second
    launch, must beat the one-kernel tiles by more than that launch's host cost."""
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    func = _template_kernel(20, 16, 32, "f32")
    x, w, b = torch.randn(20, 32), torch.randn(16, 32), torch.randn(16)
    one_kernel = 10e-6
    for library_time, wins in [(one_kernel - triton_autotune.EXTRA_LAUNCH_S / 2, False),
                               (one_kernel - 2 * triton_autotune.EXTRA_LAUNCH_S, True)]:
        tuned = compile_kernel(func, "cpu", max_autotune=True)
        tuner = tuned.run.__closure__[0].cell_contents
        timed: list[float] = []
        tuner.timer = lambda fn: timed.append(0) or (library_time if len(timed) == len(tiles) else one_kernel)
        tiles = triton_autotune.candidates(tuned.module, (20, 16, 32, 1), True)
        assert tiles[-1] == MatmulTile(library=True) and tiles[-1].launches == 2 and tiles[0].launches == 1
        out = torch.empty(20, 16)
        tuned([x, w, b, out], [])
        torch.testing.assert_close(out, torch.tanh(torch.addmm(b, x, w.t())))
        (best,) = tuner.best.values()
        assert best.library == wins, (library_time, best)
        monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path / "again"))  # no winner from the cache


@pytest.mark.parametrize("host_bound", [False, True])
def test_without_cuda_graphs_a_candidate_costs_its_host_time_too(host_bound, tmp_path, monkeypatch):
    """max-autotune-no-cudagraphs: a call costs the longer of its GPU and host work, so
    the library tile, fastest on the GPU but slow to issue, loses to a template tile
    there, and wins where CUDA graphs hide the host. Each candidate's time is keyed in
    the disk cache by which it was."""
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    func = _template_kernel(20, 16, 32, "f32")
    x, w, b = torch.randn(20, 32), torch.randn(16, 32), torch.randn(16)
    tuned = compile_kernel(func, "cpu", max_autotune=True)
    tuner = tuned.run.__closure__[0].cell_contents
    tuner.host_bound = host_bound
    tiles = triton_autotune.candidates(tuned.module, (20, 16, 32, 1), True)
    timed: list[float] = []
    # the library tile (timed last): 5 us of GPU work, 40 us of host work; the rest 10 and 12
    tuner.timer = lambda fn: timed.append(0) or (5e-6 if len(timed) == len(tiles) else 10e-6)
    tuner.host_timer = lambda fn: 40e-6 if len(timed) == len(tiles) else 12e-6
    out = torch.empty(20, 16)
    tuned([x, w, b, out], [])
    torch.testing.assert_close(out, torch.tanh(torch.addmm(b, x, w.t())))
    (best,) = tuner.best.values()
    assert best.library != host_bound, best


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("m,n,k", [(33, 20, 48), (130, 70, 64)])
def test_persistent_tma_tiles_compute_the_product(m, n, k, dtype, tmp_path, monkeypatch):
    """The persistent TMA tiles (both operands by tensor descriptors, one program per
    multiprocessor walking the tiles, four in the interpreter) with the epilogue; the
    weight read transposed ([n, k] rows); an unaligned view falls back to the plain tile."""
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    func = _template_kernel(m, n, k, dtype)
    compiled = compile_kernel(func, "cpu")
    assert "TMA = True" in compiled.source and f"def {func.sym_name.data}_tma(" in compiled.source
    torch_dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[dtype]
    x, w, b = (torch.randn(s, dtype=torch_dtype) for s in ((m, k), (n, k), (n,)))
    want = torch.tanh(torch.addmm(b, x, w.t()))
    assert not any(t.tma for t in candidate_tiles(m, n, k, dtype == "f32", True, True, tma=True))  # too small to pay
    tiles = candidate_tiles(4096, 4096, 4096, dtype == "f32", True, True, tma=True)
    tma = [t._replace(block_m=_clamp(t.block_m, m), block_n=_clamp(t.block_n, n), block_k=_clamp(t.block_k, k))
           for t in tiles if t.tma]
    assert len(tma) == 5
    made = []  # the descriptors each launch makes
    descriptor = compiled.module.TensorDescriptor
    monkeypatch.setattr(compiled.module, "TensorDescriptor",
                        type("Counted", (), {"from_tensor": staticmethod(lambda t, block: made.append(block) or
                                                                         descriptor.from_tensor(t, block))}))
    for tile in tma:
        for shifted in (False, True):  # aligned buffers, then views 5 elements in: not 16-byte aligned
            args = [_at_an_offset(t) if shifted else t for t in (x, w, b)]
            out = torch.full((m, n), float("nan"), dtype=torch_dtype)
            made.clear()
            with _interpreting():
                compiled.module.launch_tile(tile, [*args, out], [])
            torch.testing.assert_close(out, want, **TOLERANCE[torch_dtype], msg=lambda e: f"{tile.describe()}: {e}")
            # x by [BLOCK_M, BLOCK_K] rows, the weight by [BLOCK_N, BLOCK_K] rows, read transposed
            expected = [] if shifted else [[tile.block_m, tile.block_k], [tile.block_n, tile.block_k]]
            assert made == expected, tile.describe()

