"""Runs the FileCheck tests under tests/lit with lit, so that `make test` covers them.

One test here stands for the whole lit suite; on a failure its output names each
failing .mlir file with the RUN line and FileCheck's report. To run them directly:
`.venv/bin/lit -v tests/lit`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

LIT_DIR = Path(__file__).parent / "lit"


def test_lit_suite():
    result = subprocess.run(
        [sys.executable, "-c", "from lit.main import main; main()", "-q", "-j", str(os.cpu_count() or 2), str(LIT_DIR)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, f"lit failed:\n{result.stdout}\n{result.stderr}"


def test_every_pass_has_three_filecheck_tests():
    from strata.passes.registry import PASSES

    for name in PASSES:
        tests = list((LIT_DIR / name).glob("*.mlir"))
        assert len(tests) >= 3, f"tests/lit/{name}/ needs at least three FileCheck tests, has {len(tests)}"
