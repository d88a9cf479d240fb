"""docs/dialects/*.md: generated from the op definitions, and never stale."""

from __future__ import annotations

import re

import pytest
import torch

from strata.dialects import aten, kernel, prim
from strata.dialects.context import parse_module
from strata.tools import gen_dialect_docs as gen


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return {name: page() for name, page in gen.PAGES.items()}


# aten.md's table prints schema defaults as torch parses them: checked on the torch
# version CI pins, as the aten op table itself is (tests/test_aten_dialect.py).
PINNED_TORCH = torch.__version__.startswith("2.13.")


def test_committed_pages_are_fresh(pages):
    for name, text in pages.items():
        if name == "aten.md" and not PINNED_TORCH:
            continue
        committed = (gen.DOCS / name).read_text()
        assert committed == text, f"docs/dialects/{name} is stale: run python -m strata.tools.gen_dialect_docs"
    if PINNED_TORCH:
        assert gen.main(["--check"]) == 0


def test_every_op_is_documented(pages):
    for op in [*prim.Prim.operations]:
        assert f"`{op.get_irdl_definition().name}`" in pages["prim.md"]
    for op in kernel.Kernel.operations:
        assert f"### `{op.get_irdl_definition().name}`" in pages["kernel.md"]
    rows = re.findall(r"^\| `(aten\.[^`]+)` \|", pages["aten.md"], re.M)
    assert rows == [cls.SIGNATURE.op_name for cls in aten.CORE_OPS.values()]
    assert "### `aten.call`" in pages["aten.md"]


def test_an_op_section_has_operands_properties_rules_format_and_example(pages):
    text = pages["kernel.md"]
    section = text.split("### `kernel.store`")[1].split("### ")[0]
    assert "| operand | `value` | any | one |" in section
    assert "| operand | `buffer` | `!kernel.buffer` | one |" in section
    assert "| property | `index` | string | required |" in section
    assert "$value `,` $buffer `[` $index `]` (`(` $values^" in section  # the assembly format
    assert "- storing {value.type} into {buffer.type}" in section  # a verifier rule, from verify_
    assert "- bad index '{index}': {exc}" in section  # one from a helper verify_ calls
    assert 'kernel.store %7, %1["r0 + 6*x0"] : f32, !kernel.buffer<f32>' in section
    prim_text = pages["prim.md"]
    bcast = prim_text.split("### `prim.broadcast_in_dim`")[1].split("### ")[0]
    assert "- operand dim {i} ({t.dims[i]}) cannot broadcast to {shape[b]}" in bcast
    assert "- result type {r.type} does not match the inferred {expected}" in bcast  # PrimOp's rule
    assert "| `prim.add` | 2 | all | operand type | `torch.add` |" in prim_text
    assert "dim '{a}' is not in canonical form" in pages["strata.md"]


def test_examples_are_valid_ir(pages):
    # Whole modules parse and verify; single-op examples were built and verified by
    # the generator itself.
    blocks = re.findall(r"```mlir\n(builtin\.module \{.*?\n\})\n```", "\n".join(pages.values()), re.S)
    assert len(blocks) >= 2
    for block in blocks:
        parse_module(block).verify()
