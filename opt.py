"""strata-opt: runs strata's passes on textual IR, like mlir-opt and xdsl-opt.

    strata-opt file.mlir -p infer-shapes,decompose        # passes by name, in order
    strata-opt file.mlir -p 'pass-a,pass-b{option=value}'  # options, xDSL's syntax
    strata-opt file.mlir --default-pipeline               # what torch.compile runs
    strata-opt file.mlir --print-op-generic               # generic form
    strata-opt file.mlir -p decompose --check-values seed=3,s0=5
    strata-opt kernels.mlir --check-codegen llvm --check-values seed=3

It reads every strata dialect and xDSL's upstream ones, verifies the input and the
IR after every pass, and reports a verifier error with the op, its location in the
input (or the aten op it came from) and the pass after which it appeared.

`--check-values` interprets the input and the result (runtime/interpreters/) on
inputs made from a seed and shape-symbol values (testing/inputs.py) and fails when
they differ beyond the dtype's tolerance; `--check-codegen` runs every launched kernel
of a kernel.program both compiled and in the kernel interpreter. Property tests print
failing examples as such commands.

It is a thin layer on xDSL's `xDSLOptMain`; strata's dialects and passes are also
offered to the stock `xdsl-opt` through the `xdsl.universe` entry point.
"""

from __future__ import annotations

import argparse
import bisect
import os
import re
import sys
import time
from collections.abc import Sequence
from typing import IO, NoReturn

from xdsl.dialects.builtin import FileLineColLoc, IntAttr, ModuleOp, StringAttr
from xdsl.ir import Operation
from xdsl.parser import Parser
from xdsl.passes import ModulePass, PassPipeline
from xdsl.printer import Printer
from xdsl.utils.exceptions import ParseError, VerifyException
from xdsl.xdsl_opt_main import xDSLOptMain

from strata.passes.registry import DEFAULT_PIPELINE, PASSES, get_universe


class StrataOptError(Exception):
    """A failure strata-opt reports in one message, without a traceback."""


class LocatingParser(Parser):
    """xDSL's parser, which also records where each op starts in the input (as a
    `file:line:col` location), so that errors can point there."""

    def __init__(self, ctx, input: str | bytes, name: str = "<unknown>"):
        super().__init__(ctx, input, name)
        text = input.decode("utf-8") if isinstance(input, bytes) else input
        self._name = name
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]

    def parse_operation(self) -> Operation:
        token = self._current_token
        start = token.span.start
        try:
            op = super().parse_operation()
        except VerifyException as e:  # a property of the wrong kind, caught while parsing
            raise ParseError(token.span, f"the op here does not verify: {e}") from None
        if not isinstance(op.location, FileLineColLoc):
            line = bisect.bisect_right(self._line_starts, start)
            col = start - self._line_starts[line - 1] + 1
            op.location = FileLineColLoc(StringAttr(self._name), IntAttr(line), IntAttr(col))
        return op


class StrataOptMain(xDSLOptMain):
    """xdsl-opt with strata's dialects, passes, error reports and value checks."""

    version_format = "strata-opt (strata on xdsl {xdsl_version})"

    def __init__(self, args: Sequence[str] | None = None):
        self._running: str | None = None  # the pass being applied, for error messages
        super().__init__(description="strata's modular optimizer driver", args=args)

    # ------------------------------------------------------------ registration
    def register_all_dialects(self) -> None:
        # xDSL's dialects and every plugin's, strata's among them once installed; then
        # strata's own, in case the entry point is not (a source checkout on PYTHONPATH).
        super().register_all_dialects()
        registered = set(self.ctx.registered_dialect_names)
        for name, factory in get_universe.all_dialects.items():
            if name not in registered:
                self.ctx.register_dialect(name, factory)

    def register_all_passes(self) -> None:
        super().register_all_passes()
        for name, factory in PASSES.items():
            self.register_pass(name, factory)

    def register_all_frontends(self) -> None:
        super().register_all_frontends()

        def parse_mlir(io: IO[bytes]) -> ModuleOp:
            parser = LocatingParser(self.ctx, io.read(), self.get_input_name())
            return parser.parse_module(not self.args.no_implicit_module)

        self.available_frontends["mlir"] = parse_mlir

    def register_all_arguments(self, arg_parser: argparse.ArgumentParser) -> None:
        super().register_all_arguments(arg_parser)
        arg_parser.add_argument(
            "--default-pipeline",
            action="store_true",
            help=f"run the pipeline torch.compile runs: {','.join(DEFAULT_PIPELINE)} (before any -p passes)",
        )
        arg_parser.add_argument(
            "--check-values",
            metavar="SPEC",
            help="interpret the input and the result on inputs made from SPEC "
            "(seed=N[,special=1][,<symbol>=<int>]...) and fail if they differ",
        )
        arg_parser.add_argument(
            "--check-codegen",
            choices=("llvm", "triton"),
            help="run each kernel the result's kernel.program launches compiled by this "
            "code generator and in the kernel interpreter, and fail if they differ "
            "(inputs from --check-values, default seed=0)",
        )
        arg_parser.add_argument(
            "--show-traceback",
            action="store_true",
            help="on a pass failure, show the Python traceback",
        )

    # ------------------------------------------------------------ the pipeline
    def setup_pipeline(self) -> None:
        if self.args.default_pipeline:
            self.args.passes = ",".join([*DEFAULT_PIPELINE, *([self.args.passes] if self.args.passes else [])])
        start = time.perf_counter()

        def callback(previous: ModulePass | None, module: ModuleOp, following: ModulePass | None) -> None:
            nonlocal start
            if self.args.time_passes and previous is not None:
                print(f"Pass {previous.name} took {time.perf_counter() - start} seconds")
            if not self.args.disable_verify:
                verify(module, after=previous.name if previous else None)
            if previous and following and self.args.print_between_passes:
                print(f"IR after {previous.name}:")
                Printer(stream=sys.stdout).print_op(module)
                print("\n\n\n")
            self._running = following.name if following else None
            if self.args.time_passes and following is not None:
                start = time.perf_counter()

        try:
            self.pipeline = PassPipeline.parse_spec(self.available_passes, self.args.passes, callback)
        except Exception as e:  # an unknown pass or a bad option
            fail(f"bad pass pipeline '{self.args.passes}': {e}")

    def apply_passes(self, prog: ModuleOp) -> None:
        before = prog.clone() if self.args.check_values or self.args.check_codegen else None
        try:
            self.pipeline.apply(self.ctx, prog)
        except StrataOptError:
            raise
        except Exception as e:
            if self.args.show_traceback or os.environ.get("STRATA_TRACEBACK"):
                raise
            message = str(e).split("\n\n")[0]
            raise StrataOptError(f"pass '{self._running}' failed: {type(e).__name__}: {message}") from e
        if before is not None:
            from strata.testing.checks import check_codegen, check_values

            spec = self.args.check_values or "seed=0"
            if self.args.check_values:
                report = check_values(before, prog, spec)
                if report:
                    raise StrataOptError(report)
                print(f"strata-opt: values agree on inputs {spec}", file=sys.stderr)
            if self.args.check_codegen:
                report = check_codegen(prog, self.args.check_codegen, spec)
                if report:
                    raise StrataOptError(report)
                print(f"strata-opt: {self.args.check_codegen} kernels agree with the kernel interpreter on inputs {spec}", file=sys.stderr)

    def run(self) -> None:
        try:
            super().run()
        except StrataOptError as e:
            if self.args.verify_diagnostics:
                print(e)  # as xdsl-opt does: the message on stdout, exit status 0
                return
            fail(str(e))
        except ParseError as e:
            fail(str(e), prefix=False)


# ---------------------------------------------------------------- verification
def verify(module: ModuleOp, after: str | None = None) -> None:
    """module.verify(), with a failure reported as the op that does not verify, its
    location and the pass after which it appeared."""
    try:
        module.verify()
    except VerifyException as e:
        op, message = _failing_op(module) or (None, str(e))
        when = f"after pass '{after}'" if after else "in the input"
        raise StrataOptError(f"the IR does not verify {when}\n{describe(op, message)}") from e


def _failing_op(module: ModuleOp) -> tuple[Operation, str] | None:
    for op in module.walk():
        try:
            op.verify(verify_nested_ops=False)
        except VerifyException as e:
            return op, str(e)
    return None


def location_of(op: Operation) -> str:
    loc = op.location
    if isinstance(loc, FileLineColLoc):
        return f"{loc.filename.data}:{loc.line.data}:{loc.column.data}"
    return "<unknown location: an op a pass created>"


def describe(op: Operation | None, message: str) -> str:
    """`file:line:col: error: message`, then the op (generic form, first line) and the
    aten op it came from, where recorded."""
    if op is None:
        return f"error: {message}"
    message = message.removeprefix("Operation does not verify: ").removeprefix(f"{op.name}: ")
    lines = [f"{location_of(op)}: error: '{op.name}' op: {message}"]
    lines.append("  " + _op_text(op))
    source = op.attributes.get("strata.source")
    if isinstance(source, StringAttr):
        lines.append(f"  (from {source.data})")
    return "\n".join(lines)


def _op_text(op: Operation) -> str:
    from io import StringIO

    out = StringIO()
    try:
        Printer(stream=out, print_generic_format=True).print_op(op)
    except Exception:  # an op too broken to print
        return f"{op.name} (unprintable)"
    text = out.getvalue().splitlines()
    return text[0] + (" ..." if len(text) > 1 else "")


def fail(message: str, prefix: bool = True) -> NoReturn:
    print(f"strata-opt: error: {message}" if prefix else message, file=sys.stderr)
    sys.exit(1)


def main(argv: Sequence[str] | None = None) -> None:
    StrataOptMain(args=argv).run()


if __name__ == "__main__":
    main()
