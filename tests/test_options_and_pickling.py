"""Options are checked when strata.compile is called (frontend/options.py): a value of
the wrong type, a misspelt pass in `pipeline`, `options` that is no dict each fail at
once, naming the option, the value and what it takes. And a compiled module pickles
as torch.compile's does: the pickle holds the module and the backend's settings, and
the loaded module compiles with strata at its first call."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest
import torch

import strata
from strata.frontend.backend import make_backend


def _double_plus_one(x):
    return x * 2 + 1


# (options, words the error must contain): the option, the value given, what it takes.
BAD_OPTIONS = [
    ({"trace.enabled": "false"}, ["'trace.enabled'", "a bool", "'false' (str)", "write False"]),
    ({"max_autotune": "yes"}, ["'max_autotune'", "a bool", "'yes' (str)", "write True"]),
    ({"verify": 1}, ["'verify'", "a bool", "1 (int)", "write True"]),
    ({"trace.dir": 5}, ["'trace.dir'", "a path", "5 (int)"]),
    ({"codegen": "cuda"}, ["'codegen'", "'llvm'", "'triton'", "'cuda' (str)"]),
    ({"pipeline": 5}, ["'pipeline'", "pass names", "5 (int)"]),
    ({"pipeline": "infer-shapes,decompose,fusee"}, ["'pipeline'", "'fusee'", "infer-shapes, recognize-attention, decompose, simplify, fuse"]),
    ({"pipeline": "infer-shapes,decompose"}, ["'pipeline'", "lacks 'fuse'"]),
    ({"pipeline": "decompose,fuse{"}, ["'pipeline'", "does not parse", "fuse{"]),
    ({"pipeline": "decompose,fuse{no_such_option=true}"}, ["'pipeline'", "'fuse'", "no_such_option"]),
]


@pytest.mark.parametrize("options,words", BAD_OPTIONS, ids=[f"{k}={v!r}" for o, _ in BAD_OPTIONS for k, v in o.items()])
def test_a_bad_option_value_fails_when_compiling(options, words):
    for make in (lambda: strata.compile(_double_plus_one, options=options), lambda: make_backend(None, options)):
        with pytest.raises(ValueError) as caught:
            make()
        for word in words:
            assert word in str(caught.value)


@pytest.mark.parametrize("options", [["trace.enabled"], "trace.enabled", ("verify", True)])
def test_options_that_are_no_dict_are_a_type_error(options):
    with pytest.raises(TypeError, match=r"options must be a dict .* not .*\((list|str|tuple)\)"):
        strata.compile(_double_plus_one, options=options)


@pytest.mark.parametrize("mode", [5, ["default"]])
def test_a_mode_that_is_no_str_is_a_type_error(mode):
    with pytest.raises(TypeError, match=r"mode must be a str"):
        strata.compile(_double_plus_one, mode=mode)


def test_torch_compile_by_name_checks_options_before_compiling_a_graph(monkeypatch):
    """torch hands a backend found by name its options at the first call only: the
    check comes first there, before any graph is imported."""
    from strata.frontend import compile_graph

    imported = []
    monkeypatch.setattr(compile_graph, "import_graph", lambda gm: imported.append(gm))
    compiled = torch.compile(_double_plus_one, backend="strata", options={"trace.enabled": "false"})
    with pytest.raises(Exception, match=r"option 'trace.enabled' must be a bool, not 'false' \(str\)"):
        compiled(torch.randn(3))
    assert imported == []


def test_valid_options_still_work(tmp_path):
    x = torch.randn(4, 5)
    options = {"trace.enabled": True, "trace.dir": tmp_path / "trace", "codegen": None, "verify": False,
               "pipeline": "infer-shapes,decompose,simplify,infer-shapes,fuse,coalesce-dims"}
    compiled = strata.compile(_double_plus_one, options=options, mode="max-autotune-no-cudagraphs")
    torch.testing.assert_close(compiled(x), _double_plus_one(x))
    assert (tmp_path / "trace").is_dir()  # a pathlib.Path works as a str does
    assert strata.list_options()["trace.enabled"] is False


def test_a_pass_option_in_the_pipeline_reaches_the_pass(monkeypatch):
    """`fuse{emulate_precision_casts=true}`, as strata-opt's -p takes it."""
    from strata.passes.fuse import FusePass

    seen = []
    real = FusePass.apply

    def apply(self, ctx, op):
        seen.append(self.emulate_precision_casts)
        real(self, ctx, op)

    monkeypatch.setattr(FusePass, "apply", apply)
    pipeline = "infer-shapes,decompose,simplify,infer-shapes,fuse{emulate_precision_casts=true},coalesce-dims"
    x = torch.randn(4, 5)
    compiled = strata.compile(_double_plus_one, options={"pipeline": pipeline, "graph_cache": False})
    torch.testing.assert_close(compiled(x), _double_plus_one(x))
    assert seen == [True]


# -- pickling ---------------------------------------------------------------------------


def _round_trip(compiled, path: pathlib.Path):
    torch.save(compiled, path)
    return torch.load(path, weights_only=False)


def _backend(compiled):
    from torch._dynamo.eval_frame import innermost_backend  # private: follows the wrappers

    backend = innermost_backend(compiled.dynamo_ctx.callback)
    return getattr(backend, "compiler_fn", backend)  # torch.compile's wrapper of a backend it was given


@pytest.mark.parametrize("dynamo_cache", [True, False])
def test_a_compiled_module_pickles_as_torch_compiles_does(tmp_path, dynamo_cache):
    from strata.frontend.backend import StrataBackend

    torch.manual_seed(0)
    model = torch.nn.Linear(4, 4)
    x = torch.randn(2, 4)
    trace = tmp_path / "trace"
    compiled = strata.compile(model, options={"dynamo_cache": dynamo_cache, "trace.enabled": True, "trace.dir": trace})
    with torch.no_grad():
        compiled(x)  # pickled after a call, as a trained model would be
        loaded = _round_trip(compiled, tmp_path / "m.pt")
        inductors = _round_trip(torch.compile(model), tmp_path / "inductor.pt")
        assert type(loaded) is type(inductors)  # torch's OptimizedModule, the module inside
        assert loaded.state_dict().keys() == inductors.state_dict().keys()
        assert isinstance(_backend(loaded), StrataBackend) and _backend(loaded).options == _backend(compiled).options
        traced = len(list(trace.rglob("2_kernel.mlir")))
        torch._dynamo.reset()
        torch.testing.assert_close(loaded(x), model(x))
    assert len(list(trace.rglob("2_kernel.mlir"))) > traced, "the loaded module did not compile with strata, traced"


def test_a_module_compiled_by_name_pickles(tmp_path):
    model = torch.nn.Linear(4, 4)
    x = torch.randn(2, 4)
    loaded = _round_trip(torch.compile(model, backend="strata"), tmp_path / "m.pt")
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), model(x))


LOADING_CHILD = textwrap.dedent('''
    import json, sys, torch, strata
    from torch._dynamo.utils import counters
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 4)
    x = torch.randn(2, 4)
    with torch.no_grad():
        compiled = strata.compile(model)
        compiled(x)
        torch.save(compiled, sys.argv[1])
        torch._dynamo.reset()
        loaded = torch.load(sys.argv[1], weights_only=False)
        right = torch.allclose(loaded(x), model(x))
    print("REPORT " + json.dumps({"right": right, **counters["dynamo_cache"]}))
''')


def test_a_module_served_by_the_dynamo_cache_pickles(tmp_path):
    """The second process loads the package (its frame converter then stands behind
    strata's), and still pickles; the loaded module compiles without that package."""
    script = tmp_path / "child.py"
    script.write_text(LOADING_CHILD)
    env = dict(os.environ, STRATA_CACHE_DIR=str(tmp_path / "cache"), TORCHINDUCTOR_CACHE_DIR=str(tmp_path / "inductor"))
    env.pop("STRATA_LOGS", None)
    reports = []
    for run in ("first", "second"):
        done = subprocess.run([sys.executable, str(script), str(tmp_path / f"{run}.pt")], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
        lines = [line for line in done.stdout.splitlines() if line.startswith("REPORT ")]
        assert done.returncode == 0 and lines, done.stderr[-4000:]
        reports.append(json.loads(lines[-1][len("REPORT "):]))
    first, second = reports
    assert first["right"] and first.get("dynamo_cache_miss") == 1
    assert second["right"] and second.get("dynamo_cache_hit") == 1
