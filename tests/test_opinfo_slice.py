"""A fixed slice of PyTorch's OpInfo database through strata: no wrong result, no error.

The full sweep is `make opinfo` (python -m strata.tools.opinfo)."""

from __future__ import annotations

import json
import signal
import time
from dataclasses import asdict

import pytest

from strata.tools.opinfo import Outcome, op_key, report, select, shard, sweep

SLICE_DTYPES = ["f32", "i64", "bool", "bf16"]


@pytest.fixture(scope="module")
def outcomes():
    return sweep(select(None, use_slice=True), SLICE_DTYPES, "cpu", "strata", max_samples=2, log=lambda *_: None)


def test_slice_has_no_wrong_result_or_error(outcomes):
    bad = [(o.op, o.dtype, o.bin, o.detail[:200]) for o in outcomes if o.bin in ("wrong", "error")]
    assert not bad, bad


def test_slice_mostly_compiles_without_fallback(outcomes):
    judged = [o for o in outcomes if o.bin != "unsupported"]
    passed = [o for o in judged if o.bin == "pass"]
    assert len(judged) > 100
    assert len(passed) / len(judged) > 0.9, [(o.op, o.dtype, o.fallbacks) for o in judged if o.bin != "pass"]


# The sweep's worker pool (--jobs, --timeout) and --shard/--merge, on a few cheap pairs:
# each pool run spawns workers that import torch and op_db (a few seconds each).
SMALL = ["--ops", "add,abs,sum", "--dtypes", "f32,i64", "--samples", "2"]
SMALL_PAIRS = [(op, d) for op in ("abs", "add", "sum") for d in ("f32", "i64")]  # op_db order


def _run(tmp_path, name: str, *args: str) -> tuple[list[dict], list[str]]:
    """main() with args; the JSON it wrote, and its Markdown less the Command line."""
    from strata.tools.opinfo import main

    main([*args, "--out", str(tmp_path / name)])
    md = (tmp_path / f"{name}.md").read_text().splitlines()
    return json.loads((tmp_path / f"{name}.json").read_text()), [l for l in md if not l.startswith("Command:")]


def test_jobs_1_and_2_give_the_same_report_in_op_db_order(tmp_path):
    one, one_md = _run(tmp_path, "one", *SMALL, "--jobs", "1")
    two, two_md = _run(tmp_path, "two", *SMALL, "--jobs", "2")
    assert [(o["op"], o["dtype"]) for o in one] == SMALL_PAIRS
    assert all(o["bin"] == "pass" and o["samples"] > 0 for o in one), one
    assert two == one
    assert two_md == one_md
    # and the same as the in-process path (sweep with jobs=None)
    here = sweep(select(["add", "abs", "sum"], False), ["f32", "i64"], "cpu", "strata", 2, log=lambda *_: None)
    assert [asdict(o) for o in here] == one


def test_a_hanging_or_crashing_pair_is_an_error_and_the_sweep_goes_on(monkeypatch):
    # STRATA_OPINFO_FAULT (tools/opinfo.py): the worker hangs on abs/f32, then its
    # replacement crashes on sum/i64 (the last pair, so no third worker starts)
    monkeypatch.setenv("STRATA_OPINFO_FAULT", "abs:f32:hang,sum:i64:crash")
    lines: list[str] = []
    start = time.monotonic()
    got = sweep(select(["abs", "sum"], False), ["f32", "i64"], "cpu", "strata", 2, log=lines.append, jobs=1, timeout=4)
    assert time.monotonic() - start < 60  # the hang (1e6 s) was cut off
    assert [(o.op, o.dtype, o.bin) for o in got] == [
        ("abs", "f32", "error"),
        ("abs", "i64", "pass"),  # the rest of the OpInfo, in a new worker
        ("sum", "f32", "pass"),
        ("sum", "i64", "error"),
    ]
    assert got[0].detail == "timed out after 4 s"
    assert got[3].detail == f"worker died (exit code {-signal.SIGSEGV})"
    assert len(lines) == 4 and "timed out after 4 s" in lines[0]  # one progress line per pair


def test_merged_shards_equal_the_unsharded_sweep(tmp_path):
    infos = select(["add", "abs", "sum", "sin"], False)
    assert [op_key(i) for i in shard(infos, "0/2")] == ["abs", "sin"]
    assert [op_key(i) for i in shard(infos, "1/2")] == ["add", "sum"]
    with pytest.raises(ValueError):
        shard(infos, "2/2")
    # the shards in-process (the pool is tested above), written as --out writes them
    run = lambda infos: sweep(infos, ["f32", "i64"], "cpu", "strata", 2, log=lambda *_: None)
    whole = [asdict(o) for o in run(infos)]
    for i in (1, 0):  # the later shard first: merge sorts into op_db order
        (tmp_path / f"shard{i}.json").write_text(json.dumps([asdict(o) for o in run(shard(infos, f"{i}/2"))]))
    files = [str(tmp_path / "shard1.json"), str(tmp_path / "shard0.json")]
    merged, merged_md = _run(tmp_path, "merged", "--merge", *files)
    assert merged == whole
    assert len(whole) == 8 and all(o["bin"] == "pass" for o in whole), whole
    text = report([Outcome(**o) for o in whole], "strata", "cpu", "x").splitlines()
    assert merged_md == [l for l in text if not l.startswith("Command:")]


def test_float64_yardstick_runs_dtype_arguments_in_float64_too():
    """_softmax_backward_data(grad, out, dim, input_dtype): the float64 run passes
    torch.float64 as input_dtype, or it would round its own result to f16."""
    import torch

    from strata.tools.opinfo import _to_f64

    args = (torch.ones(2, dtype=torch.float16), 0, torch.float16, torch.int64)
    assert _to_f64(args)[0].dtype == torch.float64
    assert _to_f64(args)[1:] == (0, torch.float64, torch.int64)


def test_attention_rng_state_is_compared_by_metadata_only_without_dropout():
    import torch

    from strata.tools.opinfo import _assert_close_except, _unused_rng_outputs, select

    (info,) = select(["torch.ops.aten._flash_attention_forward"], False)
    q = torch.zeros(1)
    assert _unused_rng_outputs(info, (q, q, q, None, None, 4, 4, 0.0, False, False), {}) == (2, 3)
    assert _unused_rng_outputs(info, (q, q, q, None, None, 4, 4, 0.5, False, False), {}) == ()
    seed = torch.tensor([1, 2], dtype=torch.int64)
    _assert_close_except((q, q, seed, seed[0]), (q, q, seed + 7, seed[1]), (2, 3))
    with pytest.raises(AssertionError):
        _assert_close_except((q + 1, q, seed, seed[0]), (q, q, seed, seed[0]), (2, 3))
