"""Scatters into the graph's own inputs (runtime/in_place.py): a KV cache written at
`input_pos` is written where it lives, with eager's values, and only where no other
read of the cache could see the write."""

from __future__ import annotations

import warnings

import pytest
import torch

import strata
from strata.runtime import in_place


class Cache(torch.nn.Module):
    def __init__(self, reads_old: bool = False, accumulate: bool = False):
        super().__init__()
        self.register_buffer("k", torch.zeros(1, 2, 16, 4))
        self.table = torch.nn.Parameter(torch.randn(32, 8), requires_grad=False)
        self.reads_old, self.accumulate = reads_old, accumulate

    def forward(self, pos, tokens):
        torch._check(pos.shape[0] == tokens.shape[0])  # as a model's rotary table ties them
        values = self.table[tokens].view(-1, 2, 4).transpose(0, 1)[None]  # [1, 2, n, 4], as in a model
        old = self.k.sum() if self.reads_old else 0.0
        if self.accumulate:
            self.k.index_put_((torch.tensor([0]), torch.tensor([[0], [1]]), pos), values[0], accumulate=True)
        else:
            self.k[:, :, pos] = values
        return (self.k * 2).sum(-1) + old


@pytest.fixture
def counted(monkeypatch):
    calls = []
    original = in_place.scatter_into

    def counting(x, dim, index, src):
        calls.append(x.data_ptr())
        return original(x, dim, index, src)

    monkeypatch.setattr(in_place, "scatter_into", counting)
    return calls


def _run(model_args: dict, dynamic: bool, lengths=(1, 1, 1, 3)):
    torch._dynamo.reset()
    eager = Cache(**model_args)
    compiled = Cache(**model_args)
    compiled.load_state_dict(eager.state_dict())
    fn = strata.compile(compiled, dynamic=dynamic)
    start = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # no eager fallback
        for n in lengths:
            pos, values = torch.arange(start, start + n), torch.randint(0, 32, (n,))
            torch.testing.assert_close(fn(pos, values), eager(pos, values))
            torch.testing.assert_close(compiled.k, eager.k)
            start += n
    return compiled


@pytest.mark.parametrize("dynamic", [False, True])
def test_cache_written_in_place(counted, dynamic):
    model = _run({}, dynamic)
    assert counted and set(counted) == {model.k.data_ptr()}, "the scatter did not run in the cache's memory"


@pytest.mark.parametrize("model_args", [{"reads_old": True}, {"accumulate": True}])
def test_not_in_place_where_unsafe(counted, model_args):
    _run(model_args, dynamic=False)
    assert not counted
