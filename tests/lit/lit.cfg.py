"""lit configuration of strata's FileCheck tests: `.venv/bin/lit -v tests/lit`
(tests/test_lit.py runs it under pytest, so `make test` covers it).

RUN lines may use `strata-opt` and `xdsl-opt` (the console scripts next to the Python
that runs lit), `%python -m strata.opt`, and `filecheck` (the Python port)."""

import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from lit_in_process import InProcessShTest  # noqa: E402

config.name = "strata"
# strata-opt runs inside the lit worker (lit_in_process.py says why and how);
# `--param strata_in_process=0` starts a process for every RUN line instead.
config.test_format = InProcessShTest(in_process=lit_config.params.get("strata_in_process", "1") != "0")
config.suffixes = [".mlir"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
# Temporary files (%t) go outside the source tree.
config.test_exec_root = os.path.join(tempfile.gettempdir(), f"strata-lit-{os.getuid()}")

# The tools of the Python that runs lit (the project's virtual environment) first.
bin_dir = os.path.dirname(sys.executable)
config.environment["PATH"] = os.pathsep.join([bin_dir, os.environ.get("PATH", "")])
for name in ("HOME", "PYTHONPATH", "STRATA_CACHE_DIR", "TMPDIR"):
    if name in os.environ:
        config.environment[name] = os.environ[name]
config.substitutions.append(("%python", sys.executable))
