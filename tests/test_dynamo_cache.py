"""options={"dynamo_cache": True} (frontend/caches/dynamo_cache.py): a second process compiling
the same model loads Dynamo's bytecode and guards instead of tracing, gives the same
results, still recompiles where the guards say so, and never reuses an entry for a
model that changed, a corrupt file or a graph it cannot rebuild.

Each scenario is a child process with its own cache folders (STRATA_CACHE_DIR,
TORCHINDUCTOR_CACHE_DIR), running the script below; independent children run side by
side."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent('''
    import json, sys, warnings
    import torch
    import strata
    from torch._dynamo.utils import counters

    class Net(torch.nn.Module):
        def __init__(self, act):
            super().__init__()
            self.lin = torch.nn.Linear(8, 16)
            self.act = act
            self.norm = torch.nn.LayerNorm(16)

        def forward(self, x):
            return self.norm(self.act(self.lin(x)))

    def fn(x, y):
        return torch.softmax(x @ y, dim=-1) * 2

    class Scaled(torch.nn.Module):  # a function held as an attribute: guarded by identity
        def __init__(self):
            super().__init__()
            self.f = torch.tanh

        def forward(self, x):
            return self.f(x) * 2

    # A global read by an inlined function, which the key's fingerprint does not see:
    # the stale scenario rebinds it before compiling.
    squash = torch.sigmoid if sys.argv[1] == "stale" else torch.tanh

    def helper(x):
        return squash(x) + 1

    class Helped(torch.nn.Module):
        def forward(self, x):
            return helper(x) * 3

    def broken(x):
        y = torch.sin(x) + 1
        torch._dynamo.graph_break()  # a resume function, compiled as a frame of its own
        return torch.cos(y) * 2

    def model(act):
        torch.manual_seed(0)
        return Net(act).eval()

    def inputs(dtype=torch.float32):
        torch.manual_seed(1)
        return torch.randn(4, 8, dtype=dtype), torch.randn(8, 5, dtype=dtype)

    def snapshot():
        return {"graphs": counters["stats"]["unique_graphs"], **counters["dynamo_cache"]}

    ON = {"dynamo_cache": True}
    scenario = sys.argv[1]
    report = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if scenario in ("main", "stale"):
            acts = [torch.nn.GELU()] if scenario == "main" else [torch.nn.GELU(approximate="tanh"), torch.nn.ReLU()]
            x, y = inputs()
            with torch.no_grad():
                for i, act in enumerate(acts):
                    m = model(act)
                    out = strata.compile(m, options=ON)(x)
                    report[f"net{i}"] = out.tolist()
                    report[f"net{i}_exact"] = torch.allclose(out, m(x), atol=1e-5)
                report["fn"] = strata.compile(fn, options=ON, fullgraph=True)(x, y).tolist()
                report["broken"] = strata.compile(broken, options=ON)(x).tolist()
                report["counters"] = snapshot()
                if scenario == "main":
                    # Other dtypes: recompiles, saved beside the first entry, or traced anew.
                    compiled = strata.compile(fn, options=ON, fullgraph=True)
                    for name in sys.argv[2].split(","):
                        xd, yd = inputs(getattr(torch, name))
                        report[f"{name}_right"] = torch.allclose(compiled(xd, yd), fn(xd, yd), atol=2e-2)
                        report[f"after_{name}"] = snapshot()
                    # Another backend compiling the same module traces its own graph.
                    seen = []
                    other = torch.compile(m, backend=lambda gm, ex: seen.append(gm) or gm.forward)
                    report["other_right"] = torch.allclose(other(x), m(x)) and len(seen) == 1
                    # Identity guards (which function a name refers to), rebuilt in a
                    # process that loaded them from the frame's own objects.
                    s = Scaled()
                    scaled = strata.compile(s, options=ON)
                    before = snapshot()["graphs"]
                    report["tanh_right"] = torch.allclose(scaled(x), torch.tanh(x) * 2)
                    s.f = torch.sigmoid  # rebound after the compile: traced again, and saved
                    report["sigmoid_right"] = torch.allclose(scaled(x), torch.sigmoid(x) * 2)
                    if sys.argv[2] != "float64":  # not the first process
                        s.f = torch.relu  # never traced: neither loaded entry serves it
                        report["relu_right"] = torch.allclose(scaled(x), torch.relu(x) * 2)
                    report["scaled_graphs"] = snapshot()["graphs"] - before
                before = snapshot()["graphs"]
                report["helped_right"] = torch.allclose(strata.compile(Helped(), options=ON)(x), (squash(x) + 1) * 3)
                report["helped_graphs"] = snapshot()["graphs"] - before
        elif scenario == "train":
            m = model(torch.nn.GELU())
            x = torch.randn(4, 8, requires_grad=True)
            strata.compile(m, options=ON)(x).sum().backward()
            got = [x.grad.clone(), m.lin.weight.grad.clone()]
            x.grad = None
            m.zero_grad()
            m(x).sum().backward()
            report["train_right"] = all(torch.allclose(a, b, atol=1e-5) for a, b in zip(got, [x.grad, m.lin.weight.grad]))
            with torch.no_grad():
                x, y = inputs()
                report["off_right"] = torch.allclose(strata.compile(fn, options={"dynamo_cache": False})(x, y), fn(x, y))
                report["default_right"] = torch.allclose(strata.compile(fn)(x, y), fn(x, y))  # on: saved
    report["warnings"] = [str(w.message) for w in caught if "dynamo_cache" in str(w.message)]
    print("REPORT " + json.dumps(report))
''')


def _start(tmp_path, scenario: str, cache: str, dtypes: str = "float64") -> subprocess.Popen:
    script = tmp_path / "child.py"
    if not script.exists():
        script.write_text(CHILD)
    env = dict(os.environ, STRATA_CACHE_DIR=str(tmp_path / cache),
               TORCHINDUCTOR_CACHE_DIR=str(tmp_path / cache / "inductor"))
    env.pop("STRATA_LOGS", None)
    return subprocess.Popen([sys.executable, str(script), scenario, dtypes], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _report(process: subprocess.Popen) -> dict:
    out, err = process.communicate(timeout=300)
    lines = [line for line in out.splitlines() if line.startswith("REPORT ")]
    assert process.returncode == 0 and lines, err[-4000:]
    return json.loads(lines[-1][len("REPORT "):])


def _packages(tmp_path, cache: str) -> list:
    folder = tmp_path / cache / "dynamo"
    return sorted(folder.glob("*.pkl")) if folder.exists() else []


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The children, started as soon as what they read exists."""
    tmp = tmp_path_factory.mktemp("dynamo_cache")
    first, train = _start(tmp, "main", "shared"), _start(tmp, "train", "train")
    reports = {"first": _report(first)}
    packages = _packages(tmp, "shared")
    reports["second"] = _report(_start(tmp, "main", "shared", "float64,bfloat16"))
    shutil.copytree(tmp / "shared", tmp / "corrupt")
    for path in _packages(tmp, "corrupt"):
        path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])  # truncated
    stale, corrupt = _start(tmp, "stale", "shared"), _start(tmp, "main", "corrupt")
    reports.update(stale=_report(stale), corrupt=_report(corrupt), train=_report(train))
    reports["packages"] = packages
    reports["train_packages"] = _packages(tmp, "train")
    return reports


def test_the_first_process_traces_and_saves(runs):
    first = runs["first"]
    assert first["counters"]["dynamo_cache_miss"] == 3 and first["counters"]["graphs"] >= 4
    # Its identity guards were checked: rebinding Scaled.f traced again.
    assert first["tanh_right"] and first["sigmoid_right"] and first["scaled_graphs"] == 2
    assert first["helped_right"] and first["helped_graphs"] == 1
    assert len(runs["packages"]) == 5  # Net, fn, broken (with its resume function), Scaled, Helped
    assert first["net0_exact"] and first["float64_right"] and first["other_right"]
    assert first["warnings"] == []


def test_a_second_process_loads_instead_of_tracing(runs):
    first, second = runs["first"], runs["second"]
    assert second["counters"] == {"graphs": 0, "dynamo_cache_hit": 3}  # no Dynamo trace at all
    for name in ("net0", "fn", "broken"):
        assert second[name] == first[name], name  # bit for bit
    assert second["warnings"] == []


def test_guards_work_after_a_load(runs):
    second = runs["second"]
    # float64 was a recompile in the first process, saved beside float32: loaded too.
    assert second["float64_right"] and second["after_float64"]["graphs"] == 0
    # bfloat16 was never seen: the loaded guards fail and Dynamo traces it.
    assert second["bfloat16_right"] and second["after_bfloat16"]["graphs"] == 1
    assert second["other_right"]  # the other backend ran its own graph, not strata's


def test_identity_guards_work_after_a_load(runs):
    second = runs["second"]
    # tanh and sigmoid were both traced by the first process: served from the package;
    # relu was not: the identity guards rebuilt from the frame fail, and Dynamo traces.
    assert second["tanh_right"] and second["sigmoid_right"] and second["relu_right"]
    assert second["scaled_graphs"] == 1
    assert second["helped_right"] and second["helped_graphs"] == 0


def test_a_changed_module_does_not_reuse_the_package(runs):
    stale = runs["stale"]
    # GELU(approximate="tanh") and ReLU in place of GELU(): both traced, both right.
    assert stale["counters"]["dynamo_cache_miss"] == 2 and stale["counters"]["dynamo_cache_hit"] == 2
    assert stale["net0_exact"] and stale["net1_exact"]
    # A global of an inlined function rebound before the compile (sigmoid for tanh): the
    # key cannot see it, so the package loads, but the saved identity guard does not
    # match the frame's object, and Dynamo traces.
    assert stale["helped_right"] and stale["helped_graphs"] == 1
    assert stale["net0"] != runs["first"]["net0"] and stale["fn"] == runs["first"]["fn"]


def test_a_corrupt_package_warns_and_compiles_afresh(runs):
    corrupt = runs["corrupt"]
    assert corrupt["counters"]["dynamo_cache_error"] == 3 and corrupt["counters"]["graphs"] >= 4
    assert len(corrupt["warnings"]) == 5 and all("cannot be used" in w for w in corrupt["warnings"])  # and Scaled, Helped
    for name in ("net0", "fn", "broken"):
        assert corrupt[name] == runs["first"][name], name


def test_training_and_the_option_off_save_nothing(runs):
    train = runs["train"]
    assert train["train_right"] and train["off_right"] and train["default_right"] and train["warnings"] == []
    assert len(runs["train_packages"]) == 1  # fn under the default options only


def test_modules_dynamo_put_in_globals_by_id_are_bound_for_the_loading_process(monkeypatch):
    """A guard may name a module Dynamo installed under an id-made name that the bytecode
    never reads (G['_<id>_c3'].Tensor, under CUDA autocast): the loading process must find
    it, so the package imports it like the bytecode's own."""
    import types

    import torch

    from strata.frontend.caches import dynamo_cache

    module = types.ModuleType("strata_test_bound_globals")
    module._139740546622912_c3 = torch  # what Dynamo's install_global_by_id makes
    module.not_by_id = json
    monkeypatch.setitem(sys.modules, module.__name__, module)
    entry = types.SimpleNamespace(python_module=module.__name__, guarded_codes=[], import_sources={})
    assert dynamo_cache._bind_globals(entry) is None
    assert entry.import_sources == {"_139740546622912_c3": "torch"}
