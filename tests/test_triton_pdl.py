"""Programmatic dependent launch (codegen/triton_pdl.py): every program of a generated
CUDA kernel waits for the previous kernel before anything else, and only a kernel that
does is launched with PDL, only where the GPU and Triton support it."""

from __future__ import annotations

import ast

import pytest
import torch

from strata.codegen import triton_pdl
from strata.codegen.triton_source import KernelSource
from tests.test_codegen_triton import SOFTMAX, kernel_func, load, prim, reduce, store
from tests.test_triton_launch import FakeJIT, FakeParam, _fake_site


def _pointwise():
    body = "\n".join([load("a", "in0", "x0", "f32"), prim("e", "exp", ["a"], "f32"), store("e", "out0", "x0", "f32")])
    return kernel_func(body, ["f32", "f32"], 1, "1000")


def _row_sum(rows: int, cols: int):
    body = "\n".join([load("a", "in0", f"{cols}*x0 + r0", "f32"), reduce("s", "sum", "a", "f32"), store("s", "out0", "x0", "f32")])
    return kernel_func(body, ["f32", "f32"], 1, str(rows), str(cols))


KERNELS = {
    "pointwise": _pointwise,
    "persistent rows": lambda: _row_sum(64, 1000),
    "split rows": lambda: _row_sum(2, 1 << 20),
    "looped rows": lambda: kernel_func(SOFTMAX.replace("x0*s1", "20000*x0"), ["f32", "f32"], 1, "3", "20000"),
}


def _kernels(source: str) -> list[ast.FunctionDef]:
    tree = ast.parse(source)
    return [f for f in tree.body if isinstance(f, ast.FunctionDef) and not f.name.startswith("_")  # not a helper
            and any(ast.unparse(d) == "triton.jit" for d in f.decorator_list)]


@pytest.mark.parametrize("kind", sorted(KERNELS))
def test_every_cuda_kernel_waits_before_it_touches_memory(kind):
    kernels = _kernels(KernelSource(KERNELS[kind](), "cuda").module())
    assert kernels
    if kind == "split rows":
        assert len(kernels) == 2  # the partials and their combining kernel
    for fn in kernels:
        last = fn.args.args[-1]
        assert last.arg == triton_pdl.PARAM and ast.unparse(last.annotation) == "tl.constexpr"
        assert ast.unparse(fn.args.defaults[-1]) == "False"
        first = fn.body[0]  # nothing before it: no load, no store, no index
        assert isinstance(first, ast.If) and ast.unparse(first.test) == triton_pdl.PARAM
        assert [ast.unparse(s) for s in first.body] == ["gdc_launch_dependents()", "gdc_wait()"]
        assert not first.orelse


@pytest.mark.parametrize("kind", sorted(KERNELS))
def test_interpreted_kernels_have_no_dependent_launch(kind):
    source = KernelSource(KERNELS[kind](), "cpu").module()
    assert "gdc_" not in source and triton_pdl.PARAM not in source


class WaitingJIT(FakeJIT):
    """A kernel that takes the PDL parameter, as generated ones do."""

    __name__ = "k0"
    params = [*FakeJIT.params, FakeParam(triton_pdl.PARAM, True)]


def test_call_site_turns_pdl_on_only_for_a_kernel_that_waits(monkeypatch):
    monkeypatch.setattr(triton_pdl, "_current_gpu_supports", lambda: True)
    fn, site = _fake_site(monkeypatch)
    assert "launch_pdl" not in site.options and triton_pdl.PARAM not in site.options  # FakeJIT takes no PDL
    from strata.codegen import triton_launch

    waiting = triton_launch.CallSite(WaitingJIT(), XBLOCK=128, num_warps=4)
    assert waiting.options == {"XBLOCK": 128, "num_warps": 4, "PDL": True, "launch_pdl": True}
    assert waiting.constants == (128, True)  # XBLOCK, then PDL: the kernel's constexprs


def test_call_site_keeps_pdl_off_where_the_gpu_cannot(monkeypatch):
    monkeypatch.setattr(triton_pdl, "_current_gpu_supports", lambda: False)
    options = triton_pdl.launch_options(WaitingJIT(), {"XBLOCK": 64})
    assert options == {"XBLOCK": 64, "PDL": False}


def test_a_package_keys_a_call_site_on_the_launcher_s_options(monkeypatch):
    """A package compiles what its launcher text launches (no PDL: it runs through
    torch's static launcher), so the patterns a packaging run saw are keyed on the
    options the text gives, not on those PDL added."""
    import types

    from strata.codegen import triton_launch
    from strata.runtime.package_triton import _seen

    monkeypatch.setattr(triton_pdl, "_current_gpu_supports", lambda: True)
    _fake_site(monkeypatch)
    site = triton_launch.CallSite(WaitingJIT(), XBLOCK=128, num_warps=4)
    assert site.options["launch_pdl"]
    site.entries[(True, (False, True, True))] = ("compiled",)
    assert _seen(types.SimpleNamespace(_site0=site)) == {("k0", (("XBLOCK", 128), ("num_warps", 4))): {(True, True)}}


def test_pdl_off_by_environment_and_without_cuda(monkeypatch, caplog):
    triton_pdl.supported.cache_clear()
    monkeypatch.setenv(triton_pdl.ENV_VAR, "0")
    with caplog.at_level("INFO", logger="strata.codegen"):
        assert not triton_pdl.supported(0)
    assert "launch without PDL (STRATA_PDL=0)" in caplog.text  # says so, and why
    triton_pdl.supported.cache_clear()
    monkeypatch.delenv(triton_pdl.ENV_VAR)
    if not torch.cuda.is_available():
        assert not triton_pdl._current_gpu_supports()
    triton_pdl.supported.cache_clear()


HOPPER = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 9


@pytest.mark.skipif(not HOPPER, reason="PDL needs a GPU of compute capability 9 or more")
@pytest.mark.parametrize("kind", sorted(KERNELS))
def test_on_a_hopper_gpu_kernels_launch_with_pdl_and_compute_the_same(kind, monkeypatch):
    """It engages: each call site launches a kernel compiled with launch_pdl, and the
    values are those of the same kernel launched without it."""
    from strata.codegen.triton_gpu import compile_kernel
    from strata.codegen.triton_launch import CallSite

    func = KERNELS[kind]()
    rows = {"pointwise": (1000,), "persistent rows": (64, 1000), "split rows": (2, 1 << 20), "looped rows": (3, 20000)}[kind]
    x = torch.randn(*rows, device="cuda")
    results = []
    for pdl in ("1", "0"):
        monkeypatch.setenv(triton_pdl.ENV_VAR, pdl)
        triton_pdl.supported.cache_clear()
        kernel = compile_kernel(func, "cuda")  # a module loaded afresh: its call sites made under this setting
        out = torch.empty(rows[:1] if len(rows) == 2 and kind != "looped rows" else rows, device="cuda")
        kernel.module.launch([x, out], [])
        torch.cuda.synchronize()
        sites = [v for v in vars(kernel.module).values() if isinstance(v, CallSite)]
        assert sites and all(s.options.get("launch_pdl", False) == (pdl == "1") for s in sites)
        if pdl == "1":
            entries = [e for s in sites for e in s.entries.values() if e is not None]
            # Triton's own launcher: torch's static one refuses a kernel with launch attributes
            assert entries and all(len(e) == 3 for e in entries)
        results.append(out)
    triton_pdl.supported.cache_clear()
    torch.testing.assert_close(results[0], results[1], rtol=0, atol=0)


def test_decode_attention_kernels_wait_first():
    import inspect

    from strata.runtime import decode_attention_kernels

    for name in ("partial", "combine"):
        fn = getattr(decode_attention_kernels, name)
        assert [p.name for p in fn.params][-1] == triton_pdl.PARAM
        body = ast.parse(inspect.getsource(fn.fn)).body[0].body
        assert ast.unparse(body[0].test) == triton_pdl.PARAM
        assert [ast.unparse(s) for s in body[0].body] == ["gdc_launch_dependents()", "gdc_wait()"]


@pytest.mark.skipif(not HOPPER, reason="PDL needs a GPU of compute capability 9 or more")
def test_on_a_hopper_gpu_a_weight_rewritten_between_calls_is_read_fresh():
    """Between two calls of a compiled decode-style product (a norm, then a product
    with the weight), a compiled step of our own rewrites the weight in place. Both
    launch with PDL; as every program waits before its first load, each call reads the
    weight the step before it wrote, never an older one."""
    import strata

    torch.manual_seed(0)
    w = torch.randn(4096, 1024, device="cuda", dtype=torch.bfloat16)
    x = torch.randn(1, 4096, device="cuda", dtype=torch.bfloat16)

    def product(x, w):
        return torch.rms_norm(x.float(), (4096,)).to(x.dtype) @ w

    def update(w, step):
        w.mul_(-1).add_(step)

    compiled_product = strata.compile(product, fullgraph=True)
    compiled_update = strata.compile(update, fullgraph=True)
    expected_w = w.clone()
    for step in range(50):
        compiled_update(w, 0.25)
        update(expected_w, 0.25)
        got = compiled_product(x, w)
        torch.testing.assert_close(got, product(x, expected_w), rtol=2e-2, atol=2e-2)
