"""The OpInfo sweep: PyTorch's operator database compiled op by op and compared with eager.

    python -m strata.tools.opinfo                         # full sweep, CPU, strata
    python -m strata.tools.opinfo --slice                 # the fixed slice `make test` runs
    python -m strata.tools.opinfo --ops add,softmax --dtypes f32,bf16
    python -m strata.tools.opinfo --backend inductor      # the same samples through Inductor
    python -m strata.tools.opinfo --device cuda --out docs/opinfo-cuda
    python -m strata.tools.opinfo --jobs 0 --timeout 120  # one worker per core, 120 s per pair
    python -m strata.tools.opinfo --shard 0/2 --out a     # every 2nd OpInfo from the 1st; then
    python -m strata.tools.opinfo --merge a.json b.json --out docs/opinfo

Each (OpInfo, dtype) lands in one bin, from its first few sample inputs:
- pass: every sample matched eager (torch's per-dtype tolerances), no eager fallback;
- fallback: matched, but some op ran through the eager fallback (the report names it);
- wrong: a sample's result differed from eager (the worst outcome). A floating result
  that differs from eager by more than torch's tolerance for its dtype still passes
  when it is at least as close as eager's to the same op run in float64 (eager's
  kernels round intermediates in some reduced-precision paths; being more accurate
  than eager is not wrong);
- error: compiling or running raised;
- unsupported: eager itself raised on the samples (nothing to compare with).
Writes <out>.md and <out>.json, in op_db order.

The pairs run in --jobs worker processes (spawned, so CUDA works in them), handed one
OpInfo at a time; a pair that runs past --timeout, or whose worker dies (a segfault, the
OOM killer), lands in `error` and the worker is replaced. For testing that machinery, the
environment variable STRATA_OPINFO_FAULT=op:dtype:hang|crash[,…] makes a worker hang
(sleep) or crash (SIGSEGV) on those pairs; it is read in workers only.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import signal
import time
import traceback
import warnings
from collections import Counter, deque
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

DTYPES = {
    "f32": torch.float32,
    "f64": torch.float64,
    "f16": torch.float16,
    "bf16": torch.bfloat16,
    "i32": torch.int32,
    "i64": torch.int64,
    "bool": torch.bool,
}
BINS = ("pass", "fallback", "wrong", "error", "unsupported")

# A representative slice for `make test`: elementwise math, comparisons, reductions,
# normalizations, views, matmul, creation, indexing, scans and sorts, pooling.
SLICE = (
    "add sub mul div abs exp log sqrt rsqrt tanh sigmoid sin neg floor remainder "
    "maximum clamp where eq lt logical_and bitwise_and sum mean amax prod var softmax "
    "log_softmax nn.functional.layer_norm nn.functional.gelu nn.functional.relu "
    "reshape permute transpose expand squeeze unsqueeze cat mm bmm addmm full_like "
    "nn.functional.dropout cumsum sort gather index_select scatter_add argmax topk flip "
    "nn.functional.pad.constant nn.functional.embedding nn.functional.max_pool2d"
).split()

FALLBACK_RE = re.compile(r"no lowering covers (\S+)[ ;]")


@dataclass
class Outcome:
    op: str
    dtype: str
    bin: str
    samples: int = 0
    fallbacks: list[str] = field(default_factory=list)
    detail: str = ""


def op_key(info) -> str:
    return info.name + (f".{info.variant_test_name}" if info.variant_test_name else "")


def compile_fn(backend: str):
    if backend == "strata":
        import strata

        return lambda f: strata.compile(f, dynamic=False)
    return lambda f: torch.compile(f, backend=backend, dynamic=False)


def run_one(info, dtype: torch.dtype, device: str, backend: str, max_samples: int) -> Outcome:
    name = op_key(info)
    dname = next(k for k, v in DTYPES.items() if v == dtype)
    try:
        samples = list(info.sample_inputs(device, dtype, requires_grad=False))[:max_samples]
    except Exception as e:
        return Outcome(name, dname, "unsupported", detail=f"no samples: {e}"[:300])
    compile_ = compile_fn(backend)
    fallbacks: set[str] = set()
    compared = 0
    for sample in samples:
        args = (sample.input, *sample.args)
        kwargs = dict(sample.kwargs)
        try:
            torch.manual_seed(0)  # random ops draw from the same generator state in both runs
            want = info.op(*args, **kwargs)
        except Exception as e:
            continue  # eager rejects this sample
        if not _comparable(want):
            continue

        def fn(*a, _op=info.op, _kw=kwargs):
            return _op(*a, **_kw)

        torch._dynamo.reset()
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                torch.manual_seed(0)
                got = compile_(fn)(*args)
        except Exception as e:
            return Outcome(name, dname, "error", compared, sorted(fallbacks), _short(e))
        for w in caught:
            m = FALLBACK_RE.search(str(w.message))
            if m:
                fallbacks.add(m.group(1))
            elif "runs eagerly" in str(w.message) or "kernel interpreter" in str(w.message):
                fallbacks.add(str(w.message)[:120])
        try:
            if info.name in UNINITIALIZED:  # only the shape and dtype mean anything
                _assert_same_metadata(got, want)
            elif _unused_rng_outputs(info, args, kwargs):
                _assert_close_except(got, want, _unused_rng_outputs(info, args, kwargs))
            else:
                _assert_close(got, want)
        except AssertionError as e:
            if not _as_accurate_as_eager(info, args, kwargs, got, want):
                return Outcome(name, dname, "wrong", compared, sorted(fallbacks), str(e)[:500])
        compared += 1
    if compared == 0:
        return Outcome(name, dname, "unsupported", 0, detail="eager raised on every sample")
    return Outcome(name, dname, "fallback" if fallbacks else "pass", compared, sorted(fallbacks))


# Ops whose results are uninitialized memory: eager and compiled agree on metadata only.
UNINITIALIZED = ("empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided")


# Fused attention forwards return their dropout RNG state in outputs 2 and 3; without
# dropout eager leaves those tensors uninitialized (`at::empty`), so only their shape
# and dtype can be compared.
RNG_STATE_OUTPUTS = {
    "torch.ops.aten._flash_attention_forward": (2, 3),
    "torch.ops.aten._efficient_attention_forward": (2, 3),
}


def _unused_rng_outputs(info, args, kwargs) -> tuple[int, ...]:
    outputs = RNG_STATE_OUTPUTS.get(info.name, ())
    if not outputs:
        return ()
    schema = info.op.default._schema if hasattr(info.op, "default") else info.op._schema
    names = [a.name for a in schema.arguments]
    bound = dict(zip(names, args)) | kwargs
    return outputs if bound.get("dropout_p", 0.0) == 0.0 else ()


def _assert_close_except(got: Any, want: Any, metadata_only: tuple[int, ...]) -> None:
    if not isinstance(got, list | tuple) or len(got) != len(want):
        raise AssertionError(f"expected {len(want)} results, got {type(got).__name__}")
    for i, (g, w) in enumerate(zip(got, want)):
        if i in metadata_only:
            _assert_same_metadata(g, w)
        else:
            _assert_close(g, w)


def _assert_same_metadata(got: Any, want: Any) -> None:
    for g, w in zip(_leaves(got), _leaves(want)):
        if not (isinstance(g, torch.Tensor) and g.shape == w.shape and g.dtype == w.dtype):
            raise AssertionError(f"expected a tensor of shape {tuple(w.shape)} and dtype {w.dtype}")


def _comparable(v: Any) -> bool:
    # Complex results compare too (assert_close takes them; the float64 judge reads
    # their real and imaginary parts).
    leaves = v if isinstance(v, list | tuple) else [v]
    return all(isinstance(x, torch.Tensor | int | float | bool | None) for x in leaves)


def _assert_close(got: Any, want: Any) -> None:
    if isinstance(want, list | tuple):
        if not isinstance(got, list | tuple) or len(got) != len(want):
            raise AssertionError(f"expected {len(want)} results, got {type(got).__name__}")
        for g, w in zip(got, want):
            _assert_close(g, w)
        return
    torch.testing.assert_close(got, want, equal_nan=True, check_stride=False)


def _as_accurate_as_eager(info, args, kwargs, got, want) -> bool:
    """Whether every floating element of `got` is within tolerance of being as close to
    the float64 result as eager's."""
    try:
        ref = info.op(*_to_f64(args), **_to_f64(kwargs))
    except Exception:
        return False
    pairs = list(zip(_leaves(got), _leaves(want), _leaves(ref)))
    if not pairs:
        return False
    for g, w, r in pairs:
        if isinstance(g, torch.Tensor) and isinstance(w, torch.Tensor) and isinstance(r, torch.Tensor):
            if g.is_complex() and w.is_complex() and r.is_complex():  # judged as (real, imag) pairs
                g, w, r = (torch.view_as_real(t.resolve_conj()) for t in (g, w, r))
        if not (isinstance(g, torch.Tensor) and g.is_floating_point() and isinstance(r, torch.Tensor)):
            return False
        if g.shape != w.shape:
            return False
        rtol, atol = torch.testing._comparison.default_tolerances(w)
        g, w, r = g.double(), w.double(), r.double().reshape(w.shape)
        slack = atol + rtol * r.abs()
        err_g, err_w = (g - r).abs(), (w - r).abs()
        same_nan = g.isnan() == r.isnan()
        ok = (err_g <= err_w + slack) | (g.isnan() & w.isnan()) | (g == w)
        if not bool((ok & same_nan).all()):
            return False
    return True


def _to_f64(v: Any) -> Any:
    if isinstance(v, torch.Tensor) and v.is_floating_point():
        return v.double()
    if isinstance(v, torch.Tensor) and v.is_complex():
        return v.to(torch.complex128)
    if isinstance(v, torch.dtype) and v.is_floating_point and not v.is_complex:
        return torch.float64  # a dtype argument (e.g. _softmax_backward_data's input_dtype)
    if isinstance(v, torch.dtype) and v.is_complex:
        return torch.complex128
    if isinstance(v, list | tuple):
        return type(v)(_to_f64(x) for x in v)
    if isinstance(v, dict):
        return {k: _to_f64(x) for k, x in v.items()}
    return v


def _leaves(v: Any) -> list:
    return list(v) if isinstance(v, list | tuple) else [v]


def _short(e: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(e), e)).strip()
    return text.splitlines()[-1][:300] if text else type(e).__name__


def select(op_names: list[str] | None, use_slice: bool):
    from torch.testing._internal.common_methods_invocations import op_db

    wanted = set(SLICE) if use_slice else (set(op_names) if op_names else None)
    return [o for o in op_db if wanted is None or o.name in wanted or op_key(o) in wanted]


def shard(infos: list, spec: str) -> list:
    """`I/N`: every N-th OpInfo of `infos`, starting at the I-th (0-based)."""
    i, n = (int(x) for x in spec.split("/"))
    if not 0 <= i < n:
        raise ValueError(f"--shard {spec}: want I/N with 0 <= I < N")
    return infos[i::n]


def sweep(
    infos,
    dtypes: list[str],
    device: str,
    backend: str,
    max_samples: int,
    log=print,
    jobs: int | None = None,
    timeout: float = 300.0,
    deadline: float | None = None,
) -> list[Outcome]:
    """Each (OpInfo, dtype) pair of `infos` × `dtypes` that the OpInfo supports on
    `device`, in that order. With `jobs` (>= 1; 0 = one per core) the pairs run in that
    many worker processes under a `timeout` per pair (see `_pool`); after `deadline`
    seconds no new OpInfo starts, and the pairs not run are left out of the result.

    With jobs=None they run here, in this process, with no timeout: the command line
    always uses workers, but in-process callers (tests/test_opinfo_slice.py,
    tools/core_coverage.py) keep the cheaper path (no worker start-up, no pickling) and
    the old behaviour; pdb also works there."""
    tasks = [(info, [d for d in dtypes if DTYPES[d] in info.supported_dtypes(device)]) for info in infos]
    if jobs is not None:
        return _pool(tasks, device, backend, max_samples, jobs or os.cpu_count() or 1, timeout, log, deadline)
    out = []
    for info, ds in tasks:
        for d in ds:
            start = time.perf_counter()
            o = run_one(info, DTYPES[d], device, backend, max_samples)
            out.append(o)
            log(_line(o, time.perf_counter() - start))
    return out


def _line(o: Outcome, seconds: float) -> str:
    return f"{o.op:40} {o.dtype:5} {o.bin:12} {seconds:5.1f}s {o.detail[:100] or ', '.join(o.fallbacks)[:100]}"


# A worker has this long to import torch, strata and op_db and warm up before its first pair.
STARTUP_TIMEOUT = 600.0


def _faults() -> dict[tuple[str, str], str]:
    """STRATA_OPINFO_FAULT=op:dtype:hang|crash,… — a test hook for the worker pool."""
    spec = os.environ.get("STRATA_OPINFO_FAULT", "")
    return {tuple(f.rsplit(":", 2)[:2]): f.rsplit(":", 2)[2] for f in spec.split(",") if f.count(":") >= 2}


def _worker(conn, device: str, backend: str, max_samples: int, one_thread: bool) -> None:
    """A worker process: receives (op_db index, [dtype names]) tasks, or None to stop;
    sends ("start", dtype) before each pair and ("done", Outcome, seconds) after it."""
    if one_thread:  # N workers on N cores: no intra-op thread pools fighting over them
        torch.set_num_threads(1)
        if backend == "inductor":
            from torch._inductor import config as inductor_config

            inductor_config.compile_threads = 1
    from torch.testing._internal.common_methods_invocations import op_db

    try:  # one-time imports and set-up, so that they don't count against the first pair
        compile_fn(backend)(lambda x: x + 1)(torch.ones(2, device=device))
    except Exception:
        pass  # the pairs will say what is wrong
    torch._dynamo.reset()
    faults = _faults()
    while True:
        try:
            task = conn.recv()
        except EOFError:  # the parent went away
            return
        if task is None:
            return
        index, dtypes = task
        info = op_db[index]
        for d in dtypes:
            conn.send(("start", d))
            start = time.perf_counter()
            fault = faults.get((op_key(info), d))
            if fault == "hang":
                time.sleep(1e6)
            elif fault == "crash":
                os.kill(os.getpid(), signal.SIGSEGV)
            try:
                o = run_one(info, DTYPES[d], device, backend, max_samples)
            except Exception as e:  # run_one catches what compiling raises; this is a bug in it
                o = Outcome(op_key(info), d, "error", detail=_short(e))
            conn.send(("done", o, time.perf_counter() - start))


@dataclass
class _Worker:
    proc: Any
    conn: Any
    started: bool = False  # it has sent its first "start": imports and warm-up are done
    task: int | None = None  # the index of its task (OpInfo) in the task list
    left: list[str] = field(default_factory=list)  # the task's dtypes not done yet
    since: float = 0.0  # when its current pair (before `started`: the process) began


def _pool(tasks, device, backend, max_samples, jobs: int, timeout: float, log, deadline: float | None = None) -> list[Outcome]:
    """Runs the tasks (OpInfo, [dtype]) in `jobs` spawned worker processes, one OpInfo
    at a time, and returns the outcomes in task order, whatever order they finished in.
    A pair past `timeout` or whose worker dies is an error; the worker is replaced and
    the rest of that OpInfo's dtypes go back to the front of the queue. A worker that
    fails before its first pair (an import error, say) stops the sweep instead: every
    other worker would fail the same way."""
    from torch.testing._internal.common_methods_invocations import op_db

    index = {id(o): i for i, o in enumerate(op_db)}
    foreign = [op_key(info) for info, _ in tasks if id(info) not in index]
    if foreign:
        raise ValueError(f"the worker pool runs OpInfos of op_db only, not {foreign[:5]}")
    queue = deque((t, list(ds)) for t, (_, ds) in enumerate(tasks) if ds)
    done: dict[tuple[int, str], Outcome] = {}
    ctx = multiprocessing.get_context("spawn")
    workers: list[_Worker] = []
    jobs = max(1, min(jobs, len(queue)))
    stop_at = None if deadline is None else time.monotonic() + deadline

    def start_worker() -> _Worker:
        ours, theirs = ctx.Pipe()
        args = (theirs, device, backend, max_samples, jobs > 1)
        proc = ctx.Process(target=_worker, args=args, name="opinfo-worker")
        proc.start()
        theirs.close()
        workers.append(_Worker(proc, ours, since=time.monotonic()))
        return workers[-1]

    def give(w: _Worker) -> None:
        w.task, w.left = queue.popleft()
        w.conn.send((index[id(tasks[w.task][0])], w.left))
        if w.started:
            w.since = time.monotonic()

    def finish(w: _Worker, o: Outcome, seconds: float) -> None:
        done[(w.task, w.left.pop(0))] = o
        log(_line(o, seconds))
        if not w.left:
            w.task = None

    def drop(w: _Worker, why: str) -> None:
        """Ends the worker (killed, or dead already); its pair is an error."""
        seconds = time.monotonic() - w.since
        w.proc.kill()
        w.proc.join()
        w.conn.close()
        workers.remove(w)
        if not w.started:
            raise RuntimeError(f"an OpInfo worker failed before its first pair: {why} (its stderr is above)")
        if w.task is not None:
            if w.left[1:]:
                queue.appendleft((w.task, w.left[1:]))
            finish(w, Outcome(op_key(tasks[w.task][0]), w.left[0], "error", detail=why), seconds)

    try:
        while queue or any(w.task is not None for w in workers):
            if stop_at is not None and queue and time.monotonic() > stop_at:
                log(f"deadline: {len(queue)} OpInfos not started")
                queue.clear()
            for w in workers:
                if w.task is None and queue:
                    give(w)
            while len(workers) < jobs and queue:
                give(start_worker())
            deadlines = [w.since + (timeout if w.started else STARTUP_TIMEOUT) for w in workers if w.task is not None]
            multiprocessing.connection.wait(
                [w.conn for w in workers] + [w.proc.sentinel for w in workers],
                timeout=max(0.0, min(deadlines) - time.monotonic()) if deadlines else None,
            )
            for w in list(workers):
                dead = False
                try:
                    while w.conn.poll():
                        msg = w.conn.recv()
                        if msg[0] == "start":
                            w.started, w.since = True, time.monotonic()
                        else:
                            finish(w, msg[1], msg[2])
                except (EOFError, OSError):
                    dead = True  # its end of the pipe closed: it exited
                if dead or w.proc.exitcode is not None:
                    w.proc.join(timeout=10)
                    drop(w, f"worker died (exit code {w.proc.exitcode})")
                elif w.task is not None and not w.started and time.monotonic() - w.since > STARTUP_TIMEOUT:
                    drop(w, f"no first pair within {STARTUP_TIMEOUT:g} s")
                elif w.task is not None and w.started and time.monotonic() - w.since > timeout:
                    drop(w, f"timed out after {timeout:g} s")
    finally:
        for w in workers:
            try:
                w.conn.send(None)
            except OSError:
                pass
        for w in workers:
            w.proc.join(timeout=10)
            if w.proc.exitcode is None:
                w.proc.kill()
                w.proc.join()
    return [done[(t, d)] for t, (_, ds) in enumerate(tasks) for d in ds if (t, d) in done]


def report(outcomes: list[Outcome], backend: str, device: str, command: str) -> str:
    counts = Counter(o.bin for o in outcomes)
    total = len(outcomes)
    judged = total - counts["unsupported"]
    lines = [
        f"# OpInfo sweep — {backend} on {device}",
        "",
        f"Command: `{command}`",
        "",
        f"{total} (op, dtype) pairs; {judged} that eager supports on these samples.",
        "",
        "| bin | pairs | share of supported |",
        "| --- | ---: | ---: |",
    ]
    for b in BINS:
        share = f"{100 * counts[b] / judged:.1f}%" if judged and b != "unsupported" else ""
        lines.append(f"| {b} | {counts[b]} | {share} |")
    for b, title in (("wrong", "Wrong results"), ("error", "Errors"), ("fallback", "Passed with an eager fallback")):
        rows = [o for o in outcomes if o.bin == b]
        if not rows:
            continue
        lines += ["", f"## {title}", "", "| op | dtype | reason |", "| --- | --- | --- |"]
        for o in rows:
            reason = o.detail if b != "fallback" else ", ".join(o.fallbacks)
            lines.append(f"| {o.op} | {o.dtype} | {reason.replace('|', '/').replace(chr(10), ' ')[:200]} |")
    return "\n".join(lines) + "\n"


def merge(paths: list[str]) -> list[Outcome]:
    """The outcomes of several --shard runs' JSON files as one list, in op_db order (a
    pair found in more than one file counts once)."""
    from torch.testing._internal.common_methods_invocations import op_db

    order = {op_key(o): i for i, o in enumerate(op_db)}
    outcomes, seen = [], set()
    for path in paths:
        with open(path) as f:
            for o in (Outcome(**d) for d in json.load(f)):
                if (o.op, o.dtype) not in seen:
                    seen.add((o.op, o.dtype))
                    outcomes.append(o)
    # stable: each OpInfo's dtypes stay in the order its shard ran them
    return sorted(outcomes, key=lambda o: order.get(o.op, len(order)))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", default="strata", help="strata, inductor, aot_eager, …")
    p.add_argument("--device", default="cpu")
    p.add_argument("--ops", default=None, help="comma-separated OpInfo names")
    p.add_argument("--slice", action="store_true", help="the fixed representative slice")
    p.add_argument("--dtypes", default=",".join(DTYPES))
    p.add_argument("--samples", type=int, default=3, help="sample inputs per (op, dtype)")
    p.add_argument("--out", default=None, help="path prefix for .md and .json")
    p.add_argument("--jobs", type=int, default=1, help="worker processes (0: one per core)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per (op, dtype) before `error`")
    p.add_argument("--deadline", type=float, default=None, help="seconds after which no new OpInfo starts")
    p.add_argument("--shard", default=None, metavar="I/N", help="only every N-th OpInfo, from the I-th (0-based)")
    p.add_argument("--merge", nargs="+", default=None, metavar="JSON", help="combine shards' JSON files; no sweep")
    a = p.parse_args(argv)
    if a.merge:  # --backend and --device only name the report's title here
        outcomes = merge(a.merge)
    else:
        infos = select(a.ops.split(",") if a.ops else None, a.slice)
        if a.shard:
            infos = shard(infos, a.shard)
        outcomes = sweep(infos, a.dtypes.split(","), a.device, a.backend, a.samples, jobs=a.jobs, timeout=a.timeout,
                         deadline=a.deadline)
    command = "python -m strata.tools.opinfo " + " ".join(argv if argv is not None else __import__("sys").argv[1:])
    text = report(outcomes, a.backend, a.device, command.strip())
    if a.out:
        with open(a.out + ".md", "w") as f:
            f.write(text)
        with open(a.out + ".json", "w") as f:
            json.dump([asdict(o) for o in outcomes], f, indent=1)
    print(text)
    return 1 if any(o.bin == "wrong" for o in outcomes) else 0


if __name__ == "__main__":
    # Run main() from the module imported under its own name, so that what the spawned
    # workers pickle (_worker, Outcome) refers to strata.tools.opinfo, not __main__.
    from strata.tools.opinfo import main as _main

    raise SystemExit(_main())
