"""The lit format that runs strata-opt in the lit worker (tests/lit/lit_in_process.py):
it must fail what a shell would fail and pass what a shell would pass, and leave the
worker's streams, directory and environment as it found them."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

LIT_DIR = Path(__file__).parent / "lit"
sys.path.insert(0, str(LIT_DIR))
import lit_in_process as fmt  # noqa: E402

ROUND_TRIP = str(LIT_DIR / "opt" / "round-trip.mlir")
BAD_PIPELINE = str(LIT_DIR / "opt" / "bad-pipeline.mlir")


def run(line: str, cwd: Path) -> int:
    stages = fmt._plain_pipeline(line)
    assert stages is not None, line
    environment = {"PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    status, _report = fmt._run_pipeline(stages, environment, str(cwd))
    return status


def test_only_plain_strata_opt_pipelines_run_in_process():
    assert fmt._plain_pipeline("strata-opt a.mlir -p fuse | filecheck a.mlir") is not None
    assert fmt._plain_pipeline("not strata-opt a.mlir 2>&1 | filecheck a.mlir --check-prefix=X") is not None
    assert fmt._plain_pipeline("%dbg(RUN: at line 3)  strata-opt a.mlir > /tmp/x") is not None
    assert fmt._plain_pipeline("sed s/a/b/ a.mlir | strata-opt | filecheck a.mlir") is None
    assert fmt._plain_pipeline("python -m strata.opt a.mlir | filecheck a.mlir") is None
    assert fmt._plain_pipeline("strata-opt a.mlir 1>&2 | filecheck a.mlir") is None
    assert fmt._plain_pipeline("diff a b") is None


def test_redirects_apply_left_to_right():
    assert fmt._targets([((">&", 2), "1"), ((">",), "/dev/null")], "/d") == {1: "/dev/null", 2: "pipe"}
    assert fmt._targets([((">",), "/dev/null"), ((">&", 2), "1")], "/d") == {1: "/dev/null", 2: "/dev/null"}
    assert fmt._targets([((">",), "out")], "/d") == {1: "/d/out", 2: "stderr"}


def test_a_pipeline_passes_and_fails_as_in_a_shell(tmp_path):
    assert run(f"strata-opt {ROUND_TRIP} --print-op-generic | strata-opt | filecheck {ROUND_TRIP}", tmp_path) == 0
    wrong = tmp_path / "wrong.mlir"
    wrong.write_text("// CHECK: func.func @no_such_function\n")
    assert run(f"strata-opt {ROUND_TRIP} | filecheck {wrong}", tmp_path) != 0
    # An error exits 1 with its message on stderr: `not` passes it, and only `2>&1` pipes it.
    prefix = "--check-prefix=UNKNOWN"
    assert run(f"strata-opt {BAD_PIPELINE} -p infer-shapes,no-such-pass 2>&1 | filecheck {BAD_PIPELINE} {prefix}", tmp_path) != 0
    assert run(f"not strata-opt {BAD_PIPELINE} -p infer-shapes,no-such-pass 2>&1 | filecheck {BAD_PIPELINE} {prefix}", tmp_path) == 0
    assert run(f"not strata-opt {BAD_PIPELINE} -p infer-shapes,no-such-pass | filecheck {BAD_PIPELINE} {prefix}", tmp_path) != 0
    assert run(f"not strata-opt {ROUND_TRIP} 2>&1 | filecheck {ROUND_TRIP}", tmp_path) != 0


def test_output_redirected_to_a_file(tmp_path):
    assert run(f"strata-opt {ROUND_TRIP} > out.mlir", tmp_path) == 0
    assert "kernel.program @run" in (tmp_path / "out.mlir").read_text()


def test_the_worker_is_left_as_it_was(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_LIT_PROBE", "1")
    before = (sys.stdin, sys.stdout, sys.stderr, os.getcwd(), dict(os.environ))
    run(f"not strata-opt {BAD_PIPELINE} -p infer-shapes,no-such-pass 2>&1 | filecheck {BAD_PIPELINE} --check-prefix=UNKNOWN", tmp_path)
    run(f"strata-opt {ROUND_TRIP} | filecheck {ROUND_TRIP}", tmp_path)
    assert (sys.stdin, sys.stdout, sys.stderr, os.getcwd(), dict(os.environ)) == before


@pytest.mark.parametrize("in_process", ["1", "0"])
def test_both_ways_report_a_wrong_check(tmp_path, in_process):
    """The whole format under lit, in process and through lit's shell: a right CHECK
    passes, a wrong one fails."""
    import subprocess

    suite = tmp_path / "suite"
    suite.mkdir()
    shutil.copy(LIT_DIR / "lit.cfg.py", suite / "lit.cfg.py")
    shutil.copy(LIT_DIR / "lit_in_process.py", suite / "lit_in_process.py")
    body = "func.func @graph() {\n  func.return\n}\n"
    (suite / "right.mlir").write_text("// RUN: strata-opt %s | filecheck %s\n// CHECK: func.func @graph\n" + body)
    (suite / "wrong.mlir").write_text("// RUN: strata-opt %s | filecheck %s\n// CHECK: func.func @other\n" + body)
    done = subprocess.run(
        [sys.executable, "-c", "from lit.main import main; main()", "-v", "--param", f"strata_in_process={in_process}", str(suite)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "PASS: strata :: right.mlir" in done.stdout, done.stdout + done.stderr
    assert "FAIL: strata :: wrong.mlir" in done.stdout, done.stdout + done.stderr
    assert ("executed in process" in done.stdout) == (in_process == "1")
