"""A program run compiled and eagerly, call by call, and where the two differ.

    from strata.testing.differential import run_program
    report = run_program(program)            # a PythonProgram (testing/python_program.py)
    report.mismatches                        # [Mismatch(kind, call, detail)]; [] if they agree
    print(report.describe())

    replay(f, CALLS, dynamic=None)           # what a reproducer script runs: prints each call

The calls run in order on one compiled function (torch.compile with `backend`, strata
by default), each also run eagerly on arguments built afresh. Per call:
- eager raised: the compiled function must raise too; any exception will do (a
  compiled out-of-range index may say RuntimeError where eager says IndexError), but a
  returned value is `missing_exception`;
- eager returned: the compiled function must return as many results, each of the same
  kind (tensor, int, float), dtype and shape, with equal values: bit-equal for ints and
  bools, within the dtype's tolerance for floats, NaN where eager has NaN, or, where a
  float result misses the tolerance, at least as accurate as eager's against the
  program run in float64 (testing/checks.py's rule); and, where eager's result is dense
  but not contiguous (a permutation: a transpose, channels_last), the same strides
  (`check_strides`).

Strata's warnings about eager fallbacks are not mismatches (a fallback is slow, not
wrong); the report counts them. Dynamo's state is reset before and after a program, so
no compiled code or recompile count leaks from one program to the next.
"""

from __future__ import annotations

import linecache
import math
import time
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from strata.testing.closeness import tolerance
from strata.testing.checks import mismatch

KINDS = {
    "wrong_value": "eager and compiled returned different values",
    "missing_exception": "eager raised, the compiled function returned",
    "unexpected_exception": "eager returned, the compiled function raised when run",
    "compile_error": "eager returned, compiling raised (the backend failed on the graph)",
    "wrong_structure": "another number or kind (tensor, int, float) of results",
    "wrong_dtype": "a result of another dtype",
    "wrong_shape": "a result of another shape",
    "wrong_strides": "eager's result is a dense permutation (transposed, channels_last); the compiled one has other strides",
    "crash": "the process running the program died (a segfault, an abort) or hung (testing/fuzz_worker.py)",
}
FLOAT_TOLERANCE = 1e-5  # of Python float results (tensors: testing/capture.py's per dtype)


@dataclass(frozen=True)
class Mismatch:
    kind: str  # one of KINDS
    call: int | None  # which call, from 0 (None: not known, for a crash)
    detail: str
    result: int | None = None  # which result differs, where one does


@dataclass
class Report:
    mismatches: list[Mismatch] = field(default_factory=list)
    calls: int = 0
    eager_raised: int = 0  # calls on which eager raised (the expected outcome then)
    fallbacks: Counter = field(default_factory=Counter)  # strata's warnings: eager_fallback, kernel_interpreter, other
    graphs: int = 0  # graphs Dynamo compiled
    graph_breaks: int = 0
    seconds: float = 0.0
    # Mismatches torch.compile makes before any backend runs: the same kind on the same
    # call under aot_eager (Dynamo and AOTAutograd, no decomposition, no strata), such
    # as an out-of-range gather whose result is unused, which AOTAutograd's dead-code
    # elimination deletes. Counted apart, never hidden: no backend can raise there.
    torch_mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def kinds(self) -> set[str]:
        return {m.kind for m in self.mismatches}

    def describe(self) -> str:
        lines = [f"{'call ' + str(m.call) if m.call is not None else 'a call'}: {m.kind}: {m.detail}" for m in self.mismatches]
        return "\n".join(lines) or "compiled and eager agree"


@dataclass(frozen=True)
class Outcome:
    """What one call gave: a value, or the exception it raised."""

    value: Any = None
    error: Exception | None = None


def run_program(program, **options) -> Report:
    """Runs a PythonProgram's calls; `options` as compare_calls takes them. Where strata
    mismatches, the program runs again under aot_eager, and the mismatches it shares
    with strata move to `torch_mismatches`."""
    def run(**more):
        return compare_calls(
            program.function(),
            program.arguments,
            len(program.calls),
            dynamic=program.dynamic,
            capture_scalar_outputs=program.capture_scalar_outputs,
            **{**options, **more},
        )

    report = run()
    if report.mismatches and options.get("backend", "strata") == "strata":
        shared = {(m.kind, m.call) for m in run(backend="aot_eager", options=None).mismatches}
        report.torch_mismatches = [m for m in report.mismatches if (m.kind, m.call) in shared]
        report.mismatches = [m for m in report.mismatches if (m.kind, m.call) not in shared]
    return report


def compare_calls(
    fn: Callable,
    arguments: Callable[[int], Sequence[Any]],
    calls: int,
    *,
    dynamic: bool | None = None,
    capture_scalar_outputs: bool = False,
    backend: str = "strata",
    options: dict[str, Any] | None = None,
    check_strides: bool = True,
    observe: Callable[[int, Outcome, Outcome, list[Mismatch]], None] | None = None,
) -> Report:
    """Compiles fn once and runs call i on `arguments(i)` (built anew for eager and for
    the compiled function), for i in range(calls); `observe` sees each call's outcomes."""
    from torch._dynamo.utils import counters

    report = Report(calls=calls)
    started = time.perf_counter()
    torch._dynamo.reset()
    counters.clear()
    try:
        # Past its recompile limit Dynamo runs a frame eagerly, silently: that would hide
        # a wrong compiled call, so the limit is above what the calls can need.
        dynamo = torch._dynamo.config.patch(capture_scalar_outputs=capture_scalar_outputs, recompile_limit=max(8, 2 * calls))
        with warnings.catch_warnings(record=True) as caught, dynamo:
            warnings.simplefilter("always")
            if backend == "strata":  # the backend itself: found by name only where strata is pip-installed
                from strata.frontend.backend import make_backend

                compiled = torch.compile(fn, backend=make_backend(None, options), dynamic=dynamic)
            else:
                compiled = torch.compile(fn, backend=backend, dynamic=dynamic)
            for call in range(calls):
                want = _outcome(fn, arguments(call))
                got = _outcome(compiled, arguments(call))
                exact = lambda: fn(*_in_float64(arguments(call)))  # noqa: E731
                found = [Mismatch(*problem) for problem in compare(want, got, check_strides, exact, call)]
                report.eager_raised += want.error is not None
                report.mismatches += found
                if observe is not None:
                    observe(call, want, got, found)
        report.fallbacks.update(k for k in map(_fallback_kind, caught) if k is not None)
        report.graphs = counters["stats"]["unique_graphs"]
        report.graph_breaks = sum(counters["graph_break"].values())
    finally:
        torch._dynamo.reset()
    report.seconds = time.perf_counter() - started
    return report


def replay(fn: Callable, calls: Sequence[Sequence[Any]], **options) -> Report:
    """Runs fn's calls compiled and eagerly (options as compare_calls takes them),
    printing each call's outcomes and mismatches; returns the report."""

    def show(call: int, want: Outcome, got: Outcome, found: list[Mismatch]) -> None:
        print(f"call {call}: {'ok' if not found else ', '.join(m.kind for m in found)}")
        print(f"  eager:    {describe_outcome(want)}")
        print(f"  compiled: {describe_outcome(got)}")
        for m in found:
            print(f"  {m.kind}: {m.detail.splitlines()[0]}")

    report = compare_calls(fn, lambda i: calls[i], len(calls), observe=show, **options)
    fallbacks = ", ".join(f"{n} {k}" for k, n in report.fallbacks.items()) or "none"
    print(f"{len(report.mismatches)} mismatches in {report.calls} calls; graphs {report.graphs}, "
          f"graph breaks {report.graph_breaks}, strata fallbacks: {fallbacks}")
    return report


def compare(
    want: Outcome, got: Outcome, check_strides: bool = True, exact: Callable[[], Any] | None = None, call: int | None = None
) -> list[tuple[str, int | None, str, int | None]]:
    """The (kind, call, detail, result number or None) of each way `got` differs from
    `want`, eager's outcome of the same call. `exact` gives the program's results
    computed in float64, the yardstick of a float result that misses the tolerance."""
    return [(kind, call, detail, result) for kind, detail, result in _differences(want, got, check_strides, exact)]


def _differences(want: Outcome, got: Outcome, check_strides: bool, exact: Callable[[], Any] | None):
    if want.error is not None:
        if got.error is not None:
            return []
        raised = f"{_exception(want.error)}{_site(want.error)}"
        return [("missing_exception", f"eager raised {raised}; compiled returned {describe_outcome(got)}", None)]
    if got.error is not None:
        kind = "compile_error" if isinstance(got.error, torch._dynamo.exc.BackendCompilerFailed) else "unexpected_exception"
        return [(kind, f"compiled raised {_exception(got.error)}; eager returned {describe_outcome(want)}", None)]
    wants, gots = _results(want.value), _results(got.value)
    if len(wants) != len(gots):
        return [("wrong_structure", f"{len(gots)} results instead of {len(wants)}", None)]
    exact = _once(exact) if exact is not None else None
    problems = []
    for i, (w, g) in enumerate(zip(wants, gots)):
        where = f"result {i}" if len(wants) > 1 else "the result"
        if _kind(w) != _kind(g):
            problems.append(("wrong_structure", f"{where} is {_summary(g)}, expected {_summary(w)}", i))
        elif not isinstance(w, torch.Tensor):
            if not _same_number(w, g) and not _as_accurate(w, g, (lambda i=i: _results(exact())[i]) if exact else None):
                problems.append(("wrong_value", f"{where} is {g!r}, expected {w!r}", i))
        elif w.dtype != g.dtype:
            problems.append(("wrong_dtype", f"{where} is {g.dtype}, expected {w.dtype}", i))
        elif w.shape != g.shape:
            problems.append(("wrong_shape", f"{where} has shape {list(g.shape)}, expected {list(w.shape)}", i))
        else:
            yardstick = (lambda i=i: [_results(exact())[i]]) if exact is not None else None
            problem = mismatch([w], [g], yardstick)
            if problem is not None:
                if w.is_floating_point():  # (checks.mismatch names the first one of ints and bools)
                    problem += f"\n{_first_difference(w, g)}"
                problems.append(("wrong_value", f"{where}: {_short(problem)}\n  compiled {_summary(g)}\n  eager    {_summary(w)}", i))
            elif check_strides and not _same_layout(w, g):
                problems.append(("wrong_strides", f"{where} has strides {g.stride()}, expected {w.stride()} (shape {list(w.shape)})", i))
    return problems


def describe_outcome(outcome: Outcome) -> str:
    if outcome.error is not None:
        return f"raised {_exception(outcome.error)}"
    return ", ".join(_summary(r) for r in _results(outcome.value))


def _outcome(fn: Callable, args: Sequence[Any]) -> Outcome:
    try:
        return Outcome(value=fn(*args))
    except Exception as e:
        return Outcome(error=e)


def _results(value: Any) -> list[Any]:
    return list(value) if isinstance(value, tuple | list) else [value]


def _kind(x: Any) -> str:
    return "tensor" if isinstance(x, torch.Tensor) else type(x).__name__


def _same_number(want: Any, got: Any) -> bool:
    if isinstance(want, float):
        return (math.isnan(want) and math.isnan(got)) or math.isclose(want, got, rel_tol=FLOAT_TOLERANCE, abs_tol=FLOAT_TOLERANCE)
    return want == got


def _as_accurate(want: Any, got: Any, exact: Callable[[], Any] | None) -> bool:
    """Whether a Python float result is as close to the program's value in float64 as
    eager's (a sum near 0 of floats added in another order misses any tolerance)."""
    if not isinstance(want, float) or not isinstance(got, float) or exact is None:
        return False
    try:
        r = float(exact())
    except Exception:
        return False
    return abs(got - r) <= abs(want - r) + FLOAT_TOLERANCE * (1 + abs(r))


def _same_layout(want: torch.Tensor, got: torch.Tensor) -> bool:
    """Whether got is laid out as want where that matters: want dense but permuted."""
    if want.numel() <= 1 or want.is_contiguous() or not _dense(want):
        return True
    return all(w == g for w, g, n in zip(want.stride(), got.stride(), want.shape) if n > 1)


def _dense(t: torch.Tensor) -> bool:
    """Whether t's elements fill its memory without gaps or overlap, in some order of its dims."""
    expected = 1
    for stride, size in sorted((s, n) for s, n in zip(t.stride(), t.shape) if n > 1):
        if stride != expected:
            return False
        expected *= size
    return True


def _in_float64(args: Sequence[Any]) -> list[Any]:
    """The arguments with floating tensors in float64 (dense layouts kept)."""
    return [a.to(torch.float64) if isinstance(a, torch.Tensor) and a.is_floating_point() else a for a in args]


def _once(f: Callable[[], Any]) -> Callable[[], Any]:
    memo: list = []

    def call():
        if not memo:
            memo.append(f())
        return memo[0]

    return call


def _fallback_kind(w: warnings.WarningMessage) -> str | None:
    message = str(w.message)
    if not message.startswith("strata:"):
        return None
    if "eager kernel" in message or "runs eagerly" in message:
        return "eager_fallback"
    if "kernel interpreter" in message:
        return "kernel_interpreter"
    return "other"


def _summary(x: Any) -> str:
    """A short description of a result: a tensor's dtype, shape, strides where not
    contiguous, and its values when there are few."""
    if not isinstance(x, torch.Tensor):
        return repr(x)
    text = f"{str(x.dtype).removeprefix('torch.')}{list(x.shape)}"
    if not x.is_contiguous():
        text += f" strides {x.stride()}"
    if x.numel() <= 12:
        text += f" {x.tolist()}"
    return text


def _first_difference(want: torch.Tensor, got: torch.Tensor) -> str:
    tol = tolerance(want.dtype)
    where = (~torch.isclose(got, want, rtol=tol, atol=tol, equal_nan=True)).nonzero()
    if len(where) == 0:
        return "no element differs beyond the tolerance"
    at = tuple(where[0].tolist())
    return f"first at {list(at)}: {got[at].item()!r}, eager {want[at].item()!r}"


def _short(problem: str) -> str:
    """checks.mismatch's text without torch's headline and blank lines."""
    lines = [line.strip() for line in problem.splitlines()[1:]]
    return "; ".join(line for line in lines if line and not line.startswith("Tensor-likes"))


def _site(e: BaseException) -> str:
    """ " at `v2 = x0[idx0]`": the statement of a fuzzed program that raised, if it was one."""
    tb, line = e.__traceback__, ""
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if name.startswith("<fuzzed program"):
            line = linecache.getline(name, tb.tb_lineno).strip()
        tb = tb.tb_next
    return f" at `{line}`" if line else ""


def _exception(e: Exception) -> str:
    """The exception's type and first line; for a backend's failure, the inner
    exception's (Dynamo's own first line only says which backend raised)."""
    inner = getattr(e, "inner_exception", None)
    if isinstance(e, torch._dynamo.exc.BackendCompilerFailed) and inner is not None:
        return f"{type(e).__name__} ({_exception(inner)})"
    lines = [line for line in str(e).strip().splitlines() if line.strip()]
    return f"{type(e).__name__}: {(lines[0] if lines else '')[:300]}"
