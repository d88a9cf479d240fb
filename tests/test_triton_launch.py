"""Direct launches of compiled Triton kernels (codegen/triton_launch.py): after Triton's
own first launch, a call site launches the compiled kernel through its launcher, and
goes back to Triton's path for a new specialization, a launch hook, or when asked."""

from __future__ import annotations

import torch


class FakeParam:
    def __init__(self, name, constexpr):
        self.name, self.is_constexpr = name, constexpr


class FakeCompiled:
    function, packed_metadata = "function", "metadata"

    def __init__(self, log):
        self.log = log

    def run(self, *args):
        self.log.append(("direct", args))


class FakeJIT:
    """Stands in for a triton.JITFunction: `fn[grid](*args, **options)` is Triton's own
    (slow) path, which compiles and returns the compiled kernel."""

    params = [FakeParam("in0", False), FakeParam("out0", False), FakeParam("XBLOCK", True)]

    def __init__(self):
        self.log = []

    def __getitem__(self, grid):
        def launch(*args, **options):
            self.log.append(("triton", grid, args))
            return FakeCompiled(self.log)

        return launch


def test_call_sites_launch_directly_after_triton_compiled(monkeypatch):
    from triton import knobs

    from strata.codegen import triton_launch

    monkeypatch.setattr(triton_launch, "_jit_function_type", lambda: FakeJIT)
    monkeypatch.setattr(triton_launch, "_current_device_and_stream", lambda: (lambda: 0, lambda device: "stream"))
    fn = FakeJIT()
    site = triton_launch.CallSite(fn, XBLOCK=128, num_warps=4)
    a, out = torch.empty(64), torch.empty(64)
    site((4,), a, out)
    site((4,), a, out)
    assert [e[0] for e in fn.log] == ["triton", "direct"]
    assert fn.log[1][1] == (4, 1, 1, "stream", "function", "metadata", None, None, None, a, out, 128)
    misaligned = torch.empty(65)[1:]  # 4 bytes off: another specialization, Triton's path
    site((4,), misaligned, out)
    assert fn.log[-1][0] == "triton"
    monkeypatch.setattr(knobs.runtime.launch_enter_hook, "calls", [lambda *a: None])  # a profiler's hook
    site((4,), a, out)
    assert fn.log[-1][0] == "triton"


def test_call_sites_take_triton_s_path_when_asked(monkeypatch):
    from strata.codegen import triton_launch

    monkeypatch.setenv("STRATA_TRITON_DIRECT", "0")
    monkeypatch.setattr(triton_launch, "_jit_function_type", lambda: FakeJIT)
    fn = FakeJIT()
    site = triton_launch.CallSite(fn, XBLOCK=128)
    for _ in range(3):
        site((1,), torch.empty(4), torch.empty(4))
    assert [e[0] for e in fn.log] == ["triton"] * 3
