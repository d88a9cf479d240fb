"""reduce-overhead: compiled graphs replayed as CUDA graphs (runtime/cuda_graphs.py).

The GPU tests are skipped without CUDA; the CPU tests check that the mode falls back to
plain calls cleanly."""

from __future__ import annotations

import warnings

import pytest
import torch

import strata
from strata.runtime import cuda_graphs
from strata.testing.models import layer_norm, softmax_rows

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")


def pointwise(x, y):
    return torch.sigmoid(x * 2.0 + y) - 0.5


# ---------------------------------------------------------------- CPU: a clean fallback
@pytest.mark.parametrize("codegen", ["llvm", "triton"])
def test_reduce_overhead_falls_back_on_cpu(codegen):
    f = strata.compile(pointwise, mode="reduce-overhead", options={"codegen": codegen})
    for _ in range(3):
        x, y = torch.randn(5, 7), torch.randn(5, 7)
        torch.testing.assert_close(f(x, y), pointwise(x, y))


def test_a_graph_not_recorded_says_why(caplog):
    """reduce-overhead that does not apply names its reason (STRATA_LOGS=cudagraphs)."""
    torch._dynamo.reset()
    with caplog.at_level("INFO", logger="strata.cudagraphs"):
        strata.compile(pointwise, mode="reduce-overhead")(torch.randn(5, 7), torch.randn(5, 7))
        with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):  # x[x > 0] in the graph
            strata.compile(lambda x: x[x > 0] * 2, mode="reduce-overhead")(torch.randn(8))
    lines = [r.getMessage() for r in caplog.records if r.name == "strata.cudagraphs"]
    assert "no CUDA graph: the graph runs on cpu" in lines
    assert any("reads tensor data on the host" in line for line in lines)


def test_wrap_is_the_identity_off_the_gpu():
    fn = lambda args: [args[0] + 1]  # noqa: E731
    assert cuda_graphs.wrap(fn, torch.device("cpu")) is fn


def test_modes_set_the_options():
    assert strata.list_mode_options("reduce-overhead") == {"triton.cudagraphs": True}
    assert strata.list_mode_options("max-autotune") == {"max_autotune": True, "triton.cudagraphs": True}
    assert strata.list_mode_options("max-autotune-no-cudagraphs") == {"max_autotune": True}


# ---------------------------------------------------------------- GPU
@cuda
def test_runner_records_on_the_second_call_and_replays():
    calls = []

    def fn(args):
        calls.append(1)
        return [args[0] * 2 + args[1]]

    runner = cuda_graphs.CudaGraphRunner(fn)
    for i in range(5):
        x, y = torch.randn(64, device="cuda"), torch.randn(64, device="cuda")
        (out,) = runner([x, y])
        torch.testing.assert_close(out, x * 2 + y)
        del out
    assert runner.plain_calls == 1  # the warm-up
    assert runner.replays == 4
    # warm-up, then the recording's side-stream warm-up and its capture; replays run no Python
    assert len(calls) == 3


@cuda
def test_a_new_shape_is_recorded_again():
    runner = cuda_graphs.CudaGraphRunner(lambda args: [args[0].sum(0)])
    for n in (8, 8, 8, 16, 16, 16, 8):
        x = torch.randn(n, 4, device="cuda")
        torch.testing.assert_close(runner([x])[0], x.sum(0))
    assert len(runner.recordings) == 2


@cuda
def test_outputs_still_held_are_not_overwritten():
    runner = cuda_graphs.CudaGraphRunner(lambda args: [args[0] + 1])
    x = torch.randn(32, device="cuda")
    runner([x])  # warm-up
    held = []
    for i in range(5):
        xi = torch.full((32,), float(i), device="cuda")
        held.append(runner([xi])[0])
    for i, out in enumerate(held):
        torch.testing.assert_close(out, torch.full((32,), float(i + 1), device="cuda"))
    # three recordings in turn, then plain calls while all their outputs are held
    assert len(runner.recordings[runner._signature([x])]) == cuda_graphs.MAX_RECORDINGS
    view = held[0][:4]
    del held
    # a view keeps the storage alive too
    out = runner([torch.full((32,), 7.0, device="cuda")])[0]
    torch.testing.assert_close(view, torch.ones(4, device="cuda"))
    torch.testing.assert_close(out, torch.full((32,), 8.0, device="cuda"))


@cuda
def test_a_loop_reassigning_its_result_replays():
    runner = cuda_graphs.CudaGraphRunner(lambda args: [args[0] * 3])
    y = None
    for i in range(6):
        x = torch.full((16,), float(i), device="cuda")
        y = runner([x])[0]
        torch.testing.assert_close(y, x * 3)
    assert runner.plain_calls == 1 and runner.replays == 5
    assert len(next(iter(runner.recordings.values()))) == 2  # y of the last call is held while the next runs


@cuda
def test_parameters_are_read_in_place():
    w = torch.nn.Parameter(torch.randn(8, device="cuda"), requires_grad=False)
    runner = cuda_graphs.CudaGraphRunner(lambda args: [args[0] * args[1]])
    for _ in range(3):
        x = torch.randn(8, device="cuda")  # a new activation each call: copied
        out = runner([x, w])[0]
        torch.testing.assert_close(out, x * w)
        del out
    rec = next(iter(runner.recordings.values()))[0]
    assert [i for _, i in rec.copied] == [0] and [i for i, _ in rec.in_place] == [1]
    with torch.no_grad():
        w.mul_(2)
    torch.testing.assert_close(runner([x, w])[0], x * w)


@cuda
def test_an_input_passed_again_is_read_in_place_until_it_moves():
    runner = cuda_graphs.CudaGraphRunner(lambda args: [args[0] + 1])
    x = torch.randn(16, device="cuda")
    for _ in range(3):
        torch.testing.assert_close(runner([x])[0], x + 1)
    (rec,) = next(iter(runner.recordings.values()))
    assert rec.copied == [] and rec.in_place == [(0, x.data_ptr())]
    x.mul_(3)  # read in place: the replay sees the new values
    torch.testing.assert_close(runner([x])[0], x + 1)
    y = torch.randn(16, device="cuda")  # elsewhere: it moved, so from now on it is copied
    torch.testing.assert_close(runner([y])[0], y + 1)
    (rec,) = next(iter(runner.recordings.values()))  # the recording reading x in place is dropped
    assert rec.copied and rec.in_place == []
    torch.testing.assert_close(runner([x])[0], x + 1)  # x again: copied, replayed
    assert len(next(iter(runner.recordings.values()))) == 1


@cuda
def test_an_input_that_moves_between_loops_is_copied_from_then_on():
    """A decode loop's position: one tensor advanced in place within a generation, a
    new one for the next; its results held while the next step runs. Once it has
    moved, it is copied, and the calls keep replaying (not recorded again for each
    address until the recordings run out)."""
    runner = cuda_graphs.CudaGraphRunner(lambda args: [args[0] * 2 + args[1]])
    x = torch.randn(16, device="cuda")
    calls = 0
    for generation in range(5):
        pos = torch.full((1,), float(generation), device="cuda")
        y = None
        for _ in range(6):
            y = runner([x, pos])[0]
            torch.testing.assert_close(y, x * 2 + pos)
            pos += 1
            calls += 1
    recordings = next(iter(runner.recordings.values()))
    assert runner.moved[next(iter(runner.recordings))] == {1}
    assert all(1 in [i for _, i in rec.copied] for rec in recordings) and len(recordings) == 2
    assert runner.plain_calls <= 3 and runner.replays == calls - runner.plain_calls


@cuda
@pytest.mark.parametrize("fn, shapes", [
    (pointwise, [(64, 128), (64, 128)]),
    (softmax_rows, [(33, 1000)]),
    (layer_norm, [(16, 512), (512,), (512,)]),
])
def test_reduce_overhead_matches_eager(fn, shapes):
    f = strata.compile(fn, mode="reduce-overhead")
    with torch.no_grad():
        for _ in range(4):
            args = [torch.randn(s, device="cuda") for s in shapes]
            torch.testing.assert_close(f(*args), fn(*args))


@cuda
def test_reduce_overhead_new_shapes_with_dynamic():
    f = strata.compile(softmax_rows, mode="reduce-overhead", dynamic=True)
    with torch.no_grad():
        for rows in (8, 8, 8, 24, 24, 24, 8):
            x = torch.randn(rows, 100, device="cuda")
            torch.testing.assert_close(f(x), softmax_rows(x))


@cuda
def test_max_autotune_picks_a_tile_and_caches_it(capfd, tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))  # no winner from an earlier run
    f = strata.compile(softmax_rows, mode="max-autotune-no-cudagraphs")
    x = torch.randn(256, 2048, device="cuda")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.testing.assert_close(f(x), softmax_rows(x))
    assert "strata: autotuning" in capfd.readouterr().err
    torch._dynamo.reset()
    g = strata.compile(softmax_rows, mode="max-autotune-no-cudagraphs")
    torch.testing.assert_close(g(x), softmax_rows(x))
    assert "strata: autotuning" not in capfd.readouterr().err  # the winner came from the disk cache


@cuda
def test_direct_launches_handle_misaligned_buffers():
    f = strata.compile(pointwise)
    base = torch.randn(4097, device="cuda")
    x, y = base[:4096].view(64, 64), torch.randn(64, 64, device="cuda")
    torch.testing.assert_close(f(x, y), pointwise(x, y))
    torch._dynamo.reset()
    f = strata.compile(pointwise)
    x1 = base[1:].view(64, 64)  # 4 bytes off a 16-byte boundary
    for a in (x, x1, x, x1):
        torch.testing.assert_close(f(a, y), pointwise(a, y))


@cuda
def test_an_output_that_is_an_input_written_in_place_replays():
    """A KV cache scattered where it lives is returned as itself (runtime/in_place.py):
    the caller's references to it never make the runner think a replay's output is
    still held, so every call after the recording replays."""
    cache = torch.zeros(4, 8, device="cuda")

    def step(args):
        c, pos, v = args
        return [c.scatter_(0, pos.expand(1, 8), v), c.sum(0)]

    runner = cuda_graphs.CudaGraphRunner(step, static={0})
    for i in range(4):
        v = torch.full((1, 8), float(i + 1), device="cuda")
        out = runner([cache, torch.tensor([[i]], device="cuda"), v])
        assert out[0] is cache
        torch.testing.assert_close(out[1], cache.sum(0))
    torch.testing.assert_close(cache[:, 0], torch.tensor([1.0, 2.0, 3.0, 4.0], device="cuda"))
    assert runner.plain_calls == 1 and runner.replays == 3


def test_a_graph_of_fixed_shapes_is_known_as_one():
    """The runner of a graph with no shape symbols computes its signature once
    (frontend/compile_graph.py `_fixed_shapes`); a dynamic graph's varies by call."""
    from strata.frontend import compile_graph

    seen = []
    real = compile_graph.cuda_graphs.wrap

    def spy(call, device, kind, fixed_shapes=False):
        seen.append(fixed_shapes)
        return real(call, device, kind, fixed_shapes)

    compile_graph.cuda_graphs.wrap = spy
    try:
        torch._dynamo.reset()
        strata.compile(pointwise, mode="reduce-overhead")(torch.randn(5, 7), torch.randn(5, 7))
        strata.compile(softmax_rows, mode="reduce-overhead", dynamic=True)(torch.randn(6, 9))
    finally:
        compile_graph.cuda_graphs.wrap = real
    assert seen == [True, False]


@cuda
def test_a_fixed_shape_runner_describes_its_arguments_once():
    runner = cuda_graphs.CudaGraphRunner(lambda args: [args[0] * args[1]], fixed_shapes=True)
    w = torch.randn(32, device="cuda")
    signatures = []
    real = runner._signature
    runner._signature = lambda args: signatures.append(1) or real(args)
    for _ in range(6):
        x = torch.randn(32, device="cuda")
        out = runner([x, w])[0]
        torch.testing.assert_close(out, x * w)
        del out
    assert len(signatures) == 1 and runner.replays == 5 and runner.plain_calls == 1
