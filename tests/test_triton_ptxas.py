"""strata points Triton at torch's ptxas, as TorchInductor does, unless the user chose."""

import os
import subprocess
import sys

from strata.codegen import triton_ptxas


def test_pins_torch_ptxas_when_unset(monkeypatch, tmp_path):
    fake = tmp_path / "ptxas"
    monkeypatch.setattr(triton_ptxas, "torch_ptxas", lambda: fake)
    environ = {}
    assert triton_ptxas.pin_ptxas(environ) == str(fake)
    assert environ == {"TRITON_PTXAS_PATH": str(fake)}


def test_leaves_the_users_choice(monkeypatch, tmp_path):
    monkeypatch.setattr(triton_ptxas, "torch_ptxas", lambda: tmp_path / "ptxas")
    environ = {"TRITON_PTXAS_PATH": "/opt/cuda/bin/ptxas"}
    assert triton_ptxas.pin_ptxas(environ) == "/opt/cuda/bin/ptxas"
    assert environ == {"TRITON_PTXAS_PATH": "/opt/cuda/bin/ptxas"}


def test_nothing_to_pin_without_a_torch_ptxas(monkeypatch):
    monkeypatch.setattr(triton_ptxas, "torch_ptxas", lambda: None)
    environ = {}
    assert triton_ptxas.pin_ptxas(environ) is None
    assert environ == {}


def test_torch_ptxas_is_an_executable_file_or_none():
    path = triton_ptxas.torch_ptxas()
    assert path is None or (path.is_file() and os.access(path, os.X_OK))


def test_importing_strata_pins_it_before_any_kernel():
    """In a fresh process, `import strata` alone sets the variable as pin_ptxas says."""
    code = (
        "import os, strata\n"
        "from strata.codegen.triton_ptxas import torch_ptxas\n"
        "expected = str(torch_ptxas()) if torch_ptxas() else None\n"
        "print(os.environ.get('TRITON_PTXAS_PATH') == expected)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_PTXAS_PATH"}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "True"
