"""The checks of the property tests, as functions that return what went wrong (None
when nothing did); `strata-opt --check-values` / `--check-codegen` call the same
functions, so that a failing example reproduces on the command line.

- `check_values(before, after, spec)`: a pass kept the values. Both modules run in
  the reference interpreters (runtime/interpreters/) on the inputs `spec` makes.
- `check_codegen(module, codegen, spec)`: every kernel a kernel.program launches gives,
  compiled by `codegen`, what the kernel interpreter gives on the same buffers.
- `check_round_trip(module)`: the module prints and parses back, in both forms.

Values agree within the tolerance of their dtype (testing/capture.py's
`assert_close`): bit-equal for integers and bools, NaN equal to NaN. A floating result
that misses it still agrees when it is as accurate as the reference level's own result,
both measured against the reference's program computed in float64 (testing/float64.py);
an integer or bool result that differs still agrees where it equals that program's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from io import StringIO
from typing import Any

import torch
from xdsl.dialects.builtin import ModuleOp
from xdsl.interpreter import Interpreter
from xdsl.printer import Printer

from strata.dialects import kernel as kd
from strata.runtime.interpreters import interpret_module, run_kernel, run_program
from strata.runtime.interpreters.program import interpret_kernel
from strata.testing.closeness import assert_close, tolerance
from strata.testing.float64 import as_accurate, as_float64, in_float64, worst_error
from strata.testing.inputs import InputSpec, make_inputs, signature_of


def mismatch(want: Sequence[Any], got: Sequence[Any], exact: Callable[[], Sequence[Any]] | None = None) -> str | None:
    """How `got` differs from `want` beyond the tolerance, or None. `exact` computes,
    when a floating result needs it, what the program that gave `want` gives in float64:
    a result as accurate as `want` against it agrees."""
    exact = _once(exact) if exact is not None else None
    if len(want) != len(got):
        return f"{len(got)} results instead of {len(want)}"
    for i, (w, g) in enumerate(zip(want, got)):
        if not isinstance(w, torch.Tensor) or not isinstance(g, torch.Tensor):
            if w != g:
                return f"result {i} is {g!r}, expected {w!r}"
            continue
        if (w.dtype, w.shape) != (g.dtype, g.shape):
            return f"result {i} is {_describe(g)}, expected {_describe(w)}"
        try:
            assert_close([w], [g])
        except AssertionError as e:
            e = str(e) or _discrete_difference(w, g)
            if exact is not None:
                judged = _judged_in_float64(i, w, g, exact)
                if judged is None:
                    continue
                e = f"{e}\n{judged}"
            return f"result {i} ({_describe(w)}) differs:\n{_indent(e)}"
    return None


def _discrete_difference(want: torch.Tensor, got: torch.Tensor) -> str:
    differ = (want != got).nonzero()
    first = tuple(differ[0].tolist())
    return f"{len(differ)} of {want.numel()} elements differ; at {list(first)}: {got[first].item()!r}, expected {want[first].item()!r}"


def _judged_in_float64(i: int, want: torch.Tensor, got: torch.Tensor, exact: Callable[[], Sequence[Any]]) -> str | None:
    """None if result i, `got`, is as accurate as `want` against the float64 program's;
    else why not. A floating result: its error is at most the reference's (as_accurate).
    An integer or bool result: it differs from `want` only where it is the float64
    program's value (a float a hair from a threshold, a cast to bool of a value near 0
    or a comparison of near-equal values, lands on either side, and the side the exact
    value lands on is right)."""
    try:
        reference = exact()[i]
    except Exception as e:
        return f"(the program in float64, the yardstick of accuracy, fails: {_error(e)})"
    if not want.is_floating_point():
        if bool(((got == want) | (got == reference.reshape(want.shape))).all()):
            return None
        return "and the program in float64 gives neither value there"
    if as_accurate(got, want, reference, tolerance(want.dtype)):
        return None
    return (
        "and it is less accurate than expected: its error against the program in float64 is "
        f"{worst_error(got, reference):.3g}, the reference's {worst_error(want, reference):.3g}"
    )


def _once(f: Callable[[], Any]) -> Callable[[], Any]:
    """f, computed (or failing) on the first call only."""
    memo: list = []

    def call():
        if not memo:
            try:
                memo.append((f(), None))
            except Exception as e:
                memo.append((None, e))
        value, error = memo[0]
        if error is not None:
            raise error
        return value

    return call


def check_values(before: ModuleOp, after: ModuleOp, spec: InputSpec | str) -> str | None:
    """None if `after` computes what `before` does on the inputs of `spec`."""
    spec = InputSpec.parse(spec) if isinstance(spec, str) else spec
    symbols = signature_of(before).symbols
    try:
        want = interpret_module(before, make_inputs(before, spec), symbols)
    except Exception as e:
        return f"the input does not run in the reference interpreter on inputs {spec}: {_error(e)}"
    try:
        got = interpret_module(after, make_inputs(before, spec), symbols)
    except Exception as e:
        return f"the result does not run in the reference interpreter on inputs {spec}: {_error(e)}"
    problem = mismatch(want, got, lambda: interpret_module(in_float64(before), [as_float64(x) for x in make_inputs(before, spec)], symbols))
    return None if problem is None else f"values differ on inputs {spec}: {problem}"


@dataclass
class KernelComparison:
    """A KernelRunner that runs each kernel in the interpreter (whose outputs the
    program goes on with) and compiled by `compile`, and records the first kernel
    whose outputs differ. A kernel the code generator rejects (CodegenError) is
    counted in `rejected`: the runtime runs those in the interpreter."""

    compile: Callable[[kd.FuncOp], Callable[[list, list], None]]
    problem: str | None = None
    launched: int = 0
    rejected: list[str] = field(default_factory=list)

    def __call__(self, interpreter: Interpreter, func: kd.FuncOp, buffers: list[torch.Tensor], symbols: list[int]) -> None:
        from strata.codegen.errors import CodegenError

        n = func.num_inputs.value.data
        mine = [*buffers[:n], *(b.clone() for b in buffers[n:])]
        interpret_kernel(interpreter, func, buffers, symbols)
        if self.problem is not None:
            return
        self.launched += 1
        name = func.sym_name.data
        try:
            self.compile(func)(mine, symbols)
        except CodegenError as e:
            self.rejected.append(f"{name}: {e}")
            return
        except Exception as e:
            self.problem = f"kernel @{name} fails compiled: {_error(e)}"
            return
        problem = mismatch(buffers[n:], mine[n:], lambda: _in_float64(func, buffers, symbols))
        if problem is not None:
            sizes = dict(zip(func.symbol_names, symbols))
            self.problem = f"kernel @{name} (symbols {sizes}) differs from the kernel interpreter: {problem}"


def _in_float64(func: kd.FuncOp, buffers: list[torch.Tensor], symbols: list[int]) -> list[torch.Tensor]:
    """The outputs of `func` computed in float64 on the same inputs."""
    n = func.num_inputs.value.data
    outs = [torch.full_like(b, math.nan, dtype=torch.float64) if b.is_floating_point() else torch.empty_like(b) for b in buffers[n:]]
    run_kernel(in_float64(func), [as_float64(b) for b in buffers[:n]] + outs, symbols)
    return outs


def kernel_compiler(codegen: str) -> Callable[[kd.FuncOp], Callable[[list, list], None]]:
    if codegen == "llvm":
        from strata.codegen.llvm_cpu import compile_kernel

        return compile_kernel
    if codegen == "triton":
        from strata.codegen.triton_gpu import compile_kernel as triton_compile

        return lambda func: triton_compile(func, device="cpu")
    raise ValueError(f"unknown code generator '{codegen}' (llvm or triton)")


def check_codegen(module: ModuleOp, codegen: str, spec: InputSpec | str, comparison: KernelComparison | None = None) -> str | None:
    """None if every kernel the module's kernel.program launches on the inputs of
    `spec` gives, compiled by `codegen` ("llvm", or "triton" in Triton's CPU
    interpreter), what the kernel interpreter gives."""
    spec = InputSpec.parse(spec) if isinstance(spec, str) else spec
    comparison = comparison or KernelComparison(kernel_compiler(codegen))
    try:
        run_program(module, make_inputs(module, spec), run_kernel=comparison, fill=float("nan"))
    except Exception as e:
        return f"the program does not run in the reference interpreter on inputs {spec}: {_error(e)}"
    if comparison.problem is not None:
        return f"{codegen} on inputs {spec}: {comparison.problem}"
    return None


def _describe(t: torch.Tensor) -> str:
    return f"{str(t.dtype).removeprefix('torch.')}{list(t.shape)}"


def _error(e: Exception) -> str:
    """An exception in one paragraph (xDSL's notes, which print the whole module, left out)."""
    return f"{type(e).__name__}: {str(e).strip()}"


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def print_module(module: ModuleOp, generic: bool = False) -> str:
    out = StringIO()
    Printer(stream=out, print_generic_format=generic).print_op(module)
    return out.getvalue()


def check_round_trip(module: ModuleOp) -> str | None:
    """None if `module` prints and parses back to a structurally equal module, in the
    custom and in the generic form, and prints the same text again."""
    from strata.dialects.context import parse_module

    for form, generic in (("custom", False), ("generic", True)):
        text = print_module(module, generic)
        try:
            parsed = parse_module(text)
        except Exception as e:
            return f"the {form} form does not parse back: {_error(e)}\n{text}"
        if not parsed.is_structurally_equivalent(module):
            again = print_module(parsed, generic)
            return f"the {form} form parses to another module:\n{_diff(text, again)}"
        again = print_module(parsed, generic)
        if again != text:
            return f"the {form} form prints differently after a round trip:\n{_diff(text, again)}"
    return None


def _diff(a: str, b: str) -> str:
    import difflib

    return "".join(difflib.unified_diff(a.splitlines(True), b.splitlines(True), "printed", "reprinted"))
