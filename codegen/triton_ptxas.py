"""Which ptxas Triton runs: the one shipped inside torch, where there is one.

Triton assembles PTX with its own bundled ptxas unless TRITON_PTXAS_PATH names another,
and the ptxas it runs is part of every kernel's disk-cache key. TorchInductor points that
variable at torch's own ptxas (torch/bin/ptxas, built with torch's CUDA) the first time
it compiles a kernel, and Triton remembers the first ptxas it asks about for the rest of
the process. So the same kernel got two cache keys: one in a process where Inductor had
compiled first, another where it had not, and a second process compiling a model found
none of the first one's binaries (docs/performance-history.md, warm compiles). strata makes the
same choice as Inductor, once, when it is imported: before any kernel of the process is
compiled, whichever compiler comes first. A value the user set is left alone.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

VARIABLE = "TRITON_PTXAS_PATH"


def torch_ptxas() -> Path | None:
    """torch's bundled ptxas, if this torch has one (CUDA builds on Linux do)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "bin" / "ptxas"
    return path if path.is_file() and os.access(path, os.X_OK) else None


def pin_ptxas(environ=os.environ) -> str | None:
    """Point Triton at torch's ptxas unless the variable is set; returns its value."""
    if environ.get(VARIABLE) is None:
        path = torch_ptxas()
        if path is not None:
            environ[VARIABLE] = str(path)
    return environ.get(VARIABLE)
