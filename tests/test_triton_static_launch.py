"""torch's static launcher for compiled Triton kernels (codegen/triton_static_launch.py):
what a call site launches with, which arguments it passes, and Triton's launcher
wherever the static one cannot take a kernel."""

from __future__ import annotations

import types

import pytest
import torch

from strata.codegen import triton_static_launch


class FakeStatic:
    """Stands in for torch's StaticallyLaunchedCudaKernel."""

    fail: Exception | None = None

    def __init__(self, compiled):
        if FakeStatic.fail is not None:
            raise FakeStatic.fail
        self.compiled = compiled
        self.full_constexprs = compiled.constants
        self.arg_tys = "O" * (len(compiled.params) - len(compiled.constants))
        self.has_global_scratch, self.has_profile_scratch = compiled.scratch, False
        self.num_warps, self.shared, self.function = 4, 512, None
        self.C_impl = types.SimpleNamespace(_launch_kernel="launch_kernel")

    def load_kernel(self, device):
        self.function = f"function on {device}"


def compiled_kernel(constants=(), scratch=False, **metadata):
    return types.SimpleNamespace(params=["in0", "n", "out0", "XBLOCK"], constants=list(constants), scratch=scratch,
                                 metadata=types.SimpleNamespace(**metadata))


@pytest.fixture
def fake_static(monkeypatch):
    from torch._inductor.runtime import static_triton_launcher

    monkeypatch.setattr(static_triton_launcher, "StaticallyLaunchedCudaKernel", FakeStatic)
    monkeypatch.setattr(triton_static_launch, "_cubin_path", lambda compiled: "/cache/k.cubin")
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(FakeStatic, "fail", None)


def test_an_entry_passes_every_runtime_argument(fake_static):
    launch, function, warps, shared, types_, pick, extra, kernel = triton_static_launch.static_entry(compiled_kernel(constants=[3]), [0, 1, 2])
    assert (launch, function, warps, shared, types_, pick, extra) == ("launch_kernel", "function on 0", 4, 512, "OOO", None, ())
    assert kernel.compiled._cubin_path == "/cache/k.cubin"


def test_constants_triton_made_are_left_out_and_scratch_is_passed(fake_static):
    # n == 1 became a constant (param 1); the kernel takes a global scratch pointer.
    entry = triton_static_launch.static_entry(compiled_kernel(constants=[1, 3], scratch=True), [0, 1, 2])
    _, _, _, _, types_, pick, extra, _ = entry
    assert types_ == "OOO" and extra == (None,)
    assert pick(("a", 1, "out")) + extra == ("a", "out", None)


@pytest.mark.parametrize("why", ["launch_pdl", "launch_cooperative_grid", "unsupported", "env"])
def test_triton_s_launcher_where_the_static_one_cannot(fake_static, monkeypatch, why):
    metadata = {}
    if why == "env":
        monkeypatch.setenv(triton_static_launch.ENV_VAR, "0")
    elif why == "unsupported":  # e.g. scratch memory, an nvTmaDesc argument
        monkeypatch.setattr(FakeStatic, "fail", NotImplementedError("global scratch not yet supported"))
    else:
        metadata[why] = True
    assert triton_static_launch.static_entry(compiled_kernel(**metadata), [0, 1, 2]) is None


@pytest.mark.skipif(not torch.cuda.is_available(), reason="launches on a GPU")
@pytest.mark.parametrize("dynamic", [False, True])
def test_a_compiled_graph_launches_through_the_static_launcher(tmp_path, monkeypatch, dynamic):
    import sys

    import strata
    from strata.codegen.triton_launch import CallSite, DirectLauncher

    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))

    def f(x, y):
        return torch.softmax(x * 3.0, dim=-1) + y.sum(dim=0), (x.exp() * y).mean(dim=1)

    compiled = strata.compile(f, dynamic=dynamic, options={"graph_cache": False, "dynamo_cache": False})
    for rows in (64, 48):  # symbolic kernels take the sizes as int arguments
        x, y = torch.randn(rows, 1000, device="cuda"), torch.randn(rows, 1000, device="cuda")
        for a, b in zip(compiled(x, y), f(x, y)):
            torch.testing.assert_close(a, b)
    sites = []
    for name, module in list(sys.modules.items()):
        if name.startswith("strata_triton_"):  # the generated kernel modules
            for v in vars(module).values():
                sites += [v] if isinstance(v, CallSite) else list(v.sites.values()) if isinstance(v, DirectLauncher) else []
    sites = [s for s in sites if s.entries]
    assert sites and all(len(e) == 8 for s in sites for e in s.entries.values())
