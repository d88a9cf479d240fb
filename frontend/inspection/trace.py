"""Writing a compiled graph's trace: its IR after each level, its kernels, its diagram.

Layout: <trace.dir>/graph_<n>/{0_aten,1_prim,2_kernel}.mlir and kernels/<name>.{py,ll};
with `trace.graph_diagram`, also graph.dot, graph.svg and graph.png (frontend/inspection/diagram.py).
Each .mlir file parses with strata-opt (or xdsl-opt with strata's plugin).
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

from xdsl.dialects.builtin import ModuleOp

_counter = itertools.count()


class Trace:
    def __init__(self, options: dict, number: int | None = None):
        # A diagram goes into the trace folder, so asking for one turns tracing on.
        self.enabled = bool(options.get("trace.enabled") or options.get("trace.graph_diagram"))
        self.folder: Path | None = None
        if self.enabled:
            root = Path(options.get("trace.dir") or os.path.join(os.getcwd(), "strata_trace"))
            self.folder = root / f"graph_{next(_counter) if number is None else number}"
            (self.folder / "kernels").mkdir(parents=True, exist_ok=True)

    def level(self, name: str, module: ModuleOp) -> None:
        if self.folder is not None:
            (self.folder / f"{name}.mlir").write_text(str(module) + "\n")

    def kernel(self, name: str, source: str, suffix: str) -> None:
        if self.folder is not None:
            (self.folder / "kernels" / f"{name}{suffix}").write_text(source)

    def diagram(self, module: ModuleOp, declines: list | None = None) -> list[Path]:
        """Draws the fused graph: graph.dot, and graph.svg and graph.png where
        graphviz's `dot` is installed. Returns the files written."""
        if self.folder is None:
            return []
        from strata.frontend.inspection.diagram import program_dot, render

        return render(program_dot(module, declines or [], title=self.folder.name), self.folder / "graph")
