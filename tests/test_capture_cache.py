"""The capture cache (frontend/caches/capture_cache.py): an inference graph Dynamo captured
before is compiled from the disk with no AOTAutograd trace and no import, and gives the
same results; whatever its key cannot tell apart, or AOTAutograd's wrapper would have
to handle, is compiled the usual way."""

from __future__ import annotations

import pytest
import torch

import strata
from strata.frontend.caches import capture_cache
from strata.frontend import compile_graph as cg


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))


def _recording(monkeypatch, module, name: str) -> list:
    """Replaces module.name, a function of one argument, by one that also appends
    that argument to the list returned."""
    seen = []
    real = getattr(module, name)

    def recording(arg):
        seen.append(arg)
        return real(arg)

    monkeypatch.setattr(module, name, recording)
    return seen


def _compile(fn, args, monkeypatch, **kwargs):
    """fn compiled afresh (Dynamo reset) and called; returns (result, graphs imported)."""
    imports = _recording(monkeypatch, cg, "import_graph")
    torch._dynamo.reset()
    out = strata.compile(fn, **kwargs)(*args)
    return out, len(imports)


def _entries():
    folder = capture_cache.cache.cache_dir() / capture_cache.KIND
    return sorted(folder.glob(f"*{capture_cache.SUFFIX}")) if folder.exists() else []


def _block(x, w, b):
    h = torch.nn.functional.linear(x, w, b)
    return torch.softmax(torch.nn.functional.gelu(h), dim=-1) * 2


def _inputs(rows=6):
    torch.manual_seed(0)
    return torch.randn(rows, 8), torch.randn(16, 8), torch.randn(16)


def test_a_second_compile_skips_the_trace_and_agrees(monkeypatch):
    args = _inputs()
    with torch.no_grad():
        first, imported = _compile(_block, args, monkeypatch)
        assert imported == 1 and len(_entries()) == 1
        again, imported = _compile(_block, args, monkeypatch)
    assert imported == 0  # no AOTAutograd graph was made, none imported
    torch.testing.assert_close(again, first)
    torch.testing.assert_close(again, _block(*args))


def test_autocast_and_grad_mode_are_part_of_the_key(monkeypatch):
    args = _inputs()
    with torch.no_grad():
        _compile(_block, args, monkeypatch)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            got, imported = _compile(_block, args, monkeypatch)
            want = _block(*args)
        assert imported == 1 and got.dtype == want.dtype == torch.bfloat16
        torch.testing.assert_close(got, want, atol=2e-2, rtol=2e-2)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            again, imported = _compile(_block, args, monkeypatch)
        assert imported == 0
        torch.testing.assert_close(again, got)
    assert len(_entries()) == 2


def test_symbolic_sizes_are_cached_once_for_all_sizes(monkeypatch):
    with torch.no_grad():
        _compile(_block, _inputs(6), monkeypatch, dynamic=True)
        for rows in (6, 37, 100):
            args = _inputs(rows)
            got, imported = _compile(_block, args, monkeypatch, dynamic=True)
            assert imported == 0, rows
            torch.testing.assert_close(got, _block(*args))
        args = _inputs(1)  # a size Dynamo specializes: another graph, compiled
        got, imported = _compile(_block, args, monkeypatch, dynamic=True)
        assert imported == 1
        torch.testing.assert_close(got, _block(*args))


def test_what_the_wrapper_must_handle_is_compiled_as_usual(monkeypatch):
    def mutates(x, w, b):
        x.add_(1)  # an input mutation, which AOTAutograd's wrapper copies back
        return _block(x, w, b)

    def aliases(x, w, b):
        return _block(x, w, b), x.t()  # an output that is a view of an input

    with torch.no_grad():
        for fn in (mutates, aliases):
            for _ in range(2):
                args, expected = _inputs(), _inputs()
                got, imported = _compile(fn, args, monkeypatch)
                assert imported == 1
                for g, w in zip(got if isinstance(got, tuple) else [got], (lambda r: r if isinstance(r, tuple) else [r])(fn(*expected))):
                    torch.testing.assert_close(g, w)
                torch.testing.assert_close(args[0], expected[0])  # the mutation happened once
    assert _entries() == []


def test_training_is_compiled_as_usual(monkeypatch):
    x, w, b = _inputs()
    w.requires_grad_(True)
    for _ in range(2):
        out, imported = _compile(_block, (x, w, b), monkeypatch)
        assert imported >= 1
    out.sum().backward()
    assert w.grad is not None and _entries() == []


def test_a_corrupt_entry_compiles_afresh(monkeypatch):
    args = _inputs()
    with torch.no_grad():
        _compile(_block, args, monkeypatch)
        (entry,) = _entries()
        entry.write_text(entry.read_text().replace("16", "17", 1))  # the digest no longer matches
        got, imported = _compile(_block, args, monkeypatch)
        assert imported == 1
        torch.testing.assert_close(got, _block(*args))
        entry.write_bytes(b"\x00 not json")
        got, imported = _compile(_block, args, monkeypatch)
        assert imported == 1
        torch.testing.assert_close(got, _block(*args))


def test_the_options_turn_it_off(monkeypatch, tmp_path):
    args = _inputs()
    traced = {"trace.enabled": True, "trace.dir": str(tmp_path / "trace")}
    with torch.no_grad():
        for options in ({"capture_cache": False}, {"graph_cache": False}, traced):
            _compile(_block, args, monkeypatch, options=options)
    assert _entries() == []


def test_a_warm_compile_parses_the_program_and_no_kernel(monkeypatch):
    """Kernels reach the code generator as text (dialects/kernel_text.py): a warm
    compile whose kernels are all in the kernel cache parses nothing, loading the
    program the cold compile stored parsed (runtime/parsed_programs.py), or, without
    that, parses only the program."""
    import shutil

    from strata.dialects import context
    from strata.runtime import parsed_programs

    args = _inputs()
    with torch.no_grad():
        first, _ = _compile(_block, args, monkeypatch)
        parsed = _recording(monkeypatch, context, "parse_module")
        again, imported = _compile(_block, args, monkeypatch)
        assert imported == 0 and parsed == []
        shutil.rmtree(capture_cache.cache.cache_dir() / parsed_programs.KIND)
        third, imported = _compile(_block, args, monkeypatch)
    assert imported == 0 and len(parsed) == 1
    assert "kernel.program" in parsed[0] and "kernel.func" not in parsed[0]
    torch.testing.assert_close(again, first)
    torch.testing.assert_close(third, first)


def test_a_kernel_missing_from_the_kernel_cache_is_parsed_and_compiled(monkeypatch):
    import shutil

    args = _inputs()
    with torch.no_grad():
        first, _ = _compile(_block, args, monkeypatch)
        for folder in capture_cache.cache.cache_dir().iterdir():
            if folder.name.startswith("llvm"):  # the CPU kernels' caches, not the capture
                shutil.rmtree(folder)
        writes = capture_cache.cache.writes
        again, imported = _compile(_block, args, monkeypatch)
    assert imported == 0 and capture_cache.cache.writes > writes  # kernels generated again
    torch.testing.assert_close(again, first)


def test_small_constant_tensors_are_stored_with_the_program(monkeypatch):
    """A tensor the graph's code makes (GPT-2's torch.tensor([]) key/value caches) is a
    constant AOTAutograd lifts out of the graph: stored beside the program, read back."""

    def with_constant(x, w, b):
        return _block(x, w, b) + torch.tensor([0.5, 1.5, -2.0, 0.25] * 4)

    args = _inputs()
    with torch.no_grad():
        first, imported = _compile(with_constant, args, monkeypatch)
        assert imported == 1 and len(_entries()) == 1
        assert '"constants"' in _entries()[0].read_text()
        again, imported = _compile(with_constant, args, monkeypatch)
    assert imported == 0
    torch.testing.assert_close(again, first)
    torch.testing.assert_close(again, with_constant(*args))


def test_graphs_of_one_code_traced_under_other_guards_are_not_confused(tmp_path, monkeypatch):
    """narrow(0, min(k, 3), 1): Dynamo's graph is the same code for k = -2 and k = 7, but
    its guards say min(k, 3) is negative, then not, and the slice starts at s0 + min(k, 3),
    then at min(k, 3). The guards are in the key: the second compile is not the first's."""
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    torch._dynamo.reset()

    def f(x, k):
        return (x * 2).narrow(0, min(k, 3), 1)

    compiled = torch.compile(f, backend="strata", dynamic=True)
    x = torch.arange(5.0)
    for k in (-2, 7, 1):
        torch.testing.assert_close(compiled(x, k), f(x, k))


def test_a_graph_with_a_size_among_its_outputs_is_compiled_as_usual(monkeypatch):
    """A captured graph that returns a SymInt (an int argument made dynamic, folded
    through abs and min) besides its tensor: the program returns the tensor only, and
    AOTAutograd's wrapper the size, so a hit, which skips the wrapper, gave Dynamo one
    result where it indexes two (IndexError on the second process's call)."""
    def f(x, k):
        return x * 2, abs(min(abs(k), -1))

    calls = [(torch.randn(3, 3), -3), (torch.randn(4, 4), 2), (torch.randn(4, 4), -3)]
    tensors_only = capture_cache._outputs_are_tensors
    asked = _recording(monkeypatch, capture_cache, "_outputs_are_tensors")
    for _ in range(2):  # the second round compiles again, as a second process would
        torch._dynamo.reset()
        compiled = strata.compile(f)  # automatic dynamic: the second call makes k a SymInt
        for x, k in calls:
            got, want = compiled(x, k), f(x, k)
            torch.testing.assert_close(got[0], want[0])
            assert got[1] == want[1] == 1
    # each round saw the graph with a size among its outputs, and stored none of it
    assert sum(not tensors_only(gm) for gm in list(asked)) == 2
