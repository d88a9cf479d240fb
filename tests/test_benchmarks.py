"""The benchmark suite (benchmarks/suite.py) on its small CPU path: it runs, and its
Markdown, JSON and PNG come out well formed (the PNG where matplotlib is installed; without
it the run says how to install it and writes the rest). Also the chart, skipping a model
whose library is missing, and a failed contender's report, without compiling anything."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import zlib

import pytest

BENCHMARKS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks")
sys.path.insert(0, BENCHMARKS)

import chart  # noqa: E402
import model_suite  # noqa: E402
import models  # noqa: E402


def read_png(path: str) -> tuple[int, int, dict[str, str]]:
    """(width, height, tEXt chunks) of a PNG, checking every chunk's CRC and, for 8-bit
    RGB or RGBA, the size of the decompressed image data."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, []
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        assert crc == zlib.crc32(kind + body) & 0xFFFFFFFF, kind
        chunks.append((kind, body))
        pos += 12 + length
    assert chunks[0][0] == b"IHDR" and chunks[-1][0] == b"IEND"
    width, height, depth, color = struct.unpack(">IIBB", chunks[0][1][:10])
    text = {k.decode(): v.decode("latin-1") for kind, body in chunks if kind == b"tEXt" for k, v in [body.split(b"\0", 1)]}
    if depth == 8 and color in (2, 6):
        raw = zlib.decompress(b"".join(body for kind, body in chunks if kind == b"IDAT"))
        assert len(raw) == height * (1 + (3 if color == 2 else 4) * width)
    return width, height, text


PANELS = [
    ("fp32: speedup over eager", ["pointwise", "bert_base"], {"eager": [1.0, 1.0], "inductor": [2.5, None], "strata": [3.1, 0.4]}),
    ("bf16 autocast: speedup over eager", ["pointwise", "bert_base"], {"eager": [1.0, 1.0], "inductor": [1.2, 1.1], "strata": [300.0, 0.9]}),
]


def test_the_chart_is_a_valid_png_that_carries_its_data(tmp_path):
    pytest.importorskip("matplotlib")
    path = str(tmp_path / "c.png")
    assert chart.chart_step(path, PANELS, "strata vs Inductor") == f"chart: {path}"
    width, height, text = read_png(path)
    assert width >= 400 and height >= 2 * 240
    assert text["Title"] == "strata vs Inductor"
    assert "bert_base eager=1.00/inductor=failed/strata=0.40" in text["Description"]
    assert "bf16 autocast: speedup over eager: pointwise eager=1.00/inductor=1.20/strata=300.00" in text["Description"]


def test_without_matplotlib_the_chart_step_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` raises ImportError
    path = str(tmp_path / "c.png")
    with pytest.raises(chart.MissingMatplotlib, match=r"pip install -e '\.\[bench\]'"):
        chart.write_chart(path, PANELS)
    assert not chart.available()
    line = chart.chart_step(path, PANELS)
    assert line.startswith(f"chart: {path} not written: charts need matplotlib") and "pip install -e '.[bench]'" in line
    assert not os.path.exists(path)


def test_a_missing_library_skips_the_model(monkeypatch):
    monkeypatch.setitem(sys.modules, "timm", None)  # `import timm` raises ImportError
    with pytest.raises(models.MissingLibrary, match="timm cannot be imported"):
        models.build("vit_small", "cpu", small=True)
    cell = model_suite.run_cell("vit_small", "fp32", "cpu", small=True, max_rounds=5, budget_s=0.1, log=lambda s: None)
    assert cell.skipped and "timm" in cell.skipped and not cell.ms


def test_a_compiler_that_fails_is_recorded_and_the_cell_goes_on(monkeypatch):
    def compile_with(compiler, fn):
        if compiler == "inductor":
            def broken(*args):
                raise RuntimeError("no kernel for this\nsecond line")
            return broken
        return fn  # "strata": the function itself, so that nothing is compiled here

    monkeypatch.setattr(model_suite, "compile_with", compile_with)
    cell = model_suite.run_cell("pointwise", "fp32", "cpu", small=True, max_rounds=5, budget_s=0.1, log=lambda s: None)
    assert cell.failed == {"inductor": "RuntimeError: no kernel for this"}
    assert set(cell.ms) == {"eager", "strata"} and cell.ok == {"strata": True} and cell.max_err == {"strata": 0.0}
    assert cell.speedup("inductor") is None and cell.strata_vs_inductor is None and cell.rounds >= 5


def test_a_failed_contender_is_reported():
    import suite

    ok = model_suite.Cell("mlp", "fp32", "4 tokens", ms={"eager": 2.0, "inductor": 1.0, "strata": 0.5},
                          compile_s={"inductor": 3.0, "strata": 1.0}, warm_compile_s={"inductor": 1.0, "strata": 2.0},
                          max_err={"inductor": 1e-7, "strata": 2e-7}, ok={"inductor": True, "strata": True},
                          peak_mib={"eager": None, "inductor": None, "strata": None})
    failed = model_suite.Cell("gpt2", "fp32", "b=2", ms={"eager": 4.0, "strata": 2.0}, compile_s={"strata": 1.0},
                              max_err={"strata": 0.5}, ok={"strata": False}, failed={"inductor": "RuntimeError: boom"},
                              strata_notes=["eager op aten::embedding"])
    text = suite.model_markdown([ok, failed], "cpu")
    assert "| gpt2 | b=2 | 4.000 | failed | 2.000 | - | 2.00x | - | failed / 1.0 |" in text
    assert "5.0e-01 WRONG" in text and "2.00 (> 1 s)" in text
    assert "- gpt2 fp32: inductor failed: RuntimeError: boom" in text
    assert "- gpt2 fp32: strata: eager op aten::embedding" in text
    means = suite.geomeans([ok, failed])["fp32"]
    assert means["strata_vs_inductor"] == pytest.approx(2.0) and means["models"] == 1
    assert means["strata_vs_eager"] == pytest.approx(4.0 ** 0.5 * 2.0 ** 0.5)
    assert suite.chart_panels([ok, failed])[0][2]["inductor"] == [2.0, None]


def test_small_cpu_suite_end_to_end(tmp_path):
    """One small model, fp32, eager vs Inductor vs strata, with the warm-compile
    process: well under a minute on a quiet 2-core machine (each process pays
    Inductor's first compile). With dynamo_cache the warm process must find
    everything on disk, Dynamo's package included: it writes nothing."""
    out = tmp_path / "out"
    cmd = [sys.executable, os.path.join(BENCHMARKS, "suite.py"), "--device", "cpu", "--small", "--models-only",
           "--only", "pointwise", "--dtypes", "fp32", "--rounds", "5", "--budget", "0.2",
           "--strata-options", '{"dynamo_cache": true}', "--out", str(out)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]

    data = json.loads((out / "suite.json").read_text())
    assert data["meta"]["strata_options"] == {"dynamo_cache": True}
    assert data["meta"]["torch"] and data["meta"]["tolerances"]["fp32"] == {"rtol": 1e-3, "atol": 1e-3}
    assert data["kernels"] is None
    assert [(m["model"], m["dtype"]) for m in data["models"]] == [("pointwise", "fp32")]
    for m in data["models"]:
        assert m["skipped"] is None and m["failed"] == {}, m
        assert set(m["ms"]) == {"eager", "inductor", "strata"} and all(t > 0 for t in m["ms"].values())
        assert m["ok"] == {"inductor": True, "strata": True}
        assert m["max_err"]["strata"] < 1e-3
        assert m["compile_s"]["strata"] > 0 and all(m["warm_compile_s"][k] > 0 for k in ("dynamo", "inductor", "strata"))
        assert m["strata_warm_cache_writes"] == 0
        assert m["peak_mib"] == {"eager": None, "inductor": None, "strata": None}  # n/a on CPU
        assert m["speedup_over_eager"]["strata"] == pytest.approx(m["ms"]["eager"] / m["ms"]["strata"])
        assert m["strata_vs_inductor"] == pytest.approx(m["ms"]["inductor"] / m["ms"]["strata"])
    assert data["geomean"]["fp32"]["models"] == 1 and data["geomean"]["fp32"]["strata_vs_inductor"] > 0
    assert set(data["meta"]["seconds"]) == {"models", "warm compiles (serial)", "total"}

    md = (out / "suite.md").read_text()
    table = [line for line in md.splitlines() if line.startswith("|")]
    assert len({line.count("|") for line in table}) == 1  # every row has the header's columns
    assert any(line.startswith("| pointwise | 256x512") for line in table)
    assert any(line.startswith("| **geomean** (1 model)") for line in table)
    assert "n/a / n/a / n/a" in md

    assert_chart(run.stdout, out / "suite.png", "pointwise")


def assert_chart(stdout: str, path, model: str) -> None:
    """The PNG with the model's bars where matplotlib is installed; else no PNG, and a
    line saying how to install it."""
    if chart.available():
        width, height, text = read_png(str(path))
        assert width > 0 and height > 0 and model in text["Description"]
        assert f"chart: {path}\n" in stdout
    else:
        assert not path.exists()
        assert f"chart: {path} not written: charts need matplotlib" in stdout and "pip install -e '.[bench]'" in stdout


# ---------------------------------------------------------------- the training suite (benchmarks/train_suite.py)
def test_grad_error_is_relative_with_a_floor():
    import torch
    import train_suite

    want = {"w": torch.tensor([1.0, -2.0]), "key_bias": torch.tensor([1e-9, -1e-9]), "unused": None}
    assert train_suite.grad_error(dict(want), want) == 0.0
    got = {"w": torch.tensor([1.0, -2.02]), "key_bias": torch.tensor([-1e-9, 1e-9]), "unused": None}
    # w: 0.02 / 2; key_bias: noise of 2e-9 against the floor 1e-3 * 2, not against its own 1e-9
    assert train_suite.grad_error(got, want) == pytest.approx(0.01)
    assert train_suite.grad_error({**got, "w": None}, want) == pytest.approx(1.0)  # a missing gradient is zeros
    assert train_suite.grad_error({**got, "w": torch.tensor([float("nan"), 0.0])}, want) == float("inf")
    assert train_suite.grad_error({**got, "w": torch.zeros(3)}, want) == float("inf")


def test_the_training_models_have_no_active_dropout():
    import train_suite

    for name in ("bert_base", "gpt2", "gpt_block"):
        try:
            case = models.build(name, "cpu", small=True)
        except models.MissingLibrary:
            continue
        assert train_suite.active_dropout(case.module.train()) == [], name


def test_a_train_cell_without_compiling(monkeypatch):
    """Inductor raises, "strata" is the function itself: the cell goes on, strata's
    gradients are eager's exactly."""
    import train_suite

    def compile_with(compiler, fn):
        if compiler == "inductor":
            def broken(*args):
                raise RuntimeError("no backward for this")
            return broken
        return fn

    monkeypatch.setattr(model_suite, "compile_with", compile_with)
    cell = train_suite.run_train_cell("layernorm", "bf16", "cpu", small=True, max_rounds=5, budget_s=0.1, log=lambda s: None)
    assert cell.failed == {"inductor": "RuntimeError: no backward for this"}
    assert cell.grads == 3  # the weight, the bias and the input
    assert cell.max_err == {"strata": 0.0} and cell.ok == {"strata": True} and cell.reference is None
    assert set(cell.ms) == {"eager", "strata"} and cell.loss["strata"] == cell.loss["eager"]
    assert cell.as_json()["speedup_over_eager"]["inductor"] is None and "warm_compile_s" not in cell.as_json()


def test_small_cpu_train_suite_end_to_end(tmp_path):
    """Two small models, bf16 autocast, a training step eager vs Inductor vs strata:
    about a minute on a loaded 2-core machine (Inductor's C++ compiles of the forward
    and the backward are most of it)."""
    out = tmp_path / "out"
    cmd = [sys.executable, os.path.join(BENCHMARKS, "train_suite.py"), "--device", "cpu", "--small", "--only", "mlp,layernorm",
           "--dtypes", "bf16", "--rounds", "5", "--budget", "0.2", "--threads", "1", "--out", str(out)]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]

    data = json.loads((out / "train.json").read_text())
    assert [(m["model"], m["dtype"]) for m in data["models"]] == [("mlp", "bf16"), ("layernorm", "bf16")]
    for m in data["models"]:
        assert m["skipped"] is None and m["failed"] == {}, m
        assert set(m["ms"]) == {"eager", "inductor", "strata"} and all(0 < t < float("inf") for t in m["ms"].values())
        assert m["ok"] == {"inductor": True, "strata": True}, m  # the first step's gradients match eager's
        assert all(0 <= e < float("inf") for e in m["max_err"].values())
        assert m["grads"] > 0 and m["compile_s"]["strata"] > 0 and m["compile_s"]["inductor"] > 0
        assert m["peak_mib"] == {"eager": None, "inductor": None, "strata": None}  # n/a on CPU
        assert m["speedup_over_eager"]["strata"] == pytest.approx(m["ms"]["eager"] / m["ms"]["strata"])
    assert data["geomean"]["bf16"]["models"] == 2 and data["geomean"]["bf16"]["strata_vs_eager"] > 0

    md = (out / "train.md").read_text()
    table = [line for line in md.splitlines() if line.startswith("|")]
    assert len({line.count("|") for line in table}) == 1  # every row has the header's columns
    assert any(line.startswith("| mlp | 256 tokens") for line in table)
    assert any(line.startswith("| **geomean** (2 models)") for line in table)
    assert_chart(run.stdout, out / "train.png", "layernorm")
