# make demo  — set up, then compile a small transformer block with strata and compare it with eager
# make test  — set up, then run the test suite
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup demo test opinfo clean

setup: $(STAMP)

# torch is pinned first: 2.13.0 is the CPU build this machine has on disk; an
# unpinned torch would pull a CUDA build of several GB.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

demo: setup
	$(PY) benchmarks/demo.py

# One pytest-xdist worker per core, at most four (the suite took 21 minutes in one process
# on this 2-core machine, 11 in two).
test: setup
	$(PY) -m pytest -q -p no:cacheprovider -n auto --maxprocesses=4 tests

# The full OpInfo sweep in one worker process per core (about an hour on 2 cores):
# docs/opinfo.md and docs/opinfo.json.
opinfo: setup
	$(PY) -m strata.tools.opinfo --jobs 0 --out docs/opinfo

clean:
	rm -rf $(VENV) strata_trace .pytest_cache
