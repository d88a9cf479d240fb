"""lit configuration of strata's FileCheck tests: `.venv/bin/lit -v tests/lit`
(tests/test_lit.py runs it under pytest, so `make test` covers it).

RUN lines may use `strata-opt` and `xdsl-opt` (the console scripts next to the Python
that runs lit), `%python -m strata.opt`, and `filecheck` (the Python port)."""

import os
import sys
import tempfile

import lit.formats

config.name = "strata"
config.test_format = lit.formats.ShTest(execute_external=False)
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
