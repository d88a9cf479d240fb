"""Precompiling a graph's Triton kernels on a pool of threads before its first call
(codegen/triton_precompile.py): each static module's launch runs with stand-ins that
compile what each call site would launch; a failure is left to the first launch."""

from __future__ import annotations

import threading
import types

import pytest
import torch

from strata.codegen import triton_precompile
from strata.codegen.triton_launch import CallSite, DirectLauncher


class FakeParam:
    def __init__(self, name, constexpr):
        self.name, self.is_constexpr = name, constexpr


class FakeKernel:
    def __init__(self, log):
        self.log = log

    @property
    def run(self):  # Triton's CompiledKernel loads its binary when `run` is first read
        self.log.append(("loaded", threading.current_thread().name))
        return None


class FakeJIT:
    params = [FakeParam("in0", False), FakeParam("out0", False), FakeParam("XBLOCK", True)]

    def __init__(self, log):
        self.log = log

    def warmup(self, *args, grid, **options):
        self.log.append(("warmup", grid, tuple(getattr(a, "dtype", a) for a in args), options, threading.current_thread().name))
        return FakeKernel(self.log)

    def __getitem__(self, grid):
        raise AssertionError("precompile must not launch")


def fake_module(log, fail=False):
    module = types.ModuleType("strata_triton_fake")
    module._site0 = site = CallSite(FakeJIT(log), XBLOCK=8, num_warps=4)

    def launch(buffers, symbols):
        if fail:
            raise RuntimeError("no such kernel")
        in0, out0 = buffers
        module._site0((8,), in0, out0)

    module.launch = launch
    return module, site


def test_each_site_compiles_its_kernel_without_launching():
    log = []
    module, site = fake_module(log)
    triton_precompile.precompile_module(module, [torch.float16, torch.float32], torch.device("cpu"))
    assert log[0][:4] == ("warmup", (8,), (torch.float16, torch.float32), {"XBLOCK": 8, "num_warps": 4})
    assert log[1][0] == "loaded"
    assert module._site0 is site  # the real call site is back


def test_modules_compile_on_the_pool_and_failures_are_left_to_the_first_launch(monkeypatch):
    monkeypatch.setenv(triton_precompile.ENV_VAR, "2")
    log = []
    good = [fake_module(log)[0] for _ in range(3)]
    bad, bad_site = fake_module(log, fail=True)
    jobs = [(m, [torch.float32, torch.float32], []) for m in [*good, bad]]
    assert triton_precompile.precompile(jobs, torch.device("cpu")) == 3
    threads = {entry[-1] for entry in log if entry[0] == "warmup"}
    assert len([e for e in log if e[0] == "warmup"]) == 3
    assert all(name.startswith("strata-precompile") for name in threads)
    assert bad._site0 is bad_site


def test_symbolic_launches_compile_for_the_given_sizes():
    """A symbolic module launches through DirectLaunchers, with its symbols' values."""
    log = []
    module = types.ModuleType("strata_triton_symbolic")
    module.k0 = launcher = DirectLauncher(FakeJIT(log))

    def launch(buffers, symbols):
        (n,) = symbols
        module.k0[(n // 8,)](*buffers, n, XBLOCK=8, num_warps=2)

    module.launch = launch
    triton_precompile.precompile_module(module, [torch.float32, torch.float32], torch.device("cpu"), [64])
    assert log[0][:4] == ("warmup", (8,), (torch.float32, torch.float32, 64), {"XBLOCK": 8, "num_warps": 2})
    assert module.k0 is launcher


def test_zero_threads_turns_it_off(monkeypatch):
    monkeypatch.setenv(triton_precompile.ENV_VAR, "0")
    log = []
    module, _ = fake_module(log)
    assert triton_precompile.precompile([(module, [torch.float32, torch.float32], [])], torch.device("cpu")) == 0
    assert log == []


@pytest.mark.skipif(not torch.cuda.is_available(), reason="Triton compiles for a GPU")
@pytest.mark.parametrize("dynamic", [False, True])
def test_a_graph_first_call_finds_its_kernels_compiled(monkeypatch, tmp_path, dynamic):
    """Every kernel of a cold compile, static or symbolic, is compiled on the pool; none
    at its first launch."""
    import strata
    from triton import knobs

    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    compiled_on = []
    monkeypatch.setattr(knobs.runtime, "jit_post_compile_hook", lambda **kw: compiled_on.append(threading.current_thread().name))

    def f(x, y):
        return torch.softmax(x * 3.0, dim=-1) + y.sum(dim=0), (x.exp() * y).mean(dim=1)

    x = torch.randn(64, 1000, device="cuda")
    y = torch.randn(64, 1000, device="cuda")
    out = strata.compile(f, dynamic=dynamic, options={"graph_cache": False})(x, y)
    expected = f(x, y)
    for a, b in zip(out, expected):
        torch.testing.assert_close(a, b)
    assert compiled_on and all(name.startswith("strata-precompile") for name in compiled_on), compiled_on
