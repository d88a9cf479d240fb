"""Data-dependent reads and writes: prim.gather (a `kernel.load` whose index names
values of the body), prim.scatter and the scan and sort library ops.

The data-dependent load runs the same in the kernel interpreter, the LLVM generator
and the Triton generator (on CPU tensors, in Triton's interpreter); a gather never
reads outside its tensor, whatever its index holds; and the ops that decompose into
these compile to kernels (no eager fallback) with eager's results."""

from __future__ import annotations

import warnings

import pytest
import torch
import torch.nn.functional as F
from xdsl.utils.exceptions import VerifyException

import strata
from strata.codegen.llvm_cpu import compile_kernel as llvm_kernel
from strata.codegen.triton_gpu import compile_kernel as triton_kernel
from strata.dialects.context import parse_module
from strata.runtime.kernel_interpreter import run_kernel

# out[x0, r0] = x[x0, clamp(i[x0, r0])] summed over r0, x read transposed (strides 1, 5).
GATHER_SUM = """
kernel.func @k attributes {pointwise = [5 : i64], reduction = [4 : i64], num_inputs = 2 : i64, symbols = [], sources = ["aten.gather.default"]} {
^bb0(%i: !kernel.buffer<i64>, %x: !kernel.buffer<f32>, %out: !kernel.buffer<f32>):
  %a = kernel.load %i["r0 + 4*x0"] : !kernel.buffer<i64> -> i64
  %zero = arith.constant 0 : i64
  %last = arith.constant 6 : i64
  %lo = prim.minimum %a, %last : (i64, i64) -> i64
  %c = prim.maximum %lo, %zero : (i64, i64) -> i64
  %v = kernel.load %x["5*v0 + x0"] (%c : i64) : !kernel.buffer<f32> -> f32
  %s = kernel.reduce "sum" %v : f32 -> f32
  kernel.store %s, %out["x0"] : f32, !kernel.buffer<f32>
}
"""

# out[x0] = x[clamp(i[x0])] for a symbolic number of points.
GATHER_POINTWISE = """
kernel.func @k attributes {pointwise = ["s0"], reduction = [], num_inputs = 2 : i64, symbols = ["s0", "s1"], sources = ["aten.index_select.default"]} {
^bb0(%i: !kernel.buffer<i64>, %x: !kernel.buffer<f32>, %out: !kernel.buffer<f32>):
  %a = kernel.load %i["x0"] : !kernel.buffer<i64> -> i64
  %zero = arith.constant 0 : i64
  %last = kernel.index "s1 - 1" : i64
  %lo = prim.minimum %a, %last : (i64, i64) -> i64
  %c = prim.maximum %lo, %zero : (i64, i64) -> i64
  %v = kernel.load %x["v0"] (%c : i64) : !kernel.buffer<f32> -> f32
  kernel.store %v, %out["x0"] : f32, !kernel.buffer<f32>
}
"""


def _func(text: str):
    func = parse_module("builtin.module {\n" + text + "\n}").body.block.first_op
    func.verify()
    return func


def _runners():
    return {
        "interpreter": lambda f, bufs, syms: run_kernel(f, bufs, syms),
        "llvm": lambda f, bufs, syms: llvm_kernel(f)(bufs, syms),
        "triton": lambda f, bufs, syms: triton_kernel(f, "cpu")(bufs, syms),
    }


@pytest.mark.parametrize("backend", ["interpreter", "llvm", "triton"])
def test_data_dependent_load_in_a_reduction(backend):
    x = torch.randn(7, 5).t()  # [5, 7], strides (1, 5)
    i = torch.randint(-3, 10, (5, 4))  # some out of range: clamped
    out = torch.empty(5)
    _runners()[backend](_func(GATHER_SUM), [i, x.t().contiguous(), out], [])
    want = torch.gather(x, 1, i.clamp(0, 6)).sum(1)
    torch.testing.assert_close(out, want)


@pytest.mark.parametrize("backend", ["interpreter", "llvm", "triton"])
def test_data_dependent_load_with_symbolic_sizes(backend):
    x = torch.randn(11)
    i = torch.randint(-20, 20, (37,))
    out = torch.empty(37)
    _runners()[backend](_func(GATHER_POINTWISE), [i, x, out], [37, 11])
    torch.testing.assert_close(out, x[i.clamp(0, 10)])


def test_load_values_must_be_i64_and_named():
    bad_type = GATHER_POINTWISE.replace('%c = prim.maximum %lo, %zero : (i64, i64) -> i64', '%c0 = prim.maximum %lo, %zero : (i64, i64) -> i64\n  %c = prim.convert_element_type %c0 {dtype = "i32"} : (i64) -> i32').replace("(%c : i64)", "(%c : i32)")
    with pytest.raises(VerifyException, match="must be i64"):
        _func(bad_type)
    with pytest.raises(VerifyException, match="unknown symbols"):
        _func(GATHER_POINTWISE.replace('["v0"] (%c : i64)', '["v1"] (%c : i64)'))


def test_prim_gather_verifier():
    text = """
    func.func @graph(%x: !strata.tensor<[4, 8], f32>, %i: !strata.tensor<[4, 3], {idx}>) -> !strata.tensor<[4, 3], f32> {{
      %g = prim.gather %x, %i {{dim = 1 : i64}} : (!strata.tensor<[4, 8], f32>, !strata.tensor<[4, 3], {idx}>) -> !strata.tensor<[4, 3], f32>
      func.return %g : !strata.tensor<[4, 3], f32>
    }}"""
    parse_module(text.format(idx="i64")).verify()
    with pytest.raises(VerifyException, match="i64 or i32"):
        parse_module(text.format(idx="f32")).verify()


def _compiled(fn, *args, codegen="llvm", dynamic=False):
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)  # an eager fallback fails the test
        options = {"codegen": "triton"} if codegen == "triton" else {}
        torch._dynamo.reset()
        return strata.compile(fn, dynamic=dynamic, options=options)(*args)


x = torch.randn(5, 7)
i = torch.randint(0, 7, (5, 4))
CASES = {
    "gather": (lambda x, i: torch.gather(x.t(), 0, i.t() % 5) * 2, [x, i]),
    "index_select": (lambda x, i: torch.index_select(x, 1, i[0]).sum(0), [x, i]),
    "embedding": (lambda x, i: F.embedding(i, x.t()), [x, i]),
    "advanced_indexing": (lambda x, i: x[-1 - i[0] % 5, i[1]] + x[:, i[2]].sum(), [x, i]),
    "scatter_add": (lambda x, i: torch.scatter_add(x, 1, i, torch.ones(5, 4)), [x, i]),
    "index_put": (lambda x, i: torch.index_put(x, (i[0] % 5, i[1]), torch.ones(4), accumulate=True), [x, i]),
    "slice_scatter": (lambda x, i: torch.slice_scatter(x, x[:, :2] * 3, 1, 1, 5, 2), [x, i]),
    "argmax": (lambda x, i: (torch.argmax(x, 1), torch.min(x, 0)), [x, i]),
    "sort_cumsum": (lambda x, i: (torch.sort(x, 1)[1], torch.cumsum(x, 0), torch.topk(x, 2)), [x, i]),
    "pad_flip": (lambda x, i: (F.pad(x, (1, 2), value=0.5), torch.flip(x, (0,)), F.pad(x[None], (2, 2), mode="reflect")), [x, i]),
    "pool": (lambda x, i: F.max_pool2d(x[None], 2, return_indices=True), [x, i]),
}


@pytest.mark.parametrize("codegen", ["llvm", "triton"])
@pytest.mark.parametrize("case", list(CASES))
def test_compiles_without_fallback(case, codegen):
    fn, args = CASES[case]
    torch.testing.assert_close(_compiled(fn, *args, codegen=codegen), fn(*args))


def test_gather_with_symbolic_shapes():
    fn = lambda x, i: x[i][:, :3] * 2 + torch.gather(x, 1, i[:, None].expand(-1, 3) % 7)  # noqa: E731
    for n in (5, 9):
        x, idx = torch.randn(n, 7), torch.randint(0, n, (n,))
        torch.testing.assert_close(_compiled(fn, x, idx, dynamic=True), fn(x, idx))


def test_index_put_with_symbolic_index_shapes():
    """A KV cache written at `input_pos` under dynamic=True (a prefill): the index's
    length is a symbol, and the write still compiles; broadcast indices of symbolic
    shapes too."""

    def write(cache, pos, values):
        cache = cache.clone()
        cache[:, :, pos] = values
        return cache * 1

    def broadcast(x, rows, cols):
        return torch.index_put(x, (rows[:, None], cols[None, :]), torch.ones(()), accumulate=True)

    for n in (3, 6):
        cache, pos, values = torch.zeros(2, 3, 16, 4), torch.arange(n) + 2, torch.randn(2, 3, n, 4)
        torch.testing.assert_close(_compiled(write, cache, pos, values, dynamic=True), write(cache, pos, values))
        x, rows, cols = torch.zeros(8, 9), torch.randint(0, 8, (n,)), torch.randint(0, 9, (n + 1,))
        torch.testing.assert_close(_compiled(broadcast, x, rows, cols, dynamic=True), broadcast(x, rows, cols))


def test_out_of_range_index_never_reads_outside():
    # Eager raises, and so does the compiled gather (tests/test_index_bounds.py); with
    # the checks off it reads the nearest element of the dim, never outside the tensor.
    fn = lambda x, i: torch.gather(x, 0, i)  # noqa: E731
    args = torch.arange(4.0), torch.tensor([-5, 2, 9])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch._dynamo.reset()
        got = strata.compile(fn, dynamic=False, options={"index_bounds_checks": False})(*args)
        assert got.tolist() == [0.0, 2.0, 3.0]
        torch._dynamo.reset()
        with pytest.raises(IndexError, match="index -5 is out of bounds for dimension 0 with size 4"):
            strata.compile(fn, dynamic=False)(*args)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_index_put_accumulates_half_floats_in_f32(dtype):
    """Duplicate indices sum in f32 and round once (CUDA eager's index_put): 1000 adds
    of 0.01 to 1 stay exact to the last f16/bf16 bit, where adding one at a time
    (CPU eager) stalls once the sum's ulp exceeds twice the addend."""
    x = torch.ones(3, dtype=dtype)
    index = torch.zeros(1000, dtype=torch.int64)
    values = torch.full((1000,), 0.01, dtype=dtype)
    fn = lambda x, i, v: torch.index_put(x, (i,), v, accumulate=True)  # noqa: E731
    got = _compiled(fn, x, index, values)
    exact = (1 + values.double().sum()).to(dtype)
    assert got[0] == exact and bool((got[1:] == 1).all())
