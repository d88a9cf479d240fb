"""strata's logs: quiet by default; STRATA_LOGS and strata.set_logs switch components
on; what each component says about a GPT block with a graph break and an op no
lowering covers."""

from __future__ import annotations

import logging
import os
import re
import subprocess
import sys

import pytest
import torch

import strata
from strata.frontend.inspection import logs
from strata.testing.models import TransformerBlock
from strata.testing.opaque import opaque

pytestmark = pytest.mark.filterwarnings("ignore:strata. no lowering covers")


class GPTWithBreak(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.first = TransformerBlock(16, 2).eval()
        self.second = TransformerBlock(16, 2).eval()  # the same kernels: cache hits

    def forward(self, x):
        x = self.first(x)
        torch._dynamo.graph_break()
        y = self.second(x)
        return opaque(y, y)


@pytest.fixture
def quiet_after():
    yield
    strata.set_logs()


def test_spec_syntax_is_torch_logs_style():
    assert logs.parse("+fusion,passes,codegen,cache") == {
        "fusion": logging.DEBUG,
        "passes": logging.INFO,
        "codegen": logging.INFO,
        "cache": logging.INFO,
    }
    assert logs.parse("-cache") == {"cache": logging.WARNING}
    everything = logs.parse("+all")
    assert set(everything) == set(logs.COMPONENTS) - {"ir", "output_code"}
    with pytest.raises(ValueError, match="unknown strata log component 'fuse'.*fusion"):
        logs.parse("fuse")


def test_quiet_by_default(capfd):
    assert logs.enabled_levels() == {}
    assert logging.getLogger("strata").getEffectiveLevel() == logging.WARNING
    f = strata.compile(lambda x: torch.softmax(x * 2, -1))
    f(torch.randn(4, 5))
    assert "[strata." not in capfd.readouterr().err


def test_set_logs_on_and_off(quiet_after):
    strata.set_logs("passes", fusion=logging.DEBUG, cache=True)
    assert logs.enabled_levels() == {"passes": logging.INFO, "fusion": logging.DEBUG, "cache": logging.INFO}
    assert logging.getLogger("strata").propagate is False  # printed once, by strata's handler
    strata.set_logs(all=True, cache=False)
    assert "cache" not in logs.enabled_levels() and logs.enabled_levels()["graphs"] == logging.INFO
    strata.set_logs()
    assert logs.enabled_levels() == {} and logging.getLogger("strata").propagate is True
    with pytest.raises(ValueError, match="components are"):
        strata.set_logs(fusoin=True)


def test_set_logs_turns_on_what_a_logging_config_elsewhere_disabled(capsys, quiet_after):
    """logging.config.dictConfig (in a library, a test, an application) disables every
    logger that exists by default; strata.set_logs must still turn on what it is asked
    for (one test's dictConfig silenced another's codegen lines in CI)."""
    # what dictConfig does to the loggers that exist (run for real, it would also clear
    # the root handlers of the rest of this process's tests)
    for name in ("", "codegen"):
        logging.getLogger(f"strata.{name}".rstrip(".")).disabled = True
    strata.set_logs("codegen")
    logs.logger("codegen").info("said after the dictConfig")
    assert "[strata.codegen] said after the dictConfig" in capsys.readouterr().err
    assert not logging.getLogger("strata").disabled


def test_logs_of_a_gpt_block_with_a_graph_break(capsys, quiet_after):
    strata.set_logs("+fusion,passes,codegen,cache")
    compiled = strata.compile(GPTWithBreak())
    with torch.no_grad():
        compiled(torch.randn(2, 5, 16))
    err = capsys.readouterr().err
    lines = err.splitlines()

    # Each pass: ops in -> ops out, per dialect, and its time; tagged with the graph.
    decompose = [ln for ln in lines if ln.startswith("[strata.passes] [graph") and "] decompose: " in ln]
    assert len(decompose) == 2, err
    assert re.search(r"decompose: (\d+) ops -> (\d+) ops \(aten \1 -> 0, prim 0 -> \d+\) in [\d.]+ m?s", decompose[0])
    assert re.search(r"\(aten (\d+) -> 1, prim 0 -> \d+\)", decompose[1])  # opaque stays aten
    assert re.search(r"\] fuse: \d+ ops -> \d+ ops .*kernel 0 -> \d+", err)
    assert re.search(r"^\[strata.passes\] \[graph \d+ \(\d+/0\)\] infer-shapes: ", err, re.M)

    # Fusion: every decision, with the reason, and the bytes each kernel saves.
    assert re.search(r"realize prim.sum \[2, 5\] f32 \(aten.native_layer_norm.default @ models.py:\d+\): a reduction", err)
    assert "read by a library call prim.addmm" in err
    assert re.search(r"joins k0 \(\[2, 5\] x reduce \[16\]\)", err)
    assert re.search(r"starts k\d+ .*; it could not join k\d+: it runs over \[2, 5\] x reduce \[16\], the node over", err)
    assert re.search(r"k0: .*over \[2, 5\] x reduce \[16\], \d+ prim ops fused, .*: moves [\d.]+ (B|KiB), unfused [\d.]+ KiB \(saves [\d.]+ KiB\); from aten.native_layer_norm.default @ \S+models.py:\d+ in forward", err)
    assert "1 eager fallbacks; estimated traffic" in err

    # Code generation and the cache: the second block's kernels are the first's.
    assert re.search(r"\[strata.codegen\] \[graph \d+ \(0/0\)\] k0: llvm, \d+ lines, in [\d.]+ ms; from aten.native_layer_norm", err), err
    # (The graph itself differs: its source lines are the second block's.)
    graph1 = [ln for ln in lines if ln.startswith("[strata.cache]") and "(1/0)]" in ln]
    assert graph1[0].endswith("graph: miss: lowered and stored"), graph1
    assert graph1[1:] and all(": hit (llvm)" in ln for ln in graph1[1:]), graph1


def test_env_var_is_read_on_import():
    code = "import strata.frontend.inspection.logs as l; print(sorted(l.enabled_levels().items()))"
    env = dict(os.environ, STRATA_LOGS="+fusion,passes,codegen,cache")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "[('cache', 20), ('codegen', 20), ('fusion', 10), ('passes', 20)]"
    env["STRATA_LOGS"] = "fusion,bogus"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert "STRATA_LOGS='fusion,bogus': unknown strata log component 'bogus'" in out.stderr  # a warning, not a crash
    assert out.returncode == 0 and out.stdout.strip() == "[]"


def test_env_var_passes_and_graphs(capsys, monkeypatch, quiet_after):
    monkeypatch.setenv("STRATA_LOGS", "+passes,graphs")
    logs.configure_from_env()

    def f(x):
        s = x.softmax(-1)
        return opaque(s, s) + 1

    line = f.__code__.co_firstlineno + 2
    strata.compile(f)(torch.randn(3, 7))
    err = capsys.readouterr().err
    assert f"[strata.passes.decompose]" in err
    assert f"strata_tests.opaque.default @ {__file__}:{line} in f stays aten: no rule" in err
    assert re.search(r"\[strata.passes\] \[graph \d+ \(0/0\)\] simplify: ", err)
    assert "[strata.fusion]" not in err and "[strata.cache]" not in err
    # `graphs`: the whole report of each graph.
    assert re.search(r"^\[strata.graphs\] \[graph \d+ \(0/0\)\] forward graph of f\(\) in \S+test_logs.py: compiled in", err, re.M)
    assert f"EAGER strata_tests::opaque: no decomposition rule for it  @ {__file__}:{line} in f" in err
