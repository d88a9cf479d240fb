"""Ahead-of-time packages (strata.aot): export → package → load in a fresh process
that cannot import the compiler → the same results as eager, over shapes in range;
and the errors a server must get instead of a wrong answer."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
import torch
from torch.export import export

import strata.aot
from strata.runtime.package_format import MANIFEST, MANIFEST_DIGEST, PackageError, PackagingError, digest
from strata.testing.aot_models import MLP, cases
from strata.testing.no_compiler import blocking_preamble

ROOT = Path(__file__).resolve().parents[1]


def _package_all(folder: Path, device: str = "cpu") -> dict:
    """Each model of testing/aot_models.py packaged on `device`, with eager's results
    for its checks saved beside it."""
    made = {}
    for case in cases():
        model = case.model.to(device)
        example = tuple(a.to(device) for a in case.example)
        checks = [tuple(a.to(device) for a in args) for args in case.checks]
        with torch.no_grad():
            ep = export(model, example, dynamic_shapes=case.dynamic_shapes)
            expected = [model(*args) for args in checks]
        path = strata.aot.compile_and_package(ep, folder / f"{case.name}.strata")
        torch.save({"checks": checks, "expected": expected}, folder / f"{case.name}.pt")
        made[case.name] = (path, case)
    return made


@pytest.fixture(scope="module")
def packages(tmp_path_factory):
    folder = tmp_path_factory.mktemp("aot")
    return folder, _package_all(folder)


# The loading process: every import a compile would need fails in it, and LLVM's
# optimizer and object emitter raise if called.
_FRESH_PROCESS = blocking_preamble(
    ("xdsl", "triton", "sympy", "torch._dynamo", "torch._inductor", "torch._functorch.aot_autograd",
     "strata.dialects", "strata.passes", "strata.frontend.capture.importer", "strata.frontend.compile_graph",
     "strata.frontend.backend", "strata.frontend.packaging.aot_package", "strata.codegen.llvm_kernel",
     "strata.codegen.llvm_cpu", "strata.codegen.triton_gpu", "strata.runtime.compiled_graph",
     "strata.runtime.package_plan"), "must not be imported to load a package") + textwrap.dedent("""
    import json, sys
    import llvmlite.binding as llvm
    def refuse(*args, **kwargs):
        raise AssertionError("LLVM compiled code while loading a package")
    llvm.TargetMachine.emit_object = refuse
    llvm.create_pass_builder = refuse
    import torch
    import strata.aot
    from strata.codegen import llvm_jit
    llvm_jit.optimize = refuse

    folder, names = sys.argv[1], sys.argv[2:]
    report = {}
    for name in names:
        run = strata.aot.load_package(f"{folder}/{name}.strata")
        data = torch.load(f"{folder}/{name}.pt")
        report[name] = [
            (run(*args) - want).abs().max().item() for args, want in zip(data["checks"], data["expected"])
        ]
    report["modules"] = sorted(m for m in sys.modules if m.startswith(("xdsl", "triton", "sympy", "torch._dynamo")))
    print(json.dumps(report))
""")


def test_packages_run_in_a_process_without_the_compiler(packages):
    folder, made = packages
    report = _run_fresh(folder, made)
    assert report.pop("modules") == []
    for name, errors in report.items():
        assert len(errors) == len(made[name][1].checks)
        assert max(errors) < 1e-4, (name, errors)


def _run_fresh(folder: Path, made: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", _FRESH_PROCESS, str(folder), *made], capture_output=True, text=True,
                         cwd=ROOT.parent, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_cuda_packages_run_in_a_process_without_the_compiler(tmp_path):
    made = _package_all(tmp_path, "cuda")
    report = _run_fresh(tmp_path, made)
    assert report.pop("modules") == []
    for name, errors in report.items():
        assert max(errors) < 1e-3, (name, errors)  # cuDNN and cuBLAS pick their own algorithms
    with zipfile.ZipFile(made["gpt"][0]) as z:
        manifest = json.loads(z.read(MANIFEST))
    assert manifest["device"] == "cuda" and all(k["kind"] == "triton" for k in manifest["kernels"].values())


def test_package_is_a_readable_zip(packages):
    _, made = packages
    path, case = made["gpt"]
    with zipfile.ZipFile(path) as z:
        names = set(z.namelist())
        manifest = json.loads(z.read(MANIFEST))
    assert {MANIFEST, MANIFEST_DIGEST, "program.json"} <= names
    assert set(manifest["files"]) == names - {MANIFEST, MANIFEST_DIGEST}
    assert {w["name"] for w in manifest["weights"]} == set(case.model.state_dict())
    assert all(k["kind"] == "llvm" and k["object"] in names for k in manifest["kernels"].values())
    (idx,) = manifest["inputs"]
    assert idx["name"] == "idx" and idx["dtype"] == "int64" and len(idx["bind"]) == 2  # batch and sequence stay symbolic
    assert sorted(manifest["symbols"].values()) == [[1, 8], [2, 64]]
    assert manifest["torch"] == torch.__version__ and manifest["target"]["cpu"]["features"]


def test_inputs_outside_the_specs_raise_clear_errors(packages):
    _, made = packages
    run = strata.aot.load_package(made["gpt"][0])
    with pytest.raises(PackageError, match=r"input 'idx' dim 1 is 65, outside the range .* \[2, 64\]"):
        run(torch.zeros(2, 65, dtype=torch.long))
    with pytest.raises(PackageError, match="input 'idx' must have dtype int64, not int32"):
        run(torch.zeros(2, 8, dtype=torch.int32))
    with pytest.raises(PackageError, match="must have 2 dims"):
        run(torch.zeros(2, 8, 1, dtype=torch.long))
    cnn = strata.aot.load_package(made["cnn"][0])
    with pytest.raises(PackageError, match=r"input 'x' dim 2 must be 16, not 15"):
        cnn(torch.randn(2, 3, 15, 16))
    with pytest.raises(PackageError, match="structured as"):
        cnn(torch.randn(2, 3, 16, 16), torch.randn(1))


def _rewritten(path: Path, out: Path, edit) -> Path:
    """A copy of the package whose manifest `edit` changed, re-digested: a package as
    another machine or torch would have built it."""
    with zipfile.ZipFile(path) as z:
        files = {n: z.read(n) for n in z.namelist()}
    manifest = json.loads(files[MANIFEST])
    edit(manifest)
    files[MANIFEST] = json.dumps(manifest).encode()
    files[MANIFEST_DIGEST] = digest(files[MANIFEST]).encode()
    with zipfile.ZipFile(out, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return out


def test_a_package_for_another_target_or_torch_refuses_to_load(packages, tmp_path):
    _, made = packages
    path = made["mlp"][0]

    def other_cpu(m):
        m["target"]["cpu"]["features"] += ",+strata-test-feature"
        m["target"]["cpu"]["cpu"] = "future-cpu"

    with pytest.raises(PackageError, match="built for future-cpu and use CPU features this machine .* lacks: strata-test-feature"):
        strata.aot.load_package(_rewritten(path, tmp_path / "cpu.strata", other_cpu))

    def other_torch(m):
        m["torch"] = "1.0.0"

    with pytest.raises(PackageError, match=re.escape(f"built with torch 1.0.0; this is torch {torch.__version__}")):
        strata.aot.load_package(_rewritten(path, tmp_path / "torch.strata", other_torch))


def test_a_damaged_package_is_detected_never_run(packages, tmp_path):
    _, made = packages
    data = made["mlp"][0].read_bytes()
    truncated = tmp_path / "truncated.strata"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(PackageError, match="not a strata package, or it is damaged"):
        strata.aot.load_package(truncated)
    # a weight's bytes altered in place (the zip's own CRC aside: rewritten whole)
    with zipfile.ZipFile(made["mlp"][0]) as z:
        files = {n: z.read(n) for n in z.namelist()}
    weight = next(n for n in files if n.startswith("weights/"))
    files[weight] = bytes([files[weight][0] ^ 1]) + files[weight][1:]
    altered = tmp_path / "altered.strata"
    with zipfile.ZipFile(altered, "w") as z:
        for name, content in files.items():
            z.writestr(name, content)
    with pytest.raises(PackageError, match=rf"{weight} does not match its digest"):
        strata.aot.load_package(altered)
    files[MANIFEST] = files[MANIFEST].replace(b'"torch"', b'"torch" ', 1)
    with zipfile.ZipFile(altered, "w") as z:
        for name, content in files.items():
            z.writestr(name, content)
    with pytest.raises(PackageError, match="manifest.json does not match its digest"):
        strata.aot.load_package(altered)


def test_weights_can_be_swapped(packages):
    _, made = packages
    path, case = made["mlp"]
    run = strata.aot.load_package(path)
    other = MLP().eval()
    x = torch.randn(5, 16)
    run.load_constants(other.state_dict())
    torch.testing.assert_close(run(x), other(x).detach())
    assert set(run.constants()) == set(other.state_dict())
    with pytest.raises(PackageError, match=r"weight 'l1.weight' must be a tensor of shape \(64, 16\)"):
        run.load_constants({"l1.weight": torch.zeros(3, 3)})
    with pytest.raises(PackageError, match="no weight named 'nope'"):
        run.load_constants({"nope": torch.zeros(1)})


def test_data_dependent_programs_fail_at_packaging_with_the_reason(tmp_path):
    class Positives(torch.nn.Module):
        def forward(self, x):
            return x[x > 0] * 2

    ep = export(Positives(), (torch.randn(8),))
    with pytest.raises(PackagingError, match="known only at run time"):
        strata.aot.compile_and_package(ep, tmp_path / "nonzero.strata")
    assert not (tmp_path / "nonzero.strata").exists()


def test_a_program_that_mutates_a_buffer_is_refused(tmp_path):
    class Counter(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("calls", torch.zeros(()))

        def forward(self, x):
            self.calls.add_(1)
            return x + self.calls

    ep = export(Counter(), (torch.randn(3),))
    with pytest.raises(PackagingError, match="writes to its buffer 'calls': a package runs programs that change none"):
        strata.aot.compile_and_package(ep, tmp_path / "counter.strata")


def test_compile_and_package_takes_an_exported_program(tmp_path):
    with pytest.raises(TypeError, match="takes a torch.export.ExportedProgram, not MLP"):
        strata.aot.compile_and_package(MLP(), tmp_path / "x.strata")
    with pytest.raises(ValueError, match="unknown option"):
        strata.aot.compile_and_package(export(MLP(), (torch.randn(2, 16),)), tmp_path / "x.strata", {"no_such": 1})


def test_dims_export_fixed_stay_fixed(tmp_path):
    """A dim not marked dynamic is the exported size: another size is refused."""
    path = strata.aot.compile_and_package(export(MLP().eval(), (torch.randn(4, 16),)), tmp_path / "static.strata")
    run = strata.aot.load_package(path)
    with pytest.raises(PackageError, match=r"input 'x' dim 0 must be 4, not 5"):
        run(torch.randn(5, 16))


_LOAD_SAVED_FUNCTION = blocking_preamble(
    ("xdsl", "strata.dialects", "strata.passes", "strata.frontend.compile_graph", "strata.frontend.backend",
     "strata.frontend.packaging.aot_package", "strata.codegen.llvm_kernel", "strata.runtime.compiled_graph"),
    "must not be imported to load a compiled function") + textwrap.dedent("""
    import sys
    import torch
    loaded = torch.compiler.load_compiled_function(open(sys.argv[1], "rb"))
    for n in (3, 9):
        x, y = torch.arange(n * 8.0).reshape(n, 8) / 10, torch.ones(n, 8)
        want = ((x.sin() + y).relu() * 2).sum(-1)
        assert torch.allclose(loaded(x, y), want, atol=1e-5), n
    print("ok")
""")


@pytest.mark.skipif(not hasattr(torch.compiler, "load_compiled_function"), reason="this torch has no aot_compile")
def test_torch_aot_compile_saves_a_strata_package(tmp_path):
    """torch.compile(f, backend="strata").aot_compile(...) → save_compiled_function →
    load_compiled_function in a process that cannot import strata's compiler."""
    from strata.runtime.package_function import PackagedFunction

    def f(x, y):
        return ((x.sin() + y).relu() * 2).sum(-1)

    x, y = torch.randn(4, 8), torch.randn(4, 8)
    compiled = torch.compile(f, fullgraph=True, backend="strata", dynamic=True)
    if not hasattr(compiled, "aot_compile"):
        pytest.skip("this torch's torch.compile has no aot_compile")
    compiled = compiled.aot_compile(((x, y), {}))
    assert isinstance(compiled._artifacts.compiled_fn, PackagedFunction)  # strata's package, not a fallback
    torch.testing.assert_close(compiled(x, y), f(x, y))
    compiled.save_compiled_function(str(tmp_path / "f.bin"))
    out = subprocess.run([sys.executable, "-c", _LOAD_SAVED_FUNCTION, str(tmp_path / "f.bin")], capture_output=True,
                         text=True, cwd=ROOT.parent, timeout=300)
    assert out.returncode == 0 and out.stdout.strip().endswith("ok"), out.stderr[-3000:]


def test_max_autotune_packages_keep_products_as_library_calls_and_say_so(tmp_path):
    """A package's launchers hold no matmul template (its library tile calls torch): the
    products stay library calls, with a warning where templates would have been made,
    and a package compiled under max-autotune runs right."""
    import warnings

    from strata.frontend.options import resolve
    from strata.frontend.packaging.aot_package import _without_matmul_templates

    tuned = resolve("max-autotune")
    with pytest.warns(UserWarning, match="matmul templates are not packaged"):
        kept = _without_matmul_templates(tuned, for_triton=True)
    assert "matmul-to-dot" in tuned["pipeline"] and "matmul-to-dot" not in kept["pipeline"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # on the CPU the pass makes nothing: nothing to say
        assert "matmul-to-dot" not in _without_matmul_templates(tuned, for_triton=False)["pipeline"]
    model = MLP().eval()
    x = torch.randn(3, 16)
    path = strata.aot.compile_and_package(export(model, (x,)), tmp_path / "mlp.strata", {"max_autotune": True})
    torch.testing.assert_close(strata.aot.load_package(path)(x), model(x))


def test_a_gpu_package_keeps_grouped_heads_repeated():
    """A package's attention is torch's SDPA, with no split-key decode attention: on a
    GPU its pipeline leaves the grouped heads repeated (cuDNN over folded rows is
    slower); on the CPU the fold stays."""
    from strata.frontend.options import resolve
    from strata.frontend.packaging.aot_package import _without_folded_attention

    default = resolve(None)
    assert "fold-grouped-attention" in default["pipeline"]
    assert "fold-grouped-attention" not in _without_folded_attention(default, cuda=True)["pipeline"]
    assert _without_folded_attention(default, cuda=False) is default


def test_a_package_lays_an_attention_result_out_as_its_kernels_read_it():
    """`then: sequence_major` (a GPU graph's attention read by kernels): [B, H, S, E]
    values in [B, S, H, E] memory, copied only where torch made them otherwise."""
    from strata.runtime.package_runner import _then

    made = torch.randn(2, 3, 5, 4)  # contiguous, as the math backend gives it
    laid = _then(made, "sequence_major")
    assert torch.equal(laid, made) and laid.transpose(1, 2).is_contiguous()
    fused = torch.randn(2, 5, 3, 4).transpose(1, 2)  # as the fused kernels give it: kept
    assert _then(fused, "sequence_major") is fused
