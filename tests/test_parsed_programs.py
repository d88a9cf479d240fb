"""Parsed programs on disk (runtime/parsed_programs.py): a warm compile loads the
program the cold one lowered instead of parsing its text, the module it loads prints as
that text, and a pickle that does not load is a miss, never an error."""

from __future__ import annotations

import tempfile

import pytest
import torch
from hypothesis import given, settings, strategies as st

import strata
from strata.dialects import context, kernel_text
from strata.frontend import compile_graph as cg
from strata.runtime import cache, parsed_programs


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))


def _files():
    folder = cache.cache_dir() / parsed_programs.KIND
    return sorted(folder.glob(f"*{parsed_programs.SUFFIX}")) if folder.exists() else []


def _parses(monkeypatch) -> list:
    """Records each text dialects.context.parse_module parses."""
    seen, real = [], context.parse_module

    def recording(text):
        seen.append(text)
        return real(text)

    monkeypatch.setattr(context, "parse_module", recording)
    return seen


def _block(x, w):
    return torch.softmax(torch.nn.functional.linear(x, w).relu(), dim=-1) + 1


def _lowered_program(fn, *args) -> tuple[str, object]:
    """The program text the graph cache stored for fn, and the module it was split from."""
    seen = []
    real = kernel_text.split

    def recording(module):
        found = real(module)
        seen.append((found[0], kernel_text.program_module(module)))
        return found

    import strata.runtime.graph_cache as graph_cache

    mp = pytest.MonkeyPatch()
    mp.setattr(graph_cache, "split", recording)
    try:
        torch._dynamo.reset()
        with torch.no_grad():
            strata.compile(fn)(*args)
    finally:
        mp.undo()
    assert len(seen) == 1
    return seen[0]


def test_the_cold_compile_stores_what_the_warm_one_loads(monkeypatch):
    args = (torch.randn(6, 8), torch.randn(5, 8))
    with torch.no_grad():
        torch._dynamo.reset()
        want = strata.compile(_block)(*args)
        assert len(_files()) == 1
        parses = _parses(monkeypatch)
        imports = []
        monkeypatch.setattr(cg, "import_graph", lambda *a, **k: imports.append(a) or pytest.fail("imported"))
        torch._dynamo.reset()
        got = strata.compile(_block)(*args)
    assert imports == [] and parses == []  # read from the capture cache, its program loaded, not parsed
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(got, _block(*args))


def test_a_loaded_program_prints_as_its_text(monkeypatch):
    text, module = _lowered_program(_block, torch.randn(3, 4), torch.randn(2, 4))
    assert "\n".join(str(op) for op in module.ops) in text  # program_module is what split printed
    parses = _parses(monkeypatch)
    loaded = parsed_programs.parse(text)
    assert parses == [] and loaded is not module
    assert str(loaded) == str(context.parse_module(text))


@pytest.mark.parametrize("damage", [b"", b"not a pickle", b"\x80\x05N."])  # empty, garbage, a pickled None
def test_an_unreadable_pickle_is_parsed_from_the_text_and_replaced(monkeypatch, damage):
    text, _ = _lowered_program(_block, torch.randn(3, 4), torch.randn(2, 4))
    [path] = _files()
    path.write_bytes(damage)
    want = str(context.parse_module(text))
    parses = _parses(monkeypatch)
    module = parsed_programs.parse(text)
    assert parses == [text] and str(module) == want
    assert path.read_bytes() != damage  # stored again: the next process loads it
    assert str(parsed_programs.parse(text)) == want and parses == [text]


def test_another_text_is_another_entry(monkeypatch):
    text, _ = _lowered_program(_block, torch.randn(3, 4), torch.randn(2, 4))
    other = text.replace("kernel.program", "kernel.program", 1) + "\n"  # same ops, other text
    parses = _parses(monkeypatch)
    parsed_programs.parse(other)
    assert parses == [other] and len(_files()) == 2


def test_each_parse_returns_its_own_module():
    text, _ = _lowered_program(_block, torch.randn(3, 4), torch.randn(2, 4))
    a, b = parsed_programs.parse(text), parsed_programs.parse(text)
    assert a is not b and next(iter(a.ops)) is not next(iter(b.ops))


@settings(max_examples=12, deadline=None)
@given(rows=st.integers(1, 9), cols=st.integers(1, 9), op=st.sampled_from(["relu", "sigmoid", "tanh", "exp"]),
       reduce=st.booleans())
def test_property_a_loaded_program_equals_the_parsed_text(rows, cols, op, reduce):
    def fn(x):
        y = getattr(torch, op)(x) * 2
        return y.sum(-1) if reduce else y

    with tempfile.TemporaryDirectory() as folder, pytest.MonkeyPatch.context() as mp:
        mp.setenv("STRATA_CACHE_DIR", folder)  # each example lowered afresh, its pickle stored
        text, _ = _lowered_program(fn, torch.randn(rows, cols))
        assert len(_files()) == 1
        assert str(parsed_programs.parse(text)) == str(context.parse_module(text))


def test_a_long_program_is_stored_and_loaded(monkeypatch):
    """The IR links each op to the next and each value to its users; pickled as it is,
    a few hundred ops overflow the stack. Stored flat, 5000 load back whole."""
    from xdsl.dialects import arith
    from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64

    ops = [arith.ConstantOp(IntegerAttr(i, i64)) for i in range(5000)]
    total = ops[0].result
    for op in ops[1:]:
        ops.append(add := arith.AddiOp(total, op.result))
        total = add.result
    module = ModuleOp(ops)
    text = str(module)
    parsed_programs.store(text, module)
    assert len(_files()) == 1
    parses = _parses(monkeypatch)
    loaded = parsed_programs.parse(text)
    assert parses == [] and loaded is not module
    loaded.verify()
    assert str(loaded) == text
    last = list(loaded.ops)[-1]
    assert len(list(last.operands[0].uses)) == 1 and last.operands[0].owner is list(loaded.ops)[-2]
