"""The tutorial docs/writing-a-pass.md, run: its code blocks are extracted and each is
checked as the comment above it says, so that what a reader pastes works as shown.

`<!-- test: KIND [ARG] -->` precedes every fenced block:
- `file PATH`: a file the reader creates. The pass becomes the module
  strata.passes.fold_neutral_elements (registered by the `registry` blocks, with
  PASSES patched for these tests only); a FileCheck test's RUN lines are run
  (strata-opt in this process, filecheck as a command); /tmp/mul.mlir is an input.
- `registry loader`, `registry entry`, `pass-inputs entry`: what the reader adds to
  passes/registry.py and tests/test_properties.py.
- `run`: shell commands, each run or checked (a pytest `-k` by the tests it selects).
- `python`: run as is; what it prints must agree with the text after it.
- `property`: tests for tests/test_properties.py, run against the pass; `mistake`: an
  edit that breaks the pass, which they must catch; `failure`: the failure report,
  whose program must show the mistake.
- `same-as PATH`: text found verbatim in PATH; `shown (why)`: not run.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import runpy
import shlex
import subprocess
import sys
import tempfile
import textwrap
import types
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import Phase, settings

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "writing-a-pass.md"
PASS = "fold-neutral-elements"
MODULE = "strata.passes.fold_neutral_elements"
MARKED = re.compile(r"<!-- test: (?P<kind>[a-z-]+(?: [a-z-]+)?)(?: (?P<arg>[^\n]*?))? -->\n```(?P<lang>\w*)\n(?P<body>.*?)^```",
                    re.S | re.M)
KINDS = ("file", "registry loader", "registry entry", "pass-inputs entry", "run", "python", "property", "mistake",
         "failure", "same-as", "shown", "break-add")


@dataclass(frozen=True)
class Block:
    kind: str
    arg: str
    lang: str
    body: str
    end: int  # where the block ends in the doc

    def after(self) -> str:
        """The paragraph after the block."""
        return TEXT[self.end:].strip().split("\n\n")[0]


TEXT = DOC.read_text()
BLOCKS = [Block(m["kind"], m["arg"] or "", m["lang"], m["body"], m.end()) for m in MARKED.finditer(TEXT)]


def of(kind: str) -> list[Block]:
    return [b for b in BLOCKS if b.kind == kind]


def one(kind: str, arg: str | None = None) -> Block:
    (block,) = [b for b in of(kind) if arg is None or b.arg == arg]
    return block


def test_every_code_block_is_checked():
    fences = sum(1 for line in TEXT.splitlines() if line.startswith("```")) // 2
    kinds = [b.kind for b in BLOCKS]
    assert len(BLOCKS) == fences, "each code block needs a `<!-- test: ... -->` line above it (see this file's doc)"
    assert set(kinds) <= set(KINDS), set(kinds) - set(KINDS)


# ---------------------------------------------------------------- the reader's checkout
def load_pass(source: str) -> types.ModuleType:
    module = types.ModuleType(MODULE)
    module.__file__ = str(ROOT / "passes" / "fold_neutral_elements.py")
    sys.modules[MODULE] = module  # a dataclass looks its module up while it is made
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module


def mistaken(source: str) -> str:
    """The pass's source with the tutorial's mistake in it."""
    edit = one("mistake").body
    first = edit.splitlines(keepends=True)[0]
    assert source.count(first) == 1, f"the mistake starts at {first.strip()!r}, which the pass must hold once"
    return source.replace(first, edit)


@pytest.fixture(scope="module")
def tutorial(tmp_path_factory):
    """The checkout as the reader leaves it: the pass written and registered, its
    inputs declared, the files of the tutorial written (under a temporary folder)."""
    from strata.passes import registry

    folder = tmp_path_factory.mktemp("tutorial")
    source = one("file", "passes/fold_neutral_elements.py").body
    loader: dict = {}
    exec(one("registry loader").body, loader)
    entry = eval("{" + one("registry entry").body + "}", loader)
    inputs = eval("{" + one("pass-inputs entry").body + "}")
    with pytest.MonkeyPatch.context() as patch:
        patch.setitem(sys.modules, MODULE, None)  # restored afterwards
        module = load_pass(source)
        for name, load in entry.items():
            patch.setitem(registry.PASSES, name, load)
            patch.setitem(registry.get_universe.all_passes, name, load)  # what xdsl-opt reads
        for block in of("file"):
            if block.arg.startswith(("/", "tests/")):
                path = folder / block.arg.lstrip("/")
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(block.body)
        yield types.SimpleNamespace(folder=folder, source=source, module=module, entry=entry, inputs=inputs)


def test_the_registry_blocks_register_the_pass(tutorial):
    from strata.passes.registry import DEFAULT_PIPELINE, PASSES

    assert list(tutorial.entry) == [PASS]
    loaded = tutorial.entry[PASS]()
    assert (loaded.__module__, loaded.__name__, loaded.name) == (MODULE, "FoldNeutralElementsPass", PASS)
    assert set(DEFAULT_PIPELINE) <= set(PASSES)


def test_the_pass_inputs_entry_names_kinds_of_programs(tutorial):
    from tests.test_properties import PREPARE

    assert list(tutorial.inputs) == [PASS]
    assert set(tutorial.inputs[PASS]) <= set(PREPARE)


def test_the_default_pipeline_named_is_the_default():
    from strata.passes.registry import DEFAULT_PIPELINE

    assert f"`{','.join(DEFAULT_PIPELINE)}`" in TEXT


def test_same_as_blocks_are_in_their_files():
    for block in of("same-as"):
        assert block.body in (ROOT / block.arg).read_text(), f"the block shown as {block.arg} is no longer there"


# ---------------------------------------------------------------- commands
def strata_opt(args: list[str], main=None) -> tuple[int, str, str]:
    """strata-opt in this process: exit status, stdout, stderr."""
    from strata.opt import StrataOptMain

    out, err = io.StringIO(), io.StringIO()
    status = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            (main or StrataOptMain)(args=args).run()
        except SystemExit as e:
            status = e.code if isinstance(e.code, int) else 1
    return status, out.getvalue(), err.getvalue()


def in_folder(args: list[str], folder: Path) -> list[str]:
    return [str(folder / a.lstrip("/")) if a == "/tmp/mul.mlir" else a for a in args]


def selected(expression: str) -> set[str]:
    """The tests of tests/test_properties.py (with the tutorial's) that `-k expression` selects."""
    from tests.test_properties import PASS_INPUTS

    ids = [f"{p}-{k}" for p, kinds in {**PASS_INPUTS, PASS: ("prim", "decomposed")}.items() for k in kinds]
    names = re.findall(r"^def (test_\w+)", one("property").body, re.M)
    stub = "import pytest\n\n@pytest.mark.parametrize('case', %r)\ndef test_pass_keeps_values(case):\n    pass\n" % ids
    stub += "".join(f"\ndef {n}():\n    pass\n" for n in names)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "test_properties.py"
        path.write_text(stub)
        run = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                              "-k", expression, str(path)], capture_output=True, text=True, cwd=d, timeout=120)
    return {line.split("::", 1)[1] for line in run.stdout.splitlines() if "::" in line}


def check_command(line: str, tutorial) -> str:
    """Runs or checks one command of a `run` block; returns what it printed, where that
    matters to the text."""
    words = shlex.split(line, comments=True)
    while words and "=" in words[0] and not words[0].startswith("-"):
        words = words[1:]  # HYPOTHESIS_PROFILE=dev
    tool, args = words[0], in_folder(words[1:], tutorial.folder)
    if tool == ".venv/bin/strata-opt":
        status, out, err = strata_opt(args)
        assert status == 0, f"{line}\n{err}"
        if args[-1] == "--help":
            return
        assert "builtin.module" in out, f"{line} printed no module:\n{out}{err}"
    elif tool == ".venv/bin/xdsl-opt":
        from xdsl.xdsl_opt_main import xDSLOptMain

        status, out, err = strata_opt(args, xDSLOptMain)
        assert status == 0 and "builtin.module" in out, f"{line}\n{out}{err}"
    elif tool == ".venv/bin/lit":
        (folder,) = args[1:]
        written = [b.arg for b in of("file") if b.arg.startswith(folder + "/")]
        assert len(written) >= 3, f"{folder} needs three FileCheck tests, the tutorial writes {written}"
    elif words[:4] == [".venv/bin/python", "-m", "pytest", "tests/test_properties.py"]:
        expression = words[words.index("-k") + 1]
        wanted = {f"test_pass_keeps_values[{PASS}-prim]", f"test_pass_keeps_values[{PASS}-decomposed]",
                  *re.findall(r"^def (test_\w+)", one("property").body, re.M)}
        assert selected(expression) == wanted, f"-k {expression!r} selects {selected(expression)}, not {wanted}"
    elif words[:3] == [".venv/bin/python", "-m", "strata.testing.reach"]:
        from strata.testing.reach import main

        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            main(words[3:])
        assert f"{PASS} changed" in out.getvalue()
        return out.getvalue()
    else:
        raise AssertionError(f"no way to check {line!r}: check it here, or mark its block `shown`")


def agrees(printed: str, text: str) -> bool:
    """Whether each share strata.testing.reach printed ("(32%)") is one the text gives,
    give or take 5 points: an edit of the generators moves them a little."""
    said = [int(s) for s in re.findall(r"(?<!\d)(\d+)%", text)]
    return all(any(abs(int(share) - s) <= 5 for s in said) for share in re.findall(r"\((\d+)%\)", printed))


def test_run_blocks(tutorial):
    for block in of("run"):
        out = "".join(check_command(line, tutorial) or "" for line in block.body.splitlines()
                      if line.strip() and not line.startswith("#"))
        assert agrees(out, block.after()), f"{out}\nis not what the text after it says"


def test_filecheck_tests(tutorial):
    for block in of("file"):
        if not block.arg.endswith(".mlir") or not block.arg.startswith("tests/lit/"):
            continue
        path = tutorial.folder / block.arg
        runs = re.findall(r"^// RUN: (.*)$", block.body, re.M)
        assert runs, f"{block.arg} has no RUN line"
        for run in runs:
            opt, _, check = run.replace("%s", str(path)).partition("|")
            words = shlex.split(opt)
            assert words[0] == "strata-opt", run
            status, out, err = strata_opt(words[1:])
            assert status == 0, f"{block.arg}: {run}\n{err}"
            tools = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
            result = subprocess.run(shlex.split(check), input=out, capture_output=True, text=True, timeout=60, env=tools)
            assert result.returncode == 0, f"{block.arg}: {run}\n{result.stderr}\n{out}"


def test_the_break_add_output_is_what_strata_opt_says():
    script = runpy.run_path(str(ROOT / "tests" / "lit" / "Inputs" / "strata_opt_with_breaking_pass.py"))
    example = ROOT / "tests" / "lit" / "opt" / "verify-after-pass.mlir"
    status, _, err = strata_opt([str(example), "-p", "simplify,break-add"], script["WithBreakingPass"])
    assert status == 1
    shown = one("break-add").body.splitlines()
    said = err.replace(str(example), "model.mlir").splitlines()
    assert said[0] == shown[0] and said[1] == shown[1] and said[-1] == shown[-1], err


# ---------------------------------------------------------------- python, properties, the failure
def printed(code: str, folder: Path) -> str:
    out = io.StringIO()
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(code, str(DOC), "exec"), {"__name__": "tutorial"})
    finally:
        os.chdir(cwd)
    return out.getvalue()


def test_python_blocks(tutorial):
    for block in of("python"):
        out = printed(block.body, tutorial.folder)
        assert agrees(out, block.after()), f"the block printed {out!r}; the text after it says otherwise"
        for line in out.splitlines():
            if "," in line and " " not in line:  # a pipeline
                assert f"`{line}`" in block.after(), f"the block printed {line}; the text after it says otherwise"
    (trace,) = (tutorial.folder / "strata_trace").glob("graph_*/1_prim.mlir")
    assert "prim.exp %arg0" in trace.read_text() and "prim.add %0, %arg0" in trace.read_text(), trace.read_text()
    assert "prim.mul" not in trace.read_text() and "prim.sub" not in trace.read_text()


def property_tests() -> dict:
    import tests.test_properties as properties

    namespace = dict(vars(properties))
    exec(compile(one("property").body, str(DOC), "exec"), namespace)
    return {n: f for n, f in namespace.items() if n.startswith("test_") and n not in vars(properties)}


def test_the_properties_pass_and_catch_the_mistake(tutorial):
    from strata.passes import registry

    tests = property_tests()
    assert tests
    for test in tests.values():
        test()
    wrong = load_pass(mistaken(tutorial.source))
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setitem(registry.PASSES, PASS, lambda: wrong.FoldNeutralElementsPass)
            caught = []
            for name, test in tests.items():
                if hasattr(test, "hypothesis"):
                    # no shrinking; the same examples on every run (a random draw once missed the mistake)
                    quick = settings(phases=[Phase.explicit, Phase.generate], derandomize=True, database=None,
                                     max_examples=1000, deadline=None)(test)
                    with pytest.raises(AssertionError, match="changed the program's values") as failure:
                        quick()
                    caught.append(name)
                    assert "reproduce: save the program below as program.mlir and run" in str(failure.value)
            assert caught
    finally:
        load_pass(tutorial.source)


def test_the_failure_shown_is_the_mistake(tutorial):
    from strata.passes import registry

    lines = [line.removeprefix("E").removeprefix("   ") for line in one("failure").body.splitlines()]
    text = textwrap.dedent("\n".join(lines))
    command = re.search(r"^\s*(strata-opt program\.mlir .*)$", text, re.M)[1]
    program = text[text.index("builtin.module {"):]
    path = tutorial.folder / "program.mlir"
    path.write_text(program)
    args = shlex.split(command)[1:]
    args[0] = str(path)
    assert strata_opt(args)[0] == 0, "the right pass agrees on the program shown"
    wrong = load_pass(mistaken(tutorial.source))
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setitem(registry.PASSES, PASS, lambda: wrong.FoldNeutralElementsPass)
            status, _, err = strata_opt(args)
    finally:
        load_pass(tutorial.source)
    assert status == 1 and "values differ" in err, err
    shown = re.search(r"Expected (\S+) but got (\S+)\.", text)
    assert f"Expected {shown[1]} but got {shown[2]}." in err, err
