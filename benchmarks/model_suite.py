"""The model suite: eager vs TorchInductor vs strata on the models of benchmarks/models.py,
inference, fp32 and bf16 autocast, in one process. benchmarks/suite.py runs it; alone:

    python benchmarks/model_suite.py --warm-child --device cuda --only bert_base --dtypes fp32

is the second process of the warm-compile check (it prints one JSON line a compile;
without --only it reads "MODEL DTYPE" lines from its standard input).

For each (model, dtype), a cell:

1. the eager result, then each compiler's first call (`torch.compile(f)` to the first
   result, synchronized): the cold compile time, with the disk caches empty at the
   start of the run (suite.py points STRATA_CACHE_DIR, TORCHINDUCTOR_CACHE_DIR and
   TRITON_CACHE_DIR at new folders); a compiler that raises is recorded as failed, with
   its reason, and the cell goes on without it;
2. max |result - eager| and whether it is within the dtype's tolerance (TOLERANCES), or,
   in bf16, as accurate as eager's own result against the model run in fp32
   (AS_ACCURATE_AS_EAGER);
3. peak memory of one more call of each contender (torch.cuda.max_memory_allocated,
   reset before each; weights and inputs included; n/a on CPU);
4. time per call: interleaved rounds (eager, inductor, strata, eager, ...), the median
   of each (CUDA events around `inner` back-to-back calls on a GPU; the host clock on
   a CPU), rounds and inner chosen so that a cell's timing takes about --budget seconds.

A second process (WarmProcess) compiles each cell again with the same cache folders (the
warm compile: strata's kernel cache; Inductor's FX graph, AOTAutograd and Triton
caches) and reports each first call's time: cell by cell while this process goes on
(overlap, the default on a GPU host), or all after the last cell.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import types
import warnings
from dataclasses import asdict, dataclass, field

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models import TAKES_BF16_INPUTS, MissingLibrary, build  # noqa: E402
from timing import interleaved_medians  # noqa: E402

import strata  # noqa: E402

COMPILERS = ("inductor", "strata")
CONTENDERS = ("eager", *COMPILERS)
DTYPES = {"fp32": None, "bf16": torch.bfloat16}
# (rtol, atol) for torch.allclose(result, eager). fp32: 1e-3 for whole models (a
# different summation order in a 768-wide matmul already moves the last digits). bf16:
# torch.testing's rtol for bfloat16 (1.6e-2), with atol raised to the same value, since
# outputs of order 1 computed by two different kernel sequences in bf16 differ by
# about one bf16 ulp (2^-8 relative) and torch's atol of 1e-5 is meant for single ops.
TOLERANCES = {"fp32": (1e-3, 1e-3), "bf16": (1.6e-2, 1.6e-2)}
# A bf16 result outside that tolerance still passes when it is about as accurate as
# eager's own bf16 result: its largest error against the model run in fp32 is at most
# 1.5× eager's (+ 1e-3). Twelve bf16 layers drift from eager's bf16 result by more than
# one ulp in both compilers alike; what matters is that neither is worse than eager.
AS_ACCURATE_AS_EAGER = (1.5, 1e-3)


def tf32_on(device: str) -> bool:
    """Whether fp32 products may round their inputs to TF32 (suite.py --tf32): then an
    fp32 result is judged as a bf16 one is, against the model in full fp32."""
    return device == "cuda" and torch.backends.cuda.matmul.allow_tf32


@contextlib.contextmanager
def tf32_off():
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def as_accurate_as_eager(got: torch.Tensor, want: torch.Tensor, reference: torch.Tensor) -> bool:
    factor, slack = AS_ACCURATE_AS_EAGER
    ref = reference.double()
    err_got = (got.double() - ref).abs().max().item()
    err_eager = (want.double() - ref).abs().max().item()
    return err_got <= factor * err_eager + slack


@dataclass
class Cell:
    model: str
    dtype: str
    shape: str = ""
    ms: dict = field(default_factory=dict)  # contender -> median ms per call
    compile_s: dict = field(default_factory=dict)  # compiler -> cold first call, s
    warm_compile_s: dict = field(default_factory=dict)  # compiler -> first call in a second process, s
    peak_mib: dict = field(default_factory=dict)  # contender -> MiB (None on CPU)
    max_err: dict = field(default_factory=dict)  # compiler -> max |result - eager|
    ok: dict = field(default_factory=dict)  # compiler -> within TOLERANCES
    failed: dict = field(default_factory=dict)  # contender -> reason
    graphs: dict = field(default_factory=dict)  # compiler -> graphs Dynamo handed it
    strata_notes: list = field(default_factory=list)  # eager fallbacks, interpreted kernels
    strata_warm_cache_writes: int | None = None  # kernels the warm process had to generate
    rounds: int = 0
    inner: int = 0
    skipped: str | None = None  # why the cell did not run (a missing library)

    def speedup(self, contender: str) -> float | None:
        """Eager time over the contender's time."""
        if self.ms.get(contender) and self.ms.get("eager"):
            return self.ms["eager"] / self.ms[contender]
        return None

    @property
    def strata_vs_inductor(self) -> float | None:
        """Inductor's time over strata's (above 1: strata is faster)."""
        if self.ms.get("strata") and self.ms.get("inductor"):
            return self.ms["inductor"] / self.ms["strata"]
        return None

    def as_json(self) -> dict:
        out = asdict(self)
        out["speedup_over_eager"] = {c: self.speedup(c) for c in COMPILERS}
        out["strata_vs_inductor"] = self.strata_vs_inductor
        return out


# ---------------------------------------------------------------- pieces of a cell
def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def entry_point(module, dtype: str, device: str, tag: str | None = None):
    """The function every contender runs: the module, under autocast for bf16. Each
    call returns a new function object with a code object of its own, because Dynamo
    keeps compiled code per code object and each compiler must keep its own. `tag`
    names it (entry_<tag>) the same in every process, as a Dynamo-level cache, which
    keys a function by its name, needs; without one, a counter does."""
    autocast = DTYPES[dtype]
    if autocast is None:
        def entry(*args):
            return module(*args)
    else:
        def entry(*args):
            with torch.autocast(device, dtype=autocast):
                return module(*args)
    entry_point.count = getattr(entry_point, "count", 0) + 1
    code = entry.__code__.replace(co_name=f"{entry.__name__}_{tag or entry_point.count}")
    return types.FunctionType(code, entry.__globals__, code.co_name, entry.__defaults__, entry.__closure__)


def cell_inputs(case, dtype: str) -> tuple:
    if dtype == "bf16" and case.name in TAKES_BF16_INPUTS:
        return tuple(x.to(torch.bfloat16) if x.is_floating_point() else x for x in case.inputs)
    return case.inputs


# The warm-compile process also times Dynamo alone (backend "eager": its graph runs as
# it was captured, nothing compiled): the part of a warm compile no backend can skip.
WARM_COMPILERS = ("dynamo", *COMPILERS)


def compile_with(compiler: str, fn):
    mode = suite_mode()
    if compiler == "inductor":
        return torch.compile(fn, backend="inductor", mode=mode)
    if compiler == "dynamo":
        return torch.compile(fn, backend="eager")
    return strata.compile(fn, mode=mode, options=strata_options())


def suite_mode() -> str | None:
    """The torch.compile mode both compilers get: $STRATA_SUITE_MODE (suite.py --mode
    sets it, and the warm-compile process inherits it), else the default."""
    return os.environ.get("STRATA_SUITE_MODE") or None


def allow_tf32_if_asked() -> None:
    """fp32 products and convolutions may use TF32 where $STRATA_SUITE_TF32 is 1
    (suite.py --tf32 sets it, and the warm-compile process inherits it): what Inductor's
    warning tells users to set, for eager and both compilers alike."""
    if os.environ.get("STRATA_SUITE_TF32") == "1":
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True


allow_tf32_if_asked()


def strata_options() -> dict:
    """strata's options in this suite: $STRATA_SUITE_OPTIONS (JSON; suite.py
    --strata-options sets it, and the warm-compile process inherits it), else none."""
    return json.loads(os.environ.get("STRATA_SUITE_OPTIONS") or "{}")


def first_call(compiler: str, fn, inputs: tuple, device: str, after=None):
    """(compiled fn, its first result, seconds, graphs compiled, strata's warnings).
    after(result), if given, runs inside the timed region (train_suite.py: the backward)."""
    from torch._dynamo.utils import counters

    graphs_before = counters["stats"]["unique_graphs"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        start = time.perf_counter()
        compiled = compile_with(compiler, fn)
        out = compiled(*inputs)
        if after is not None:
            after(out)
        sync(device)
        seconds = time.perf_counter() - start
    notes = sorted({_short_note(str(w.message)) for w in caught if str(w.message).startswith("strata:")})
    return compiled, out, seconds, counters["stats"]["unique_graphs"] - graphs_before, notes


def _short_note(message: str) -> str:
    """strata's warning, shortened: `eager op aten::embedding`, `eager graph: ...`."""
    if "no lowering covers " in message:
        return "eager op " + message.split("no lowering covers ", 1)[1].split(" ", 1)[0]
    if "cannot compile kernel" in message:
        return "interpreted kernel: " + message.split("cannot compile kernel ", 1)[1][:160]
    if "this graph runs eagerly" in message:
        return "eager graph: " + message.split("this graph runs eagerly: ", 1)[1][:160]
    return message[len("strata: "):][:160]


def reason(e: BaseException) -> str:
    """One line: the exception's type and the first line of its message."""
    text = str(e).strip().splitlines()
    first = next((line for line in text if line.strip()), "")
    return f"{type(e).__name__}: {first[:300]}"


def peak_mib(fn, device: str) -> float | None:
    if device != "cuda":
        return None
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    out = fn()
    torch.cuda.synchronize()
    del out
    return torch.cuda.max_memory_allocated() / 2**20


def event_medians(fns: dict, rounds: int, inner: int) -> dict[str, float]:
    """Median seconds per call, in interleaved rounds, by CUDA events."""
    samples: dict[str, list[float]] = {k: [] for k in fns}
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(rounds):
        for name, fn in fns.items():
            torch.cuda.synchronize()
            start.record()
            for _ in range(inner):
                fn()
            end.record()
            end.synchronize()
            samples[name].append(start.elapsed_time(end) / 1e3 / inner)
    return {k: statistics.median(v) for k, v in samples.items()}


def timed(fns: dict, device: str, max_rounds: int, budget_s: float) -> tuple[dict[str, float], int, int]:
    """Median seconds per call of each contender; rounds and inner calls sized so that
    one sample is at least ~1 ms (2 ms on a GPU) and the whole at most ~budget_s."""
    once = {}
    for name, fn in fns.items():  # warm up, and a first estimate
        fn()
        sync(device)
        t0 = time.perf_counter()
        fn()
        sync(device)
        once[name] = time.perf_counter() - t0
    fastest, total = min(once.values()), sum(once.values())
    inner = max(1, min(50, math.ceil((2e-3 if device == "cuda" else 1e-3) / max(fastest, 1e-6))))
    rounds = max(5, min(max_rounds, int(budget_s / max(total * inner, 1e-9))))
    if device == "cuda":
        return event_medians(fns, rounds, inner), rounds, inner
    return interleaved_medians(fns, rounds=rounds, inner=inner), rounds, inner


def _release(device: str) -> None:
    torch._dynamo.reset()
    gc.collect()
    if device == "cuda":
        torch.cuda.empty_cache()


# ---------------------------------------------------------------- one cell
def run_cell(name: str, dtype: str, device: str, small: bool, max_rounds: int, budget_s: float, log=print) -> Cell:
    cell = Cell(name, dtype)
    try:
        case = build(name, device, small)
    except MissingLibrary as e:
        cell.skipped = str(e)
        log(f"{name:10} {dtype}: skipped: {e}")
        return cell
    cell.shape = case.shape
    inputs = cell_inputs(case, dtype)
    eager = entry_point(case.module, dtype, device)
    _release(device)
    compiled = {"eager": eager}
    with torch.no_grad():
        want = eager(*inputs)
        reference = None
        if dtype != "fp32" or tf32_on(device):  # the model in full fp32, for the as-accurate-as-eager rule
            fp32_inputs = tuple(x.float() if x.is_floating_point() else x for x in inputs)
            with tf32_off():
                reference = entry_point(case.module, "fp32", device)(*fp32_inputs)
        sync(device)
        for compiler in COMPILERS:
            try:
                fn, got, seconds, graphs, notes = first_call(compiler, entry_point(case.module, dtype, device, f"{compiler}_{case.name}_{dtype}"), inputs, device)
            except Exception as e:
                cell.failed[compiler] = reason(e)
                log(f"{name:10} {dtype}: {compiler} failed: {cell.failed[compiler]}")
                gc.collect()  # what the failed compile left (no Dynamo reset: the other compiler's code stays)
                if device == "cuda":
                    torch.cuda.empty_cache()
                continue
            compiled[compiler] = fn
            cell.compile_s[compiler], cell.graphs[compiler] = seconds, graphs
            if compiler == "strata":
                cell.strata_notes = notes
            if not isinstance(got, torch.Tensor) or got.shape != want.shape:
                cell.ok[compiler] = False
                cell.max_err[compiler] = float("nan")
                continue
            rtol, atol = TOLERANCES[dtype]
            cell.max_err[compiler] = (got.double() - want.double()).abs().max().item() if got.numel() else 0.0
            cell.ok[compiler] = bool(torch.allclose(got.float(), want.float(), rtol=rtol, atol=atol, equal_nan=True))
            if not cell.ok[compiler] and reference is not None:
                cell.ok[compiler] = as_accurate_as_eager(got, want, reference)
            del got
        del want, reference
        for contender, fn in list(compiled.items()):
            try:
                cell.peak_mib[contender] = peak_mib(lambda fn=fn: fn(*inputs), device)
            except Exception as e:  # out of memory, or a compiled call that fails after its first
                cell.failed[contender] = reason(e)
                del compiled[contender]
                gc.collect()
                if device == "cuda":
                    torch.cuda.empty_cache()
        fns = {c: (lambda fn=fn: fn(*inputs)) for c, fn in compiled.items()}
        try:
            times, cell.rounds, cell.inner = timed(fns, device, max_rounds, budget_s)
            cell.ms = {c: t * 1e3 for c, t in times.items()}
        except Exception as e:
            cell.failed.setdefault("timing", reason(e))
    del compiled, fns
    _release(device)
    log(summary_line(cell))
    return cell


def summary_line(cell: Cell) -> str:
    def ms(c):
        return f"{cell.ms[c]:8.3f}" if c in cell.ms else "  failed"

    parts = [f"{cell.model:10} {cell.dtype}  eager {ms('eager')} ms  inductor {ms('inductor')}  strata {ms('strata')}"]
    for c in COMPILERS:
        s = cell.speedup(c)
        parts.append(f"{c} x{s:.2f}" if s else f"{c} -")
    r = cell.strata_vs_inductor
    parts.append(f"strata/inductor x{r:.2f}" if r else "strata/inductor -")
    parts.append("compile " + " / ".join(f"{cell.compile_s[c]:.1f}" if c in cell.compile_s else "-" for c in COMPILERS) + " s")
    parts.append("err " + " / ".join(
        f"{cell.max_err[c]:.1e}{'' if cell.ok[c] else ' WRONG'}" if c in cell.max_err else "-" for c in COMPILERS))
    return "  ".join(parts)


def warm_up_compilers(device: str) -> None:
    """Pays each compiler's one-time imports (and Inductor's worker pool) on a toy
    function, so that the first model's cold compile does not include them."""
    toy = torch.randn(8, 8, device=device)
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for compiler in COMPILERS:
            torch._dynamo.reset()
            compile_with(compiler, lambda t: (t * 2).sum(-1))(toy)
    _release(device)


def configure_dynamo() -> None:
    # Many cells compile in one process: never fall back to eager for having compiled
    # one code object too often.
    torch._dynamo.config.cache_size_limit = max(torch._dynamo.config.cache_size_limit, 64)
    if hasattr(torch._dynamo.config, "accumulated_cache_size_limit"):
        torch._dynamo.config.accumulated_cache_size_limit = max(torch._dynamo.config.accumulated_cache_size_limit, 1024)


def run(models: list[str], dtypes: list[str], device: str, small: bool, max_rounds: int, budget_s: float, log=print,
        stop_at: float | None = None, after_cell=None, cell_fn=None) -> list[Cell]:
    """Every (model, dtype) cell in turn; none is started after time.perf_counter()
    passes stop_at (those are recorded as not run). after_cell(cells) after each.
    cell_fn: what runs a cell, with run_cell's arguments (default run_cell)."""
    configure_dynamo()
    warm_up_compilers(device)
    cells = []
    for name in models:
        for dtype in dtypes:
            start = time.perf_counter()
            if stop_at is not None and start > stop_at:
                cells.append(Cell(name, dtype, skipped="not run: the run's --deadline was near"))
                log(f"{name:10} {dtype}: not run (--deadline)")
            else:
                cells.append((cell_fn or run_cell)(name, dtype, device, small, max_rounds, budget_s, log))
                log(f"{'':10} ({time.perf_counter() - start:.1f} s for the cell)")
            if after_cell is not None:
                after_cell(cells)
    return cells


# ---------------------------------------------------------------- the warm compile, a second process
class WarmProcess:
    """The second process of the warm-compile check, fed one cell at a time: it compiles
    each cell again with this process's cache folders (inherited through the
    environment) and reports each compiler's first-call time.

    With overlap, cells are handed over as soon as they have run, so the second process
    works while this one goes on with the next cell (on a GPU host its compiles take
    other cores; its one call per compile adds little GPU time beside this process's
    timing); otherwise they are handed over all at once by finish()."""

    def __init__(self, device: str, small: bool, overlap: bool):
        self.cmd = [sys.executable, os.path.abspath(__file__), "--warm-child", "--device", device] + (["--small"] if small else [])
        self.overlap, self.pending, self.results = overlap, [], []
        self.proc = None
        if overlap:  # its imports and first compiles now, beside this process's first cell
            self._start()

    def _start(self) -> None:
        self.started = time.perf_counter()
        self.stderr = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, text=True, bufsize=1)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            if line.startswith("{"):
                self.results.append(json.loads(line))

    def _send(self, cells: list[Cell]) -> None:
        try:
            for c in cells:
                self.proc.stdin.write(f"{c.model} {c.dtype}\n")
            self.proc.stdin.flush()
        except OSError:  # the process has ended; finish() says how
            pass

    def submit(self, cell: Cell) -> None:
        if cell.skipped is not None:
            return
        if self.overlap:
            self._send([cell])
        else:
            self.pending.append(cell)

    def finish(self, cells: list[Cell], timeout_s: float, log=print) -> float:
        """Waits (at most timeout_s) for every cell handed over; fills the cells'
        warm_compile_s. Returns the seconds since the process started."""
        start = time.perf_counter()
        if self.proc is None:
            if not self.pending:
                return 0.0
            self._start()
        self._send(self.pending)
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=max(1.0, timeout_s))
            note = "" if self.proc.returncode == 0 else f"exit status {self.proc.returncode}"
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            note = f"stopped after {timeout_s:.0f} s (--deadline or --warm-timeout)"
        self.reader.join(timeout=10)
        if note:
            self.stderr.seek(0)
            log(f"warm-compile process: {note}: {self.stderr.read().strip()[-1500:]}")
        by_key = {(c.model, c.dtype): c for c in cells}
        for r in self.results:
            cell = by_key.get((r["model"], r["dtype"]))
            if cell is None:
                continue
            cell.warm_compile_s[r["compiler"]] = r.get("seconds")
            if r.get("error"):
                cell.failed[f"warm {r['compiler']}"] = r["error"]
            if r["compiler"] == "strata" and "cache_writes" in r:
                cell.strata_warm_cache_writes = r["cache_writes"]
        log(f"warm compiles: {len(self.results)} in {time.perf_counter() - self.started:.0f} s "
            f"({time.perf_counter() - start:.0f} s after the last cell)")
        return time.perf_counter() - self.started


def warm_child(todo, device: str, small: bool) -> None:
    """Compiles each (model, dtype) of todo (an iterable, read as it comes) with each
    compiler, printing one JSON line a compile."""
    from strata.runtime import cache

    configure_dynamo()
    warm_up_compilers(device)
    for name, dtype in todo:
        try:
            case = build(name, device, small)
        except MissingLibrary:
            continue
        inputs = cell_inputs(case, dtype)
        for compiler in WARM_COMPILERS:
            _release(device)
            writes = cache.writes
            record = {"model": name, "dtype": dtype, "compiler": compiler}
            try:
                with torch.no_grad(), _profiled(f"warm_{name}_{dtype}_{compiler}"):
                    _, out, seconds, _, _ = first_call(compiler, entry_point(case.module, dtype, device, f"{compiler}_{case.name}_{dtype}"), inputs, device)
                del out
                record["seconds"] = seconds
            except Exception as e:
                record["seconds"], record["error"] = None, reason(e)
            if compiler == "strata":
                record["cache_writes"] = cache.writes - writes
            print(json.dumps(record), flush=True)
        del case, inputs
        _release(device)


@contextlib.contextmanager
def _profiled(name: str):
    """A cProfile of the block, written to $STRATA_SUITE_PROFILE_DIR/<name>.prof where
    that is set (where a warm compile's time goes, in the suite's own process)."""
    folder = os.environ.get("STRATA_SUITE_PROFILE_DIR")
    if not folder:
        yield
        return
    import cProfile

    profile = cProfile.Profile()
    profile.enable()
    try:
        yield
    finally:
        profile.disable()
        os.makedirs(folder, exist_ok=True)
        profile.dump_stats(os.path.join(folder, f"{name}.prof"))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--warm-child", action="store_true", required=True)
    p.add_argument("--device", default="cuda")
    p.add_argument("--only", default=None, help="comma-separated models (default: read 'MODEL DTYPE' lines from stdin)")
    p.add_argument("--dtypes", default=",".join(DTYPES))
    p.add_argument("--small", action="store_true")
    a = p.parse_args()
    warnings.simplefilter("ignore")
    if a.only:
        todo = [(m, d) for m in a.only.split(",") for d in a.dtypes.split(",")]
    else:
        todo = (tuple(line.split()) for line in sys.stdin if line.strip())
    warm_child(todo, a.device, a.small)


if __name__ == "__main__":
    # Run as the module the suite imports, not as __main__: the entry points' names
    # (model_suite.entry_point.<locals>.entry) are part of what a Dynamo-level cache
    # keys on, and must read the same here as in the suite's own process.
    import model_suite

    model_suite.main()
