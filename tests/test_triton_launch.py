"""Direct launches of compiled Triton kernels (codegen/triton_launch.py): a call site
has Triton compile the kernel without launching it, then launches it through torch's
static launcher (codegen/triton_static_launch.py) or, where that cannot take it,
Triton's own; it goes through Triton's whole path for a launch hook, an argument it
does not handle, or when asked."""

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
    (slow) path; `warmup` compiles without launching."""

    params = [FakeParam("in0", False), FakeParam("n", False), FakeParam("out0", False), FakeParam("XBLOCK", True)]

    def __init__(self):
        self.log = []

    def __getitem__(self, grid):
        def launch(*args, **options):
            self.log.append(("triton", grid, args))

        return launch

    def warmup(self, *args, grid, **options):
        self.log.append(("warmup", grid, args))
        return FakeCompiled(self.log)


def _fake_site(monkeypatch, static=None):
    from strata.codegen import triton_launch

    monkeypatch.setattr(triton_launch, "_jit_function_type", lambda: FakeJIT)
    monkeypatch.setattr(triton_launch, "_current_device_and_stream", lambda: (lambda: 0, lambda device: "stream"))
    monkeypatch.setattr(triton_launch, "static_entry", static or (lambda compiled, params: None))
    fn = FakeJIT()
    return fn, triton_launch.CallSite(fn, XBLOCK=128, num_warps=4)


def test_call_sites_launch_through_triton_s_launcher_where_the_static_one_cannot(monkeypatch):
    from triton import knobs

    fn, site = _fake_site(monkeypatch)
    a, out = torch.empty(64), torch.empty(64)
    site((4,), a, 64, out)
    site((4,), a, 64, out)
    assert [e[0] for e in fn.log] == ["warmup", "direct", "direct"]  # compiled once, never Triton's launch
    assert fn.log[1][1] == (4, 1, 1, "stream", "function", "metadata", None, None, None, a, 64, out, 128)
    misaligned = torch.empty(65)[1:]  # 4 bytes off: another specialization, compiled for it
    site((4,), misaligned, 64, out)
    assert [e[0] for e in fn.log[-2:]] == ["warmup", "direct"]
    monkeypatch.setattr(knobs.runtime.launch_enter_hook, "calls", [lambda *a: None])  # a profiler's hook
    site((4,), a, 64, out)
    assert fn.log[-1][0] == "triton"
    monkeypatch.setattr(knobs.runtime.launch_enter_hook, "calls", [])
    site((4,), a, 2.5, out)  # a float: not a specialization the direct path computes
    assert fn.log[-1][0] == "triton"


def test_call_sites_launch_through_torch_s_static_launcher(monkeypatch):
    launches, asked = [], []

    def static(compiled, params):
        asked.append(params)
        # Triton made `n` (param 1) a constant, and the kernel takes a scratch pointer.
        return (lambda *a: launches.append(a)), "fn", 8, 1024, "OOO", (lambda args: (args[0], args[2])), (None,), object()

    fn, site = _fake_site(monkeypatch, static)
    a, out = torch.empty(64), torch.empty(64)
    site((4, 2), a, 1, out)
    site((4, 2), a, 1, out)
    assert asked == [[0, 1, 2]]  # the positional arguments' parameters, XBLOCK left out
    assert [e[0] for e in fn.log] == ["warmup"]
    assert launches == [("fn", 4, 2, 1, 8, 1024, "OOO", (a, out, None), "stream")] * 2


def test_call_sites_take_triton_s_path_when_asked(monkeypatch):
    from strata.codegen import triton_launch

    monkeypatch.setenv("STRATA_TRITON_DIRECT", "0")
    monkeypatch.setattr(triton_launch, "_jit_function_type", lambda: FakeJIT)
    fn = FakeJIT()
    site = triton_launch.CallSite(fn, XBLOCK=128)
    for _ in range(3):
        site((1,), torch.empty(4), 4, torch.empty(4))
    assert [e[0] for e in fn.log] == ["triton"] * 3


def test_call_sites_launch_a_three_dimensional_grid_whole(monkeypatch):
    """A grid's z (a batched product's epilogue runs one batch per z) reaches the launch."""
    launches = []

    def static(compiled, params):
        return (lambda *a: launches.append(a)), "fn", 4, 0, "OOO", None, (), object()

    fn, site = _fake_site(monkeypatch, static)
    a, out = torch.empty(64), torch.empty(64)
    site((4, 2, 3), a, 64, out)
    fn2, triton_site = _fake_site(monkeypatch)
    triton_site((4, 2, 3), a, 64, out)
    assert launches[0][1:4] == (4, 2, 3)
    assert fn2.log[-1][1][:3] == (4, 2, 3)


def test_a_bound_call_site_launches_as_the_site_would(monkeypatch):
    """CallSite.bound (max-autotune's tuned launches): the same launch as
    `site(grid, *buffers, *ints)`, through the site itself until the kernel is loaded,
    for another alignment, or with a launch hook set."""
    from triton import knobs

    launches = []

    def static(compiled, params):
        return (lambda *a: launches.append(a)), "fn", 8, 1024, "OOO", None, (), object()

    fn, site = _fake_site(monkeypatch, static)
    a, out = torch.empty(64), torch.empty(64)
    bound = site.bound((4, 2, 3), (64,))
    bound([a, out])  # not loaded yet: the site compiles and launches it
    bound([a, out])  # loaded: launched by the bound function
    assert [e[0] for e in fn.log] == ["warmup"]
    assert launches == [("fn", 4, 2, 3, 8, 1024, "OOO", (a, out, 64), "stream")] * 2
    misaligned = torch.empty(65)[1:]
    bound([misaligned, out])  # another specialization: compiled for it by the site
    assert [e[0] for e in fn.log] == ["warmup", "warmup"] and launches[-1][7] == (misaligned, out, 64)
    monkeypatch.setattr(knobs.runtime.launch_enter_hook, "calls", [lambda *a: None])  # a profiler's hook
    bound([a, out])
    assert fn.log[-1][0] == "triton"
    monkeypatch.setattr(knobs.runtime.launch_enter_hook, "calls", [])
    assert site.bound((4,), (2.5,))([a, out]) is None and fn.log[-1][0] == "triton"  # a float: Triton's own path


def test_a_bound_call_site_launches_through_triton_s_launcher_too(monkeypatch):
    """A kernel torch's static launcher does not take (one launched with PDL,
    codegen/triton_pdl.py) is launched by the bound function through Triton's own
    launcher, with the kernel's constants last, as the site itself launches it."""
    fn, site = _fake_site(monkeypatch)
    a, out = torch.empty(64), torch.empty(64)
    bound = site.bound((4, 2, 3), (64,))
    bound([a, out])  # not loaded yet: the site compiles and launches it
    bound([a, out])
    assert [e[0] for e in fn.log] == ["warmup", "direct", "direct"]
    assert fn.log[1] == fn.log[2] == ("direct", (4, 2, 3, "stream", "function", "metadata", None, None, None, a, out, 64, 128))
