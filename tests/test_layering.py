"""The layers keep their rules, read from the imports themselves (at module level and
inside functions alike): the data path runs one way, FX → aten → prim → kernel → code,
and no layer reaches up into one that feeds it.

- dialects/ import only dialects/ (and strata.errors): a dialect knows no pass, code
  generator, runtime or frontend;
- passes/ import only dialects/ and passes/;
- codegen/ import no passes/ and no frontend/ (they read kernel IR);
- runtime/ import no passes/ and no frontend/.
Names that several layers share (attribute names, strata's own op schemas) live in
dialects/ (dialects/attributes.py, dialects/strata_ops.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ALLOWED = {
    "dialects": {"dialects", "errors"},
    "passes": {"dialects", "passes", "errors"},
    "codegen": {"dialects", "codegen", "runtime", "errors"},
    "runtime": {"dialects", "codegen", "runtime", "errors"},
}


def _strata_imports(path: Path) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("strata."):
            out.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names if a.name.startswith("strata.")]
    return out


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_layer_imports_only_what_it_may(layer):
    wrong = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in sorted((ROOT / layer).rglob("*.py"))
        for line, module in _strata_imports(path)
        if module.split(".")[1] not in ALLOWED[layer]
    ]
    assert not wrong, f"{layer}/ may import only {sorted(ALLOWED[layer])}:\n" + "\n".join(wrong)


def test_the_rules_see_the_imports():
    """The scan finds imports inside functions too (a rule it cannot see is no rule)."""
    found = [module for _, module in _strata_imports(ROOT / "aot.py")]
    assert "strata.frontend.packaging.aot_package" in found  # imported inside compile_and_package
