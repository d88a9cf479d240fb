"""The graph cache: a graph compiled before skips the pass pipeline, and a corrupt
entry or a changed option is a miss that compiles afresh, never a wrong program."""

from __future__ import annotations

import torch

import strata
from strata.frontend import compile_graph as cg
from strata.runtime import graph_cache


def _f(x):
    return torch.softmax(x * 2 + 1, dim=-1)


def _compile_counting_pipelines(monkeypatch, **options):
    """Compiles _f afresh (Dynamo reset) and returns (result, pipelines run)."""
    runs = []
    real = cg.run_pipeline

    def counting(module, names, *args, **kwargs):
        runs.append(list(names))
        return real(module, names, *args, **kwargs)

    monkeypatch.setattr(cg, "run_pipeline", counting)
    torch._dynamo.reset()
    x = torch.randn(5, 33)
    out = strata.compile(_f, options=options or None)(x)
    torch.testing.assert_close(out, _f(x))
    return runs


def _entries():
    folder = graph_cache.cache.cache_dir() / graph_cache.KIND
    return sorted(folder.glob(f"*{graph_cache.SUFFIX}")) if folder.exists() else []


def test_a_second_compile_reads_the_lowering(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    assert len(_compile_counting_pipelines(monkeypatch)) == 1
    assert len(_entries()) == 1
    assert _compile_counting_pipelines(monkeypatch) == []


def test_a_changed_option_is_a_miss(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    _compile_counting_pipelines(monkeypatch)
    assert len(_compile_counting_pipelines(monkeypatch, verify=False)) == 1
    assert len(_entries()) == 2


def test_a_corrupt_entry_compiles_afresh(tmp_path, monkeypatch):
    # The capture cache (tests/test_capture_cache.py) would answer before this one.
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    _compile_counting_pipelines(monkeypatch, capture_cache=False)
    (entry,) = _entries()
    text = entry.read_text()
    # Change one dimension in the stored program: the digest no longer matches.
    entry.write_text(text.replace("33", "34", 1))
    assert len(_compile_counting_pipelines(monkeypatch, capture_cache=False)) == 1
    entry.write_bytes(b"\x00 not json")
    assert len(_compile_counting_pipelines(monkeypatch, capture_cache=False)) == 1


def test_the_option_turns_it_off(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    _compile_counting_pipelines(monkeypatch, graph_cache=False)
    assert _entries() == []
    assert len(_compile_counting_pipelines(monkeypatch, graph_cache=False)) == 1


def test_an_unwritable_cache_folder_costs_time_only(tmp_path, monkeypatch):
    """Every cache entry is an optimization (runtime/cache.store): where the folder
    cannot be made, nothing is stored and the compile still runs, right."""
    from strata.runtime import cache

    blocked = tmp_path / "not-a-folder"
    blocked.write_text("a file where the cache folder should be")
    monkeypatch.setenv("STRATA_CACHE_DIR", str(blocked))
    assert cache.store("graphs", "k", ".json", b"{}") is False

    def fn(x):
        return torch.softmax(x * 2, dim=-1)

    x = torch.randn(4, 8)
    torch._dynamo.reset()
    with torch.no_grad():
        torch.testing.assert_close(strata.compile(fn)(x), fn(x))
    assert blocked.read_text() == "a file where the cache folder should be"
