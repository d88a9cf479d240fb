"""strata-opt on a program that needs no torch does not import it (dialects/lazy_torch.py):
the prim and kernel passes parse, verify and rewrite without it, and each lit test of
them starts in about a second instead of three or four. The aten dialect's op classes,
made from torch's schemas, come at the first aten op."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

LIT = Path(__file__).parent / "lit"
RUN = """
import sys
sys.argv = ["strata-opt", sys.argv[1], "-p", sys.argv[2]]
from strata.opt import main
try:
    main()
except SystemExit:
    pass
from strata.dialects.lazy_torch import loaded
print("torch loaded:", loaded("torch"), file=sys.stderr)
"""


def _torch_loaded(program: Path, passes: str) -> bool:
    done = subprocess.run([sys.executable, "-c", RUN, str(program), passes], capture_output=True, text=True, timeout=120)
    assert "torch loaded:" in done.stderr, done.stderr[-2000:]
    assert "error" not in done.stderr.split("torch loaded:")[0].lower(), done.stderr[-2000:]
    return done.stderr.rsplit("torch loaded:", 1)[1].strip() == "True"


@pytest.mark.parametrize("passes, program", [
    ("pow-to-mul", "pow-to-mul/square.mlir"),
    ("simplify", "simplify/" + sorted(p.name for p in (LIT / "simplify").glob("*.mlir"))[0]),
    ("fuse", "fuse/" + sorted(p.name for p in (LIT / "fuse").glob("*.mlir"))[0]),
    ("fuse", "fuse/widening-read-by-several.mlir"),  # fusion's byte counts: dialects/types.itemsize
    ("matvec-to-reduction", "matvec-to-reduction/cpu-stays.mlir"),
    ("matmul-to-dot", "matmul-to-dot/left-alone.mlir"),
])
def test_prim_passes_run_without_torch(passes, program):
    assert not _torch_loaded(LIT / program, passes)


def test_an_aten_program_loads_torch():
    aten = sorted((LIT / "decompose").glob("*.mlir"))[0]
    assert _torch_loaded(aten, "decompose")


def test_a_module_that_deletes_its_own_attribute_loads_lazily(tmp_path, monkeypatch):
    # torch's import deletes attributes of itself; importlib's LazyLoader recursed
    # without end on that (Python 3.12), and strata-opt on aten IR died there
    (tmp_path / "self_deleting.py").write_text("import sys\nx = 1\ndelattr(sys.modules[__name__], 'x')\ny = 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    from strata.dialects.lazy_torch import lazy_module, loaded

    module = lazy_module("self_deleting")
    assert not loaded("self_deleting")
    assert module.y == 2 and loaded("self_deleting") and not hasattr(module, "x")
    sys.modules.pop("self_deleting", None)


def test_itemsizes_are_torchs():
    import torch  # noqa: F401  (the lazy table's values)

    from strata.dialects.types import DTYPES, itemsize

    assert {name: itemsize(name) for name in DTYPES} == {name: DTYPES[name].itemsize for name in DTYPES}
