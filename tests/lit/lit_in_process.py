"""A lit test format that runs `strata-opt` inside the lit worker instead of a new process.

Starting `strata-opt` costs about 1.4 s of imports (xDSL's and strata's dialects, sympy;
torch for --check-values) against milliseconds of work, so a suite of RUN lines spent
nearly all its time starting Python. Here each worker imports once and calls
`strata.opt.main(argv)` for every RUN line of the plain form

    [not] strata-opt ARGS [2>&1] [>FILE] [| strata-opt ARGS ...] [| filecheck ARGS]

with stdin, stdout and stderr bound to in-memory streams, the environment set to the
test's, and the exit status taken from SystemExit. `filecheck` stays a process (it
starts in 0.15 s). Every other line (`sed`, `diff`, `%python ...`) runs through lit's own
shell, unchanged. `lit --param strata_in_process=0` runs every line through lit's shell,
as plain ShTest would.
"""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import traceback

import lit.formats
import lit.Test
import lit.TestRunner
from lit import ShUtil

_IN_PROCESS = {"strata-opt"}
_FILECHECK = "filecheck"


class InProcessShTest(lit.formats.ShTest):
    def __init__(self, in_process: bool = True):
        super().__init__(execute_external=False)
        self.in_process = in_process

    def execute(self, test, litConfig):
        if not self.in_process:
            return super().execute(test, litConfig)
        if test.config.unsupported:
            return lit.Test.Result(lit.Test.UNSUPPORTED, "Test is unsupported")
        script = lit.TestRunner.parseIntegratedTestScript(test, require_script=True)
        if isinstance(script, lit.Test.Result):
            return script
        if litConfig.noExecute:
            return lit.Test.Result(lit.Test.PASS)
        tmp_dir, tmp_base = lit.TestRunner.getTempPaths(test)
        substitutions = lit.TestRunner.getDefaultSubstitutions(test, tmp_dir, tmp_base)
        conditions = {feature: True for feature in test.config.available_features}
        script = lit.TestRunner.applySubstitutions(
            script, substitutions, conditions, recursion_limit=test.config.recursiveExpansionLimit
        )
        os.makedirs(os.path.dirname(tmp_base), exist_ok=True)
        exec_dir = os.path.dirname(test.getExecPath())

        log = []
        for line in script:
            pipeline = _plain_pipeline(line)
            if pipeline is None:
                out, err, code, *_ = lit.TestRunner.executeScriptInternal(
                    test, litConfig, tmp_base, [line], exec_dir
                )
                log.append(out + err)
            else:
                code, report = _run_pipeline(pipeline, test.config.environment, exec_dir)
                log.append(f"# RUN: {line}\n{report}")
            if code != 0:
                return lit.Test.Result(lit.Test.FAIL, f"Exit Code: {code}\n\n" + "\n".join(log))
        return lit.Test.Result(lit.Test.PASS, "\n".join(log))


def _plain_pipeline(line: str) -> list[tuple[bool, list[str], list]] | None:
    """The stages (negated, argv, redirects) of a line this format runs itself, or None."""
    if line.lstrip().startswith("%dbg("):  # lit's debug wrapper, where present
        line = line.split(")", 1)[1] if ")" in line else line
    try:
        parsed = ShUtil.ShParser(line, win32Escapes=False, pipefail=True).parse()
    except ValueError:
        return None
    if not isinstance(parsed, ShUtil.Pipeline) or parsed.negate:
        return None
    stages = []
    for number, command in enumerate(parsed.commands):
        args = list(command.args)
        negated = bool(args) and args[0] == "not"
        if negated:
            args = args[1:]
        if not args or any(not isinstance(a, str) for a in args):
            return None
        last = number == len(parsed.commands) - 1
        if args[0] in _IN_PROCESS:
            if not all(_supported(r) for r in command.redirects):
                return None
        elif args[0] == _FILECHECK and last and not negated and not command.redirects:
            pass
        else:
            return None
        stages.append((negated, args, command.redirects))
    return stages


def _supported(redirect) -> bool:
    (op, *fd), target = redirect
    if op == ">&":
        return tuple(fd) == (2,) and target == "1"  # 2>&1
    return op == ">" and tuple(fd) in {(), (1,), (2,)}


def _run_pipeline(stages, environment: dict[str, str], cwd: str) -> tuple[int, str]:
    """Runs the stages in order, each on the previous one's piped output; the status is
    the first failing stage's (lit runs with pipefail)."""
    piped = b""
    status = 0
    report = []
    for negated, args, redirects in stages:
        if args[0] == _FILECHECK:
            done = subprocess.run(args, input=piped, capture_output=True, env=environment, cwd=cwd)
            code, stdout, stderr = done.returncode, done.stdout, done.stderr
            piped = b""
            report.append(_stage_report(args, code, stdout, stderr))
        else:
            targets = _targets(redirects, cwd)
            code, stdout, stderr = _strata_opt(args[1:], piped, environment, cwd, shared=targets[1] == targets[2])
            report.append(_stage_report(args, code, stdout, stderr))
            piped = _route(targets, stdout, stderr)
        if negated:
            code = 1 if code == 0 else 0
        if code != 0 and status == 0:
            status = code
    return status, "".join(report)


def _targets(redirects, cwd: str) -> dict[int, str]:
    """Where stdout (1) and stderr (2) go after a stage's redirects, applied left to
    right as a shell does: `2>&1 >/dev/null` pipes stderr alone."""
    targets = {1: "pipe", 2: "stderr"}
    for (op, *fd), target in redirects:
        if op == ">&":
            targets[fd[0]] = targets[int(target)]
        else:
            targets[fd[0] if fd else 1] = os.path.join(cwd, target)
    return targets


def _route(targets: dict[int, str], stdout: bytes, stderr: bytes) -> bytes:
    """What reaches the pipe; files named by `>` are written. Where both streams share a
    target, `stdout` holds both, interleaved as written, and `stderr` is empty."""
    piped = b""
    written: dict[str, bytes] = {}
    for number, data in ((1, stdout), (2, stderr)):
        target = targets[number]
        if target == "pipe":
            piped += data
        elif target not in ("stderr", "/dev/null"):
            written[target] = written.get(target, b"") + data
    for path, data in written.items():
        with open(path, "wb") as f:
            f.write(data)
    return piped


def _strata_opt(
    argv: list[str], stdin: bytes, environment: dict[str, str], cwd: str, shared: bool
) -> tuple[int, bytes, bytes]:
    """`strata-opt argv` in this process: (exit status, stdout, stderr); with `shared`,
    both streams write into stdout, in order, as into one pipe."""
    from strata.opt import main

    out = io.StringIO()
    err = out if shared else io.StringIO()
    code = 0
    with _process_state(environment, cwd, stdin, out, err):
        try:
            main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
            if isinstance(e.code, str):
                err.write(e.code + "\n")
        except Exception:  # what an uncaught exception does to a process
            traceback.print_exc(file=err)
            code = 1
    return code, out.getvalue().encode(), b"" if shared else err.getvalue().encode()


@contextlib.contextmanager
def _process_state(environment: dict[str, str], cwd: str, stdin: bytes, out: io.StringIO, err: io.StringIO):
    saved_environment = dict(os.environ)
    saved_cwd = os.getcwd()
    saved_streams = sys.stdin, sys.stdout, sys.stderr
    os.environ.clear()
    os.environ.update(environment)
    os.chdir(cwd)
    sys.stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    sys.stdout, sys.stderr = out, err
    try:
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved_streams
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_environment)


def _stage_report(args: list[str], code: int, stdout: bytes, stderr: bytes) -> str:
    text = f"# executed in process: {' '.join(args)}\n" if args[0] in _IN_PROCESS else f"# executed: {' '.join(args)}\n"
    for name, data in (("stdout", stdout), ("stderr", stderr)):
        if data:
            text += f"# .---{name}---\n" + "".join(f"# | {l}\n" for l in data.decode(errors="replace").splitlines())
    if code:
        text += f"# error: command failed with exit status: {code}\n"
    return text
