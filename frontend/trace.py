"""Writing a compiled graph's trace: its IR after each level and its kernels.

Layout: <trace.dir>/graph_<n>/{0_aten,1_prim,2_kernel}.mlir and kernels/<name>.{py,ll}.
Each .mlir file parses with strata-opt (or xdsl-opt with strata's plugin).
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

_counter = itertools.count()


class Trace:
    def __init__(self, options: dict):
        self.enabled = bool(options.get("trace.enabled"))
        self.folder: Path | None = None
        if self.enabled:
            root = Path(options.get("trace.dir") or os.path.join(os.getcwd(), "strata_trace"))
            self.folder = root / f"graph_{next(_counter)}"
            (self.folder / "kernels").mkdir(parents=True, exist_ok=True)

    def level(self, name: str, module: ModuleOp) -> None:
        if self.folder is not None:
            (self.folder / f"{name}.mlir").write_text(str(module) + "\n")

    def kernel(self, name: str, source: str, suffix: str) -> None:
        if self.folder is not None:
            (self.folder / "kernels" / f"{name}{suffix}").write_text(source)
