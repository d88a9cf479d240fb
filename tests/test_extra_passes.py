"""The `extra_passes` compile option: passes inserted into the pipeline next to a named
pass, with their options, checked when strata.compile is called."""

from __future__ import annotations

import pytest
import torch

import strata
from strata.frontend import pipeline_spec
from strata.frontend.options import list_options, resolve
from strata.passes.registry import DEFAULT_PIPELINE

DEFAULT = ",".join(DEFAULT_PIPELINE)


def _square_plus_one(x):
    return torch.pow(x, torch.full_like(x, 2.0)) + 1  # prim.pow(x, prim.full 2) after simplify


def test_passes_go_where_they_are_asked_and_the_rest_stays():
    resolved = resolve(None, {"extra_passes": {"after:simplify": "pow-to-mul", "before:fuse": "simplify"}})
    assert resolved["pipeline"] == "infer-shapes,recognize-attention,decompose,simplify,pow-to-mul,matvec-to-reduction,fold-grouped-attention,infer-shapes,simplify,fuse,coalesce-dims,schedule-collectives"
    assert resolved["extra_passes"] == {}  # folded into the pipeline: resolving again adds nothing
    assert resolve(None, resolved)["pipeline"] == resolved["pipeline"]
    assert list_options()["pipeline"] == DEFAULT
    assert resolve(None, None)["pipeline"] == DEFAULT


def test_inserted_passes_keep_their_options():
    resolved = resolve(None, {"extra_passes": {"after:decompose": "decompose{fallback_random=true},pow-to-mul"}})
    names = [n for n, _ in pipeline_spec.steps(resolved["pipeline"])]
    assert names == ["infer-shapes", "recognize-attention", "decompose", "decompose", "pow-to-mul", "simplify", "matvec-to-reduction", "fold-grouped-attention", "infer-shapes",
                     "fuse", "coalesce-dims", "schedule-collectives"]
    assert pipeline_spec.steps(resolved["pipeline"])[3] == ("decompose", {"fallback_random": True})


def test_positions_follow_a_pipeline_the_user_gave():
    options = {"pipeline": "infer-shapes,decompose,pow-to-mul,fuse", "extra_passes": {"after:pow-to-mul": "simplify"}}
    assert resolve(None, options)["pipeline"] == "infer-shapes,decompose,pow-to-mul,simplify,fuse"


@pytest.mark.parametrize(
    "extra,words",
    [
        ("pow-to-mul", ["must be a dict", "'pow-to-mul' (str)"]),
        ({"simplify": "pow-to-mul"}, ["'simplify'", "is not 'after:<pass>' or 'before:<pass>'"]),
        ({"after:simplfy": "pow-to-mul"}, ["no pass 'simplfy'", "did you mean 'simplify'"]),
        ({"after:infer-shapes": "pow-to-mul"}, ["ambiguous", "runs 2 times", "'before:recognize-attention'", "'before:fuse'"]),
        ({"after:simplify": "pow-to-mull"}, ["no pass is named 'pow-to-mull'", "did you mean 'pow-to-mul'"]),
        ({"after:simplify": "pow-to-mul{exact=false}"}, ["'pow-to-mul' does not take", "exact"]),
        ({"after:simplify": "decompose{fallback_random"}, ["does not parse"]),
        ({"after:simplify": ""}, ["no passes are given"]),
    ],
)
def test_a_wrong_insertion_fails_at_compile(extra, words):
    with pytest.raises(ValueError) as e:
        strata.compile(_square_plus_one, options={"extra_passes": extra})
    assert "'extra_passes'" in str(e.value)
    for w in words:
        assert w in str(e.value)


def test_an_inserted_pass_runs(tmp_path, monkeypatch):
    """Its effect is in the trace (prim.pow became prim.mul before fuse) and it ran once."""
    from strata.passes.pow_to_mul import PowToMulPass

    runs = []
    real = PowToMulPass.apply
    monkeypatch.setattr(PowToMulPass, "apply", lambda self, ctx, op: (runs.append(1), real(self, ctx, op)))
    x = torch.randn(5)
    for extra, folder in [({}, "plain"), ({"after:simplify": "pow-to-mul"}, "with")]:
        options = {"extra_passes": extra, "trace.enabled": True, "trace.dir": tmp_path / folder, "graph_cache": False}
        compiled = strata.compile(_square_plus_one, options=options)
        torch.testing.assert_close(compiled(x), _square_plus_one(x))
    (plain,) = [p.read_text() for p in (tmp_path / "plain").rglob("1_prim.mlir")]  # graphs are numbered per process
    (inserted,) = [p.read_text() for p in (tmp_path / "with").rglob("1_prim.mlir")]
    assert "prim.pow" in plain and "prim.mul" not in plain
    assert "prim.pow" not in inserted
    assert 'prim.mul %arg0, %arg0 {strata.source = "aten.pow.Tensor_Tensor' in inserted
    assert runs == [1]
