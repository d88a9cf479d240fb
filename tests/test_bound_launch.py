"""max-autotune's bound launches (a generated module's `bind_tile`, CallSite.bound): a
tuned tile's launch worked out once, as a function of the buffers. Each must launch
exactly what `launch_tile` launches for that tile: the same kernel, grid, arguments and
options, checked here for every candidate tile of a template, a reduction of symbolic
and of static sizes, and a pointwise kernel, with their kernels recorded instead of run."""

from __future__ import annotations

import pytest
import torch

from strata.codegen import triton_autotune
from strata.codegen.triton_gpu import compile_kernel
from tests.test_codegen_triton import SOFTMAX, kernel_func, load, prim, store
from tests.test_matmul_template import _template_kernel


class Recorder:
    """Stands in for a kernel's DirectLauncher: `kernel[grid](*args, **options)` as
    launch_tile calls it, `kernel.site(options).bound(grid, ints)` as bind_tile does;
    both write (kernel, grid, args, options) to `log`."""

    def __init__(self, name: str, log: list):
        self.name, self.log = name, log

    def __getitem__(self, grid):
        return lambda *args, **options: self.log.append((self.name, tuple(grid), args, options))

    def site(self, options: dict):
        recorder = self

        class Site:
            def bound(self, grid, ints):
                return lambda buffers: recorder.log.append((recorder.name, tuple(grid), (*buffers, *ints), options))

        return Site()


def _recorded(module, monkeypatch) -> list:
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    log: list = []
    for name, value in list(vars(module).items()):
        if isinstance(value, JITFunction | InterpretedFunction):
            monkeypatch.setattr(module, name, Recorder(name, log))
    return log


def _pointwise():
    body = "\n".join([load("a", "in0", "x0", "f32"), prim("e", "exp", ["a"], "f32"), store("e", "out0", "x0", "f32")])
    return kernel_func(body, ["f32", "f32"], 1, "1000"), [torch.randn(1000), torch.empty(1000)], [], False


def _softmax(symbolic: bool):
    if symbolic:
        func = kernel_func(SOFTMAX, ["f32", "f32"], 1, '"s0"', '"s1"', symbols='"s0", "s1"')
        return func, [torch.randn(6, 700), torch.empty(6, 700)], [6, 700], True
    func = kernel_func(SOFTMAX.replace("x0*s1", "96*x0"), ["f32", "f32"], 1, "6", "96")
    return func, [torch.randn(6, 96), torch.empty(6, 96)], [], True


def _template():
    m, n, k = 33, 20, 48
    buffers = [torch.randn(m, k), torch.randn(n, k), torch.randn(n), torch.empty(m, n)]
    return _template_kernel(m, n, k, "f32"), buffers, [], True


CASES = {"pointwise": _pointwise, "softmax-symbolic": lambda: _softmax(True),
         "softmax-static": lambda: _softmax(False), "template": _template}


@pytest.mark.parametrize("case", CASES)
def test_a_bound_tile_launches_what_launch_tile_launches(case, tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    func, buffers, symbols, reduction = CASES[case]()
    module = compile_kernel(func, "cpu").module
    log = _recorded(module, monkeypatch)
    tiles = triton_autotune.candidates(module, module.numels(symbols), reduction)
    bound_any = False
    for tile in tiles:
        bound = module.bind_tile(tile, symbols)
        if bound is None:  # two launches, a library call or TMA descriptors: launch_tile's
            assert getattr(tile, "split", 1) > 1 or getattr(tile, "library", False) or \
                getattr(tile, "epilogue_apart", False) or getattr(tile, "tma", False), tile
            continue
        bound_any = True
        log.clear()
        module.launch_tile(tile, buffers, symbols)
        module.bind_tile(tile, symbols)(buffers)
        assert len(log) == 2 and log[0][:2] == log[1][:2] and log[0][3] == log[1][3], (tile, log)
        assert all(a is b for a, b in zip(log[0][2], log[1][2])) and len(log[0][2]) == len(log[1][2]), (tile, log)
    assert bound_any


def test_the_tuner_launches_a_tuned_tile_through_its_bound_launch(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv(triton_autotune.PROGRESS_VAR, "0")
    func, buffers, symbols, _ = _softmax(True)
    module = compile_kernel(func, "cpu").module
    log = _recorded(module, monkeypatch)
    tuner = triton_autotune.Autotuner("k0", "key", module, True, "cpu", timer=lambda fn: (fn(), 1e-3)[1])
    tuner(buffers, symbols)
    assert list(tuner.bound) == [(6, 700)]
    calls = []
    monkeypatch.setattr(module, "launch_tile", lambda *a: calls.append(a))
    log.clear()
    tuner(buffers, symbols)
    assert not calls and len(log) == 1  # launched, and not through launch_tile
    tuner(buffers, [5, 700])  # other sizes: tuned and bound for them
    assert len(tuner.bound) == 2


def _pointwise_symbolic():
    body = "\n".join([load("a", "in0", "x0", "f32"), prim("e", "exp", ["a"], "f32"), store("e", "out0", "x0", "f32")])
    return kernel_func(body, ["f32", "f32"], 1, '"s0"', symbols='"s0"'), [torch.randn(1000), torch.empty(1000)], [1000]


BIND_CASES = {"pointwise": _pointwise_symbolic, "softmax": lambda: _softmax(True)[:3]}


@pytest.mark.parametrize("case", BIND_CASES)
def test_a_module_bound_to_its_symbols_launches_what_launch_launches(case, tmp_path, monkeypatch):
    """`bind(symbols)` (a graph specialized to a binding, runtime/specialized_graphs):
    the tile `launch` asks the heuristic for at those sizes, its launch bound."""
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    func, buffers, symbols = BIND_CASES[case]()
    module = compile_kernel(func, "cpu").module
    log = _recorded(module, monkeypatch)
    module.launch(buffers, symbols)
    module.bind(symbols)(buffers)
    assert len(log) == 2 and log[0][:2] == log[1][:2] and log[0][3] == log[1][3], log
    assert all(a is b for a, b in zip(log[0][2], log[1][2])) and len(log[0][2]) == len(log[1][2]), log
    log.clear()
    module.bind([0] * len(symbols))(buffers)  # an empty domain: nothing launched
    assert not log


def test_a_module_of_static_sizes_or_an_interpreted_kernel_binds_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    func, _, _ = _softmax(False)[:3]
    assert compile_kernel(func, "cpu").module.bind([]) is None  # its launch is bound already
    func, _, symbols = _pointwise_symbolic()
    assert compile_kernel(func, "cpu").bind(symbols) is None  # the interpreter: no bound launch
