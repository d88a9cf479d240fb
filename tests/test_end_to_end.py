"""torch.compile(backend="strata") end to end on CPU, through both code generators.

Each case runs on fresh random inputs and compares with eager within the dtype's
tolerance; "triton" runs kernels in Triton's interpreter on CPU tensors.
"""

from __future__ import annotations

import warnings

import pytest
import torch

import strata
from strata.testing.opaque import opaque
from strata.testing.models import GeluMLP, TransformerBlock, layer_norm, pointwise_chain, softmax_rows

# (device, codegen): CPU through both generators ("triton" in its interpreter); CUDA
# through Triton where a GPU is present.
TARGETS = [("cpu", "llvm"), ("cpu", "triton")] + ([("cuda", "triton")] if torch.cuda.is_available() else [])
TARGET_IDS = [f"{d}-{c}" for d, c in TARGETS]
TOL = {torch.float32: dict(atol=1e-5, rtol=1e-5), torch.bfloat16: dict(atol=2e-2, rtol=2e-2)}


def compile_and_compare(fn, args, codegen, dtype=torch.float32, **tol):
    compiled = strata.compile(fn, options={"codegen": codegen})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no eager fallback allowed in these cases
        with torch.no_grad():
            got = compiled(*args)
    with torch.no_grad():
        want = fn(*args)
    torch.testing.assert_close(got, want, **(tol or TOL[dtype]))


def randn(*shape, dtype=torch.float32, transposed=False, device="cpu"):
    """A random tensor; `transposed` gives a 2-D one whose storage is column-major."""
    if transposed:
        rows, cols = shape
        return torch.randn(cols, rows, dtype=dtype, device=device).t()
    return torch.randn(*shape, dtype=dtype, device=device)


@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1, 1), (7, 13), (33, 65)])
@pytest.mark.parametrize("transposed", [False, True])
def test_pointwise_chain(target, dtype, shape, transposed):
    device, codegen = target
    x = randn(*shape, dtype=dtype, transposed=transposed, device=device)
    y = randn(*shape, dtype=dtype, device=device)
    compile_and_compare(pointwise_chain, (x, y), codegen, dtype)


@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1, 1), (5, 1), (9, 37), (4, 1000)])
@pytest.mark.parametrize("transposed", [False, True])
def test_softmax(target, dtype, shape, transposed):
    device, codegen = target
    x = randn(*shape, dtype=dtype, transposed=transposed, device=device)
    compile_and_compare(softmax_rows, (x,), codegen, dtype)


@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(1, 1), (6, 17), (3, 5, 64)])
def test_layer_norm(target, dtype, shape):
    device, codegen = target
    x = randn(*shape, dtype=dtype, device=device)
    w = randn(shape[-1], dtype=dtype, device=device)
    b = randn(shape[-1], dtype=dtype, device=device)
    compile_and_compare(layer_norm, (x, w, b), codegen, dtype)


@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gelu_mlp(target, dtype):
    device, codegen = target
    model = GeluMLP(24, 72).to(dtype=dtype, device=device)
    x = randn(5, 24, dtype=dtype, device=device)
    compile_and_compare(model, (x,), codegen, dtype)


@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_transformer_block(target, dtype):
    device, codegen = target
    torch.manual_seed(0)
    model = TransformerBlock(32, 4).to(dtype=dtype, device=device).eval()
    x = randn(2, 7, 32, dtype=dtype, device=device)
    tol = dict(atol=1e-4, rtol=1e-4) if dtype == torch.float32 else dict(atol=6e-2, rtol=6e-2)
    compile_and_compare(model, (x,), codegen, dtype, **tol)


def test_backend_by_name_without_import(tmp_path):
    """torch finds the backend by name through its entry point: the user's code never
    imports strata."""
    import subprocess
    import sys

    code = (
        "import torch, sys\n"
        "f = torch.compile(lambda x: torch.softmax(x * 2, -1), backend='strata')\n"
        "x = torch.randn(4, 9)\n"
        "torch.testing.assert_close(f(x), torch.softmax(x * 2, -1))\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("ok")


def test_softmax_trace_has_one_fused_kernel(tmp_path):
    x = torch.randn(6, 10).t()  # transposed input
    f = strata.compile(softmax_rows, options={"trace.enabled": True, "trace.dir": str(tmp_path)})
    torch.testing.assert_close(f(x), softmax_rows(x))
    (graph,) = list(tmp_path.iterdir())
    kernel_ir = (graph / "2_kernel.mlir").read_text()
    assert kernel_ir.count("kernel.func") == 1
    assert kernel_ir.count("kernel.launch") == 1
    # The row reduction (max, sum) and its epilogue (exp, div) live in that one kernel.
    for op in ('kernel.reduce "amax"', 'kernel.reduce "sum"', "prim.exp", "prim.div", "kernel.store"):
        assert op in kernel_ir
    for level in ("0_aten", "1_prim"):
        assert (graph / f"{level}.mlir").exists()
    (kernel_file,) = list((graph / "kernels").iterdir())
    assert "aten._softmax.default" in kernel_file.read_text()


def test_unknown_option_and_mode_are_rejected():
    with pytest.raises(ValueError, match="codegen"):
        strata.compile(softmax_rows, options={"codgen": "llvm"})
    with pytest.raises(ValueError, match="max-autotune"):
        strata.compile(softmax_rows, mode="fastest")
    with pytest.raises(ValueError, match="llvm"):
        strata.compile(softmax_rows, options={"codegen": "cuda"})
    assert "codegen" in strata.list_options()
    assert strata.list_mode_options("reduce-overhead") == {"triton.cudagraphs": True}


def test_uncovered_op_falls_back_with_one_warning():
    def f(x):
        return opaque(x, x) + 1  # a custom op: no prim lowering

    compiled = strata.compile(f)
    x = torch.rand(5, 3) + 0.1
    with pytest.warns(UserWarning, match="strata_tests::opaque"):
        got = compiled(x)
    torch.testing.assert_close(got, f(x))


def test_dynamic_shapes_reuse_one_compile():
    f = strata.compile(softmax_rows, dynamic=True)
    for n in (3, 8, 17):
        x = torch.randn(n, n + 2)
        torch.testing.assert_close(f(x), softmax_rows(x))


@pytest.mark.parametrize("target", TARGETS, ids=TARGET_IDS)
def test_a_graph_with_no_tensor_input_makes_its_tensors_on_their_device(target):
    device, codegen = target

    def make(n: int):
        return torch.arange(n, device=device) * 2 + torch.ones(n, dtype=torch.int64, device=device)

    got = strata.compile(make, dynamic=False, options={"codegen": codegen})(5)
    assert got.device.type == torch.device(device).type
    torch.testing.assert_close(got, make(5))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cpu_indices_beside_cuda_tensors_are_moved_to_the_device():
    """index_put with CPU indices into a CUDA tensor, as eager allows."""

    def put(x, i, v):
        return torch.index_put(x, (i,), v) * 2

    x, v = torch.zeros(6, device="cuda"), torch.arange(3.0, device="cuda")
    i = torch.tensor([4, 0, 2])
    got = strata.compile(put, dynamic=False)(x, i, v)
    assert got.device.type == "cuda"
    torch.testing.assert_close(got, put(x, i, v))
