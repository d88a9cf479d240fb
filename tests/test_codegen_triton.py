"""The Triton code generator, run by Triton's interpreter on CPU tensors and compared
with eager PyTorch."""

from __future__ import annotations

import pytest
import torch

from strata.codegen import CodegenError
from strata.codegen import triton_source
from strata.codegen.triton_gpu import compile_kernel
from strata.codegen.triton_tiles import PERSISTENT_LIMIT
from strata.dialects.context import parse_module
from strata.dialects.kernel import FuncOp, element_of
from strata.dialects.prim import ELEMENTWISE
from strata.dialects.types import DTYPES

IR_TYPE = {"u8": "ui8"}


def ir_type(dtype: str) -> str:
    return IR_TYPE.get(dtype, dtype)


def kernel_func(body: str, buffers: list[str], num_inputs: int, pointwise: str, reduction: str = "",
                symbols: str = "", name: str = "k0", sources: str = '"aten.test.default"') -> FuncOp:
    """A kernel.func from its body; buffers are dtypes, inputs first."""
    args = ", ".join(
        f"%{'in' if i < num_inputs else 'out'}{i if i < num_inputs else i - num_inputs}: !kernel.buffer<{ir_type(d)}>"
        for i, d in enumerate(buffers)
    )
    text = f"""builtin.module {{
kernel.func @{name} attributes {{pointwise = [{pointwise}], reduction = [{reduction}], num_inputs = {num_inputs} : i64, symbols = [{symbols}], sources = [{sources}]}} {{
^bb0({args}):
{body}
}}
}}"""
    module = parse_module(text)
    module.verify()
    return module.body.block.first_op


def load(name: str, buf: str, index: str, dtype: str) -> str:
    t = ir_type(dtype)
    return f'  %{name} = kernel.load %{buf}["{index}"] : !kernel.buffer<{t}> -> {t}'


def store(value: str, buf: str, index: str, dtype: str) -> str:
    t = ir_type(dtype)
    return f'  kernel.store %{value}, %{buf}["{index}"] : {t}, !kernel.buffer<{t}>'


def prim(result: str, op: str, args: list[str], dtype: str, result_dtype: str | None = None) -> str:
    t, rt = ir_type(dtype), ir_type(result_dtype or dtype)
    operands = ", ".join(f"%{a}" for a in args)
    return f"  %{result} = prim.{op} {operands} : ({', '.join([t] * len(args))}) -> {rt}"


def reduce(result: str, kind: str, arg: str, dtype: str) -> str:
    t = ir_type(dtype)
    return f'  %{result} = kernel.reduce "{kind}" %{arg} : {t} -> {t}'


def randn(*shape: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(*shape, dtype=torch.float64).to(dtype)


def run(func: FuncOp, inputs: list[torch.Tensor], outputs: list[torch.Tensor], symbols: list[int] = ()) -> list[torch.Tensor]:
    compile_kernel(func, "cpu")([*inputs, *outputs], list(symbols))
    return outputs


# ---------------------------------------------------------------- pointwise
def test_pointwise_chain_and_header():
    body = "\n".join([
        load("a", "in0", "x1 + 33*x0", "f32"),
        load("b", "in1", "x1 + 33*x0", "f32"),
        prim("m", "mul", ["a", "b"], "f32"),
        prim("e", "exp", ["a"], "f32"),
        prim("s", "add", ["m", "e"], "f32"),
        prim("t", "tanh", ["s"], "f32"),
        store("t", "out0", "x1 + 33*x0", "f32"),
    ])
    func = kernel_func(body, ["f32", "f32", "f32"], 2, "4, 33", sources='"aten.mul.Tensor", "aten.tanh.default"')
    kernel = compile_kernel(func, "cpu")
    assert kernel.name == "k0"
    assert kernel.source.startswith("# strata kernel k0\n# from aten ops: aten.mul.Tensor, aten.tanh.default\n")
    a, b = randn(4, 33), randn(4, 33)
    out = torch.empty(4, 33)
    kernel([a, b, out], [])
    torch.testing.assert_close(out, torch.tanh(a * b + torch.exp(a)))


def test_transposed_and_broadcast_loads():
    # out[x0, x1] = a[x1, x0] (a is [7, 5]) + b[x1] (b broadcast along x0)
    body = "\n".join([
        load("a", "in0", "5*x1 + x0", "f32"),
        load("b", "in1", "x1", "f32"),
        prim("s", "add", ["a", "b"], "f32"),
        store("s", "out0", "7*x0 + x1", "f32"),
    ])
    func = kernel_func(body, ["f32", "f32", "f32"], 2, "5, 7")
    a, b = randn(7, 5), randn(7)
    (out,) = run(func, [a, b], [torch.empty(5, 7)])
    torch.testing.assert_close(out, a.t() + b)


def test_strided_view_of_a_larger_buffer():
    # every other column of a [6, 10] buffer, with a symbolic row count
    body = "\n".join([
        load("a", "in0", "2*x1 + 10*x0 + 1", "f32"),
        prim("n", "neg", ["a"], "f32"),
        store("n", "out0", "5*x0 + x1", "f32"),
    ])
    func = kernel_func(body, ["f32", "f32"], 1, '"s0", 5', symbols='"s0"')
    a = randn(6, 10)
    (out,) = run(func, [a], [torch.empty(6, 5)], [6])
    torch.testing.assert_close(out, -a[:, 1::2])


def test_symbolic_sizes_reuse_one_compile():
    body = "\n".join([
        load("a", "in0", "x0*s1 + x1", "f32"),
        prim("r", "sigmoid", ["a"], "f32"),
        store("r", "out0", "x0*s1 + x1", "f32"),
    ])
    kernel = compile_kernel(kernel_func(body, ["f32", "f32"], 1, '"s0", "s1"', symbols='"s0", "s1"'), "cpu")
    for shape in ((3, 5), (17, 129)):
        a = randn(*shape)
        out = torch.empty(shape)
        kernel([a, out], list(shape))
        torch.testing.assert_close(out, torch.sigmoid(a))


def test_empty_pointwise_domain():
    body = "\n".join([load("a", "in0", "x0", "f32"), store("a", "out0", "x0", "f32")])
    symbolic = compile_kernel(kernel_func(body, ["f32", "f32"], 1, '"s0"', symbols='"s0"'), "cpu")
    symbolic([torch.empty(0), torch.empty(0)], [0])
    static = compile_kernel(kernel_func(body, ["f32", "f32"], 1, "0"), "cpu")
    static([torch.empty(0), torch.empty(0)], [])


# ---------------------------------------------------------------- reductions
SOFTMAX = "\n".join([
    load("a", "in0", "x0*s1 + r0", "f32"),
    reduce("m", "amax", "a", "f32"),
    prim("d", "sub", ["a", "m"], "f32"),
    prim("e", "exp", ["d"], "f32"),
    reduce("s", "sum", "e", "f32"),
    prim("r", "div", ["e", "s"], "f32"),
    store("r", "out0", "x0*s1 + r0", "f32"),
])


@pytest.mark.parametrize("rows, cols", [(3, 1), (4, 7), (5, 1000), (3, PERSISTENT_LIMIT + 1000)])
def test_softmax_rows(rows, cols):
    func = kernel_func(SOFTMAX, ["f32", "f32"], 1, '"s0"', '"s1"', symbols='"s0", "s1"', sources='"aten._softmax.default"')
    x = randn(rows, cols) * 3
    (out,) = run(func, [x], [torch.empty(rows, cols)], [rows, cols])
    torch.testing.assert_close(out, torch.softmax(x, 1))


def test_static_long_rows_loop_once_per_reduction():
    cols = PERSISTENT_LIMIT * 2 + 3
    body = SOFTMAX.replace("x0*s1", f"{cols}*x0")
    func = kernel_func(body, ["f32", "f32"], 1, "2", str(cols))
    kernel = compile_kernel(func, "cpu")
    assert kernel.source.count("for roffset in range") == 3  # amax, sum, then the stores
    x = randn(2, cols)
    out = torch.empty(2, cols)
    kernel([x, out], [])
    torch.testing.assert_close(out, torch.softmax(x, 1))


@pytest.mark.parametrize("cols", [5, PERSISTENT_LIMIT + 5])
def test_layer_norm_two_reductions_in_one_loop(cols):
    # mean and mean of squares reduce the same row: one loop for both
    body = "\n".join([
        load("a", "in0", "x0*s1 + r0", "f32"),
        load("n", "in1", "0", "f32"),
        prim("sq", "mul", ["a", "a"], "f32"),
        reduce("s", "sum", "a", "f32"),
        reduce("q", "sum", "sq", "f32"),
        prim("mean", "div", ["s", "n"], "f32"),
        prim("msq", "div", ["q", "n"], "f32"),
        prim("m2", "mul", ["mean", "mean"], "f32"),
        prim("var", "sub", ["msq", "m2"], "f32"),
        prim("sd", "rsqrt", ["var"], "f32"),
        prim("c", "sub", ["a", "mean"], "f32"),
        prim("y", "mul", ["c", "sd"], "f32"),
        store("y", "out0", "x0*s1 + r0", "f32"),
        store("mean", "out1", "x0", "f32"),
    ])
    func = kernel_func(body, ["f32", "f32", "f32", "f32"], 2, '"s0"', '"s1"', symbols='"s0", "s1"')
    x = randn(3, cols) + 2
    y, mean = run(func, [x, torch.tensor([float(cols)])], [torch.empty(3, cols), torch.empty(3)], [3, cols])
    torch.testing.assert_close(mean, x.mean(1))
    torch.testing.assert_close(y, torch.nn.functional.layer_norm(x, (cols,), eps=0.0), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("kind, fn", [("sum", torch.sum), ("prod", torch.prod), ("amax", torch.amax), ("amin", torch.amin)])
def test_reduce_over_non_last_dims(kind, fn):
    # x: [4, 3, 5]; reduce dims 0 and 2 → [3]
    body = "\n".join([load("a", "in0", "15*r0 + 5*x0 + r1", "f64"), reduce("s", kind, "a", "f64"), store("s", "out0", "x0", "f64")])
    func = kernel_func(body, ["f64", "f64"], 1, "3", "4, 5")
    x = randn(4, 3, 5, dtype=torch.float64) * 0.5 + (1.0 if kind == "prod" else 0.0)
    (out,) = run(func, [x], [torch.empty(3, dtype=torch.float64)])
    expected = fn(x.permute(1, 0, 2).reshape(3, 20), 1)
    torch.testing.assert_close(out, expected)


def test_column_sum_long_rows_looped_outer():
    # sum over dim 0 of an [R, 6] matrix with R beyond the persistent limit
    rows = PERSISTENT_LIMIT + 10
    body = "\n".join([load("a", "in0", "6*r0 + x0", "f32"), reduce("s", "sum", "a", "f32"), store("s", "out0", "x0", "f32")])
    func = kernel_func(body, ["f32", "f32"], 1, "6", str(rows))
    x = randn(rows, 6)
    (out,) = run(func, [x], [torch.empty(6)])
    torch.testing.assert_close(out, x.sum(0), rtol=1e-5, atol=1e-4)


def test_empty_reduction_gives_identity():
    body = "\n".join([
        load("a", "in0", "x0*s1 + r0", "f32"),
        reduce("s", "sum", "a", "f32"),
        reduce("p", "prod", "a", "f32"),
        store("s", "out0", "x0", "f32"),
        store("p", "out1", "x0", "f32"),
    ])
    func = kernel_func(body, ["f32", "f32", "f32"], 1, '"s0"', '"s1"', symbols='"s0", "s1"')
    s, p = run(func, [torch.empty(3, 0)], [torch.full((3,), 7.0), torch.full((3,), 7.0)], [3, 0])
    torch.testing.assert_close(s, torch.zeros(3))
    torch.testing.assert_close(p, torch.ones(3))


def test_nan_propagation_in_maximum_and_amax():
    body = "\n".join([
        load("a", "in0", "4*x0 + r0", "f32"),
        load("b", "in1", "4*x0 + r0", "f32"),
        prim("m", "maximum", ["a", "b"], "f32"),
        prim("n", "minimum", ["a", "b"], "f32"),
        reduce("x", "amax", "a", "f32"),
        store("m", "out0", "4*x0 + r0", "f32"),
        store("n", "out1", "4*x0 + r0", "f32"),
        store("x", "out2", "x0", "f32"),
    ])
    func = kernel_func(body, ["f32"] * 5, 2, "3", "4")
    a, b = randn(3, 4), randn(3, 4)
    a[0, 1] = float("nan")
    b[1, 2] = float("nan")
    m, n, x = run(func, [a, b], [torch.empty(3, 4), torch.empty(3, 4), torch.empty(3)])
    torch.testing.assert_close(m, torch.maximum(a, b), equal_nan=True)
    torch.testing.assert_close(n, torch.minimum(a, b), equal_nan=True)
    torch.testing.assert_close(x, a.amax(1), equal_nan=True)


@pytest.mark.parametrize("dtype", ["bf16", "f16"])
def test_half_precision_sum_accumulates_in_f32(dtype):
    body = "\n".join([load("a", "in0", "300*x0 + r0", dtype), reduce("s", "sum", "a", dtype), store("s", "out0", "x0", dtype)])
    func = kernel_func(body, [dtype, dtype], 1, "4", "300")
    a = randn(4, 300, dtype=DTYPES[dtype])
    (out,) = run(func, [a], [torch.empty(4, dtype=DTYPES[dtype])])
    torch.testing.assert_close(out, a.sum(1))


def test_bool_and_int8_reductions():
    body = "\n".join([
        load("a", "in0", "5*x0 + r0", "i1"),
        load("b", "in1", "5*x0 + r0", "i8"),
        reduce("any", "sum", "a", "i1"),
        reduce("all", "prod", "a", "i1"),
        reduce("s", "sum", "b", "i8"),
        store("any", "out0", "x0", "i1"),
        store("all", "out1", "x0", "i1"),
        store("s", "out2", "x0", "i8"),
    ])
    func = kernel_func(body, ["i1", "i8", "i1", "i1", "i8"], 2, "4", "5")
    a = torch.tensor([[0, 0, 0, 0, 0], [1, 1, 1, 1, 1], [0, 1, 0, 0, 0], [1, 1, 0, 1, 1]], dtype=torch.bool)
    b = torch.randint(-128, 128, (4, 5), dtype=torch.int8)
    any_, all_, s = run(func, [a, b], [torch.empty(4, dtype=torch.bool), torch.empty(4, dtype=torch.bool), torch.empty(4, dtype=torch.int8)])
    assert torch.equal(any_, a.any(1)) and torch.equal(all_, a.all(1))
    assert torch.equal(s, torch.sum(b, 1, dtype=torch.int8))


def test_row_store_of_a_scalar_and_index_op():
    # out[x0, r0] = sum(row) + r0 (kernel.index), broadcast over the row
    body = "\n".join([
        load("a", "in0", "6*x0 + r0", "i64"),
        reduce("s", "sum", "a", "i64"),
        '  %i = kernel.index "r0" : i64',
        prim("t", "add", ["s", "i"], "i64"),
        store("t", "out0", "6*x0 + r0", "i64"),
    ])
    func = kernel_func(body, ["i64", "i64"], 1, "3", "6")
    a = torch.randint(-50, 50, (3, 6))
    (out,) = run(func, [a], [torch.empty(3, 6, dtype=torch.int64)])
    assert torch.equal(out, a.sum(1, keepdim=True) + torch.arange(6))


@pytest.mark.parametrize("cols", [6, PERSISTENT_LIMIT + 6])
def test_scalars_broadcast_into_rows(cols):
    # sum over R of a value that does not depend on r, and rows that are scalars
    body = "\n".join([
        '  %i = kernel.index "x0" : i64',
        '  %f = prim.convert_element_type %i {dtype = "f32"} : (i64) -> f32',
        reduce("s", "sum", "f", "f32"),
        load("a", "in0", f"{cols}*x0 + r0", "f32"),
        prim("t", "add", ["a", "s"], "f32"),
        store("t", "out0", f"{cols}*x0 + r0", "f32"),
        store("f", "out1", f"{cols}*x0 + r0", "f32"),
        store("s", "out2", "x0", "f32"),
    ])
    func = kernel_func(body, ["f32"] * 4, 1, "3", str(cols))
    a = randn(3, cols)
    t, f, s = run(func, [a], [torch.empty(3, cols), torch.empty(3, cols), torch.empty(3)])
    x = torch.arange(3, dtype=torch.float32)
    torch.testing.assert_close(s, x * cols)
    torch.testing.assert_close(t, a + (x * cols)[:, None])
    torch.testing.assert_close(f, x[:, None].expand(3, cols))


def test_unit_dims_and_static_int32_indexing():
    body = "\n".join([load("a", "in0", "4*x0 + x1 + x2", "f32"), prim("r", "abs", ["a"], "f32"), store("r", "out0", "4*x0 + x2", "f32")])
    func = kernel_func(body, ["f32", "f32"], 1, "3, 1, 4")
    kernel = compile_kernel(func, "cpu")
    assert "tl.int64" not in kernel.source and "x1" not in kernel.source
    a = randn(3, 1, 4)
    out = torch.empty(3, 1, 4)
    kernel([a, out], [])
    torch.testing.assert_close(out, a.abs())


def test_row_stored_without_r_index_raises():
    body = "\n".join([load("a", "in0", "4*x0 + r0", "f32"), store("a", "out0", "x0", "f32")])
    with pytest.raises(CodegenError, match="names no reduction variable"):
        compile_kernel(kernel_func(body, ["f32", "f32"], 1, "3", "4"), "cpu")


# ---------------------------------------------------------------- scalar ops
def unary(op: str, dtype: str, result_dtype: str | None = None) -> FuncOp:
    rt = result_dtype or dtype
    body = "\n".join([load("a", "in0", "x0", dtype), prim("r", op, ["a"], dtype, rt), store("r", "out0", "x0", rt)])
    return kernel_func(body, [dtype, rt], 1, '"s0"', symbols='"s0"')


def binary(op: str, dtype: str, result_dtype: str | None = None) -> FuncOp:
    rt = result_dtype or dtype
    body = "\n".join([
        load("a", "in0", "x0", dtype), load("b", "in1", "x0", dtype),
        prim("r", op, ["a", "b"], dtype, rt), store("r", "out0", "x0", rt),
    ])
    return kernel_func(body, [dtype, dtype, rt], 2, '"s0"', symbols='"s0"')


def run_elementwise(func: FuncOp, inputs: list[torch.Tensor], dtype: torch.dtype) -> torch.Tensor:
    n = inputs[0].numel()
    (out,) = run(func, inputs, [torch.empty(n, dtype=dtype)], [n])
    return out


FLOAT_UNARY = {
    "exp": (torch.exp, 3), "expm1": (torch.expm1, 3), "log": (torch.log, "pos"), "log1p": (torch.log1p, "pos"),
    "log2": (torch.log2, "pos"), "log10": (torch.log10, "pos"), "sqrt": (torch.sqrt, "pos"), "rsqrt": (torch.rsqrt, "pos"),
    "sin": (torch.sin, 4), "cos": (torch.cos, 4), "tan": (torch.tan, 1), "asin": (torch.asin, "unit"), "acos": (torch.acos, "unit"),
    "atan": (torch.atan, 10), "sinh": (torch.sinh, 3), "cosh": (torch.cosh, 3), "tanh": (torch.tanh, 5), "asinh": (torch.asinh, 10),
    "acosh": (torch.acosh, "above1"), "atanh": (torch.atanh, "unit"), "erf": (torch.erf, 3), "erfc": (torch.erfc, 4),
    "erfinv": (torch.erfinv, "unit"), "sigmoid": (torch.sigmoid, 5), "reciprocal": (torch.reciprocal, 3),
    "lgamma": (torch.lgamma, 6), "digamma": (torch.digamma, 6), "exp2": (torch.exp2, 3),
    "round": (torch.round, "halves"), "trunc": (torch.trunc, 4), "floor": (torch.floor, 4), "ceil": (torch.ceil, 4),
    "sign": (torch.sign, 2), "abs": (torch.abs, 2), "neg": (torch.neg, 2),
}


def float_inputs(domain, n: int, dtype: torch.dtype) -> torch.Tensor:
    x = torch.rand(n, dtype=torch.float64)
    if domain == "pos":
        x = x * 20 + 1e-3
    elif domain == "unit":
        x = x * 1.98 - 0.99
    elif domain == "above1":
        x = 1 + x * 20
    elif domain == "halves":
        x = torch.randint(-8, 8, (n,)).double() / 2
    else:
        x = (x * 2 - 1) * domain
    return x.to(dtype)


@pytest.mark.parametrize("op", sorted(FLOAT_UNARY))
@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_float_unary(op, dtype):
    fn, domain = FLOAT_UNARY[op]
    x = float_inputs(domain, 64, DTYPES[dtype])
    out = run_elementwise(unary(op, dtype), [x], DTYPES[dtype])
    torch.testing.assert_close(out, fn(x))


def test_special_values():
    x = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), -1.0, -2.0, 1.0, 2.0, -2.5])
    for op, fn in [("lgamma", torch.lgamma), ("digamma", torch.digamma), ("erfinv", torch.erfinv), ("atan", torch.atan),
                   ("expm1", torch.expm1), ("tanh", torch.tanh), ("sign", torch.sign), ("round", torch.round)]:
        out = run_elementwise(unary(op, "f32"), [x], torch.float32)
        torch.testing.assert_close(out, fn(x), equal_nan=True, msg=op)


@pytest.mark.parametrize("op, fn", [
    ("pow", torch.pow), ("atan2", torch.atan2), ("hypot", torch.hypot), ("copysign", torch.copysign),
    ("remainder", torch.remainder), ("fmod", torch.fmod), ("div", torch.div),
    ("floordiv", lambda a, b: torch.div(a, b, rounding_mode="floor")),
])
def test_float_binary(op, fn):
    a = randn(64, dtype=torch.float32) * 4
    b = randn(64, dtype=torch.float32) * 2
    if op == "pow":
        a = torch.cat([a.abs()[:48], torch.tensor([-2.0, -3.0, 0.0, -1.0] * 4)])
        b = torch.cat([b[:48], torch.tensor([3.0, 2.0, 2.0, -1.5] * 4)])
    out = run_elementwise(binary(op, "f32"), [a, b], torch.float32)
    torch.testing.assert_close(out, fn(a, b), equal_nan=True)


@pytest.mark.parametrize("dtype", ["i8", "i32", "i64", "u8"])
@pytest.mark.parametrize("op, fn", [
    ("div", lambda a, b: torch.div(a, b, rounding_mode="trunc")),
    ("floordiv", lambda a, b: torch.div(a, b, rounding_mode="floor")),
    ("remainder", torch.remainder), ("fmod", torch.fmod), ("add", torch.add), ("mul", torch.mul),
    ("sub", torch.sub), ("maximum", torch.maximum), ("bitwise_xor", torch.bitwise_xor),
])
def test_integer_binary_with_negative_values(dtype, op, fn):
    t = DTYPES[dtype]
    info = torch.iinfo(t)
    a = torch.randint(max(info.min, -1000), min(info.max, 1000) + 1, (64,), dtype=t)
    b = torch.randint(max(info.min, -9), 10, (64,), dtype=t)
    b[b == 0] = 3
    out = run_elementwise(binary(op, dtype), [a, b], t)
    assert torch.equal(out, fn(a, b)), op


@pytest.mark.parametrize("dtype", ["i8", "i32", "u8"])
def test_integer_pow_and_shifts(dtype):
    t = DTYPES[dtype]
    a = torch.randint(0 if dtype == "u8" else -5, 6, (40,), dtype=t)
    e = torch.randint(0 if dtype == "u8" else -2, 9, (40,), dtype=t)
    assert torch.equal(run_elementwise(binary("pow", dtype), [a, e], t), torch.pow(a, e))
    s = torch.randint(0 if dtype == "u8" else -2, 12, (40,), dtype=t)
    assert torch.equal(run_elementwise(binary("shift_left", dtype), [a, s], t), torch.bitwise_left_shift(a, s))
    assert torch.equal(run_elementwise(binary("shift_right", dtype), [a, s], t), torch.bitwise_right_shift(a, s))


def test_comparisons_and_where():
    body = "\n".join([
        load("a", "in0", "x0", "f32"),
        load("b", "in1", "x0", "f32"),
        prim("c", "gt", ["a", "b"], "f32", "i1"),
        prim("n", "isnan", ["a"], "f32", "i1"),
        prim("o", "logical_or", ["c", "n"], "i1"),
        '  %w = prim.where %o, %a, %b : (i1, f32, f32) -> f32',
        prim("l", "lt", ["o", "c"], "i1"),
        store("w", "out0", "x0", "f32"),
        store("l", "out1", "x0", "i1"),
    ])
    func = kernel_func(body, ["f32", "f32", "f32", "i1"], 2, "50")
    a, b = randn(50), randn(50)
    a[3] = float("nan")
    w, lt = run(func, [a, b], [torch.empty(50), torch.empty(50, dtype=torch.bool)])
    o = (a > b) | a.isnan()
    torch.testing.assert_close(w, torch.where(o, a, b), equal_nan=True)
    assert torch.equal(lt, o < (a > b))


def test_half_precision_rounds_after_every_op():
    body = "\n".join([
        load("a", "in0", "x0", "f32"),
        '  %h = prim.convert_element_type %a {dtype = "f16"} : (f32) -> f16',
        prim("e", "exp", ["h"], "f16"),
        prim("s", "add", ["e", "h"], "f16"),
        '  %b = prim.convert_element_type %s {dtype = "bf16"} : (f16) -> bf16',
        prim("m", "mul", ["b", "b"], "bf16"),
        '  %f = prim.convert_element_type %m {dtype = "f32"} : (bf16) -> f32',
        store("f", "out0", "x0", "f32"),
    ])
    func = kernel_func(body, ["f32", "f32"], 1, "100")
    a = randn(100)
    (out,) = run(func, [a], [torch.empty(100)])
    h = a.half()
    b = (torch.exp(h) + h).bfloat16()
    assert torch.equal(out, (b * b).float())


@pytest.mark.parametrize("src, dst", [("f32", "i32"), ("f32", "i1"), ("i1", "f32"), ("i32", "u8"), ("f64", "bf16"), ("i64", "f16"), ("f32", "i8")])
def test_convert_element_type(src, dst):
    if src == "i1":
        x = torch.rand(40) > 0.5
    elif src.startswith("f"):
        x = torch.cat([randn(36) * 100, torch.tensor([0.0, -0.0, 0.7, -0.7])]).to(DTYPES[src])
    else:
        x = torch.randint(-300, 300, (40,), dtype=DTYPES[src])
    body = "\n".join([
        load("a", "in0", "x0", src),
        f'  %c = prim.convert_element_type %a {{dtype = "{dst}"}} : ({ir_type(src)}) -> {ir_type(dst)}',
        store("c", "out0", "x0", dst),
    ])
    (out,) = run(kernel_func(body, [src, dst], 1, "40"), [x], [torch.empty(40, dtype=DTYPES[dst])])
    assert torch.equal(out, x.to(DTYPES[dst]))


def test_constants():
    body = "\n".join([
        load("a", "in0", "x0", "i8"),
        "  %c = arith.constant 100 : i8",
        prim("s", "add", ["a", "c"], "i8"),
        load("f", "in1", "x0", "f16"),
        "  %h = arith.constant 0.1 : f16",
        "  %i = arith.constant 0x7F800000 : f32",
        prim("g", "mul", ["f", "h"], "f16"),
        '  %gi = prim.convert_element_type %g {dtype = "f32"} : (f16) -> f32',
        prim("m", "minimum", ["gi", "i"], "f32"),
        store("s", "out0", "x0", "i8"),
        store("m", "out1", "x0", "f32"),
    ])
    func = kernel_func(body, ["i8", "f16", "i8", "f32"], 2, "30")
    a = torch.randint(-128, 128, (30,), dtype=torch.int8)
    f = randn(30, dtype=torch.float16)
    s, m = run(func, [a, f], [torch.empty(30, dtype=torch.int8), torch.empty(30)])
    assert torch.equal(s, a + 100)
    assert torch.equal(m, (f * torch.tensor(0.1, dtype=torch.float16)).float())


# ---------------------------------------------------------------- compile path
def test_disk_cache_is_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    body = "\n".join([load("a", "in0", "x0", "f32"), prim("r", "abs", ["a"], "f32"), store("r", "out0", "x0", "f32")])
    func = kernel_func(body, ["f32", "f32"], 1, "9")
    first = compile_kernel(func, "cpu")
    files = list((tmp_path / "triton").glob("*.py"))
    assert len(files) == 1 and files[0].read_text() == first.source

    def no_codegen(self):
        raise AssertionError("the cached kernel should have been reused")

    monkeypatch.setattr(triton_source.KernelSource, "module", no_codegen)
    second = compile_kernel(func, "cpu")
    assert second.source == first.source
    a = randn(9)
    out = torch.empty(9)
    second([a, out], [])
    torch.testing.assert_close(out, a.abs())


def test_cuda_source_uses_libdevice():
    func = unary("erfinv", "f32")
    from strata.codegen.triton_source import KernelSource

    source = KernelSource(func, "cuda").module()
    assert "from triton.language.extra import libdevice" in source
    assert "libdevice.erfinv(v0)" in source
    assert "tl.int64" in source  # symbolic sizes index in 64 bits


def test_bool_shift_is_rejected_by_the_verifier():
    from xdsl.utils.exceptions import VerifyException

    with pytest.raises(VerifyException, match="shift_left"):
        binary("shift_left", "i1")


def test_unsupported_op_raises_codegen_error():
    body = "\n".join([load("a", "in0", "x0", "f32"), "  %r = arith.addf %a, %a : f32", store("r", "out0", "x0", "f32")])
    with pytest.raises(CodegenError, match="arith.addf"):
        compile_kernel(kernel_func(body, ["f32", "f32"], 1, "4"), "cpu")


# ---------------------------------------------------------------- CUDA sources, without a GPU
SIGNATURE = {"f16": "*fp16", "bf16": "*bf16", "f32": "*fp32", "f64": "*fp64", "i8": "*i8", "i16": "*i16",
             "i32": "*i32", "i64": "*i64", "u8": "*u8", "i1": "*i1"}


def many_ops(dtype: str, arity: int | None = None) -> FuncOp:
    """One kernel applying every prim op that takes `dtype` (and has `arity`
    operands) to the same operands, one output each. Shifts of bools, which torch
    does not implement, are left out."""
    ops = [op for op, (n, accepts, _, _) in ELEMENTWISE.items()
           if accepts(dtype) and arity in (None, n) and not (dtype == "i1" and op.startswith("shift"))]
    lines = [load("a", "in0", "x0", dtype), load("b", "in1", "x0", dtype)]
    outs = []
    for n, op in enumerate(ops):
        outs.append("i1" if ELEMENTWISE[op][2] else dtype)
        lines += [prim(f"r{n}", op, ["a", "b"][: ELEMENTWISE[op][0]], dtype, outs[-1]), store(f"r{n}", f"out{n}", "x0", outs[-1])]
    return kernel_func("\n".join(lines), [dtype, dtype, *outs], 2, '"s0"', symbols='"s0"')


def reductions(dtype: str) -> FuncOp:
    lines = [load("a", "in0", "x0*s1 + r0", dtype)]
    for n, kind in enumerate(("sum", "prod", "amax", "amin")):
        lines += [reduce(f"k{n}", kind, "a", dtype), store(f"k{n}", f"out{n}", "x0", dtype)]
    return kernel_func("\n".join(lines), [dtype] * 5, 1, '"s0"', '"s1"', symbols='"s0", "s1"')


CUDA_KERNELS = {
    "softmax": lambda: kernel_func(SOFTMAX, ["f32", "f32"], 1, '"s0"', '"s1"', symbols='"s0", "s1"'),
    "reductions-bf16": lambda: reductions("bf16"),
    "reductions-i1": lambda: reductions("i1"),
    "float-unary-f32": lambda: many_ops("f32", 1),
    "float-unary-f64": lambda: many_ops("f64", 1),
    "float-unary-bf16": lambda: many_ops("bf16", 1),
    "float-binary-f32": lambda: many_ops("f32", 2),
    "float-binary-f16": lambda: many_ops("f16", 2),
    "int-i8": lambda: many_ops("i8"),
    "int-u8": lambda: many_ops("u8"),
    "int-i64": lambda: many_ops("i64"),
    "bool": lambda: many_ops("i1"),
}


@pytest.mark.parametrize("name", sorted(CUDA_KERNELS))
def test_cuda_source_compiles_for_sm90(name, tmp_path):
    """The CUDA flavour (libdevice, no interpreter stand-ins) compiles to a cubin; this
    needs Triton's NVIDIA back end and ptxas, not a GPU."""
    pytest.importorskip("triton.backends.nvidia.compiler")
    import importlib.util

    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    func = CUDA_KERNELS[name]()
    source = compile_kernel(func, "cuda").source
    path = tmp_path / f"{name.replace('-', '_')}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    pointers = {f"{'in' if i < func.num_inputs.value.data else 'out'}{i if i < func.num_inputs.value.data else i - func.num_inputs.value.data}": SIGNATURE[element_of(a)]
                for i, a in enumerate(func.block.args)}
    # a split reduction's workspaces hold accumulators (one dtype in these kernels)
    pointers |= {f"ws{i}": SIGNATURE[triton_source.acc_dtype(element_of(func.block.args[0]))] for i in range(8)}
    kernels = [getattr(module, n) for n in dir(module) if not n.startswith("_") and isinstance(getattr(module, n), triton.runtime.jit.JITFunction)]
    assert kernels
    for fn in kernels:
        signature = {a: pointers.get(a, "constexpr" if a.endswith("BLOCK") else "i32") for a in fn.arg_names}
        blocks = {k: v for k, v in (("XBLOCK", 8), ("RBLOCK", 64)) if k in fn.arg_names}
        compiled = triton.compile(ASTSource(fn, signature, blocks), target=GPUTarget("cuda", 90, 32),
                                  options={"enable_fp_fusion": False})
        assert compiled.asm["cubin"]


# ---------------------------------------------------------------- index simplification
def test_contiguous_index_is_the_flat_index():
    body = "\n".join([load("a", "in0", "x1 + 33*x0", "f32"), prim("r", "neg", ["a"], "f32"), store("r", "out0", "x1 + 33*x0", "f32")])
    kernel = compile_kernel(kernel_func(body, ["f32", "f32"], 1, "4, 33"), "cpu")
    jitted = kernel.source.split("def numels")[0]  # the kernel itself, not its launchers' grid arithmetic
    assert "in0 + (xindex)" in jitted and "//" not in jitted and "%" not in jitted
    a = randn(4, 33)
    out = torch.empty(4, 33)
    kernel([a, out], [])
    torch.testing.assert_close(out, -a)


def test_symbolic_contiguous_index_needs_no_division():
    body = "\n".join([load("a", "in0", "x0*s1 + x1", "f32"), prim("r", "abs", ["a"], "f32"), store("r", "out0", "x0*s1 + x1", "f32")])
    source = triton_source.KernelSource(kernel_func(body, ["f32", "f32"], 1, '"s0", "s1"', symbols='"s0", "s1"'), "cuda").module()
    assert "tl.load(in0 + (xindex), mask=xmask)" in source and "//" not in source.split("def numels")[0]


def test_merged_runs_of_a_permutation():
    # out[x0, x1, x2] = a[x2, x0, x1] with a: [4, 2, 3]: x0 and x1 walk a's last two
    # dims together (one run, x0_1), x2 separately
    body = "\n".join([load("a", "in0", "6*x2 + 3*x0 + x1", "f32"), store("a", "out0", "12*x0 + 4*x1 + x2", "f32")])
    kernel = compile_kernel(kernel_func(body, ["f32", "f32"], 1, "2, 3, 4"), "cpu")
    assert "x0_1 = xindex // 4" in kernel.source and "x2 = xindex % 4" in kernel.source
    assert "in0 + (x0_1 + 6*x2)" in kernel.source and "out0 + (xindex)" in kernel.source
    a = randn(4, 2, 3)
    out = torch.empty(2, 3, 4)
    kernel([a, out], [])
    torch.testing.assert_close(out, a.permute(1, 2, 0))


def test_merged_index_declines_non_affine_indices():
    from strata.codegen.triton_index import merged_index
    from strata.dialects.types import sym

    dims = {"x": [sym(6), sym(4)], "r": []}
    assert merged_index(sym("floor(x1/2) + x0"), dims) is None
    assert merged_index(sym("x0*x1"), dims) is None
    expr, runs = merged_index(sym("4*x0 + x1 + 7"), dims)
    assert str(expr) == "xindex + 7" and runs == {"xindex": ("x", 0, 1)}
    expr, runs = merged_index(sym("x0 + 6*x1"), dims)  # a transpose: no run merges
    assert runs == {"x0": ("x", 0, 0), "x1": ("x", 1, 1)}


# ---------------------------------------------------------------- masks, loads, layouts
def test_masks_are_left_out_when_tiles_divide_the_sizes():
    exact = compile_kernel(kernel_func(SOFTMAX.replace("x0*s1", "256*x0"), ["f32", "f32"], 1, "4", "256"), "cpu")
    assert "mask" not in exact.source.split("def numels")[0]
    ragged = compile_kernel(kernel_func(SOFTMAX.replace("x0*s1", "250*x0"), ["f32", "f32"], 1, "5", "250"), "cpu")
    assert "xrmask" in ragged.source
    for kernel, (rows, cols) in ((exact, (4, 256)), (ragged, (5, 250))):
        x = randn(rows, cols) * 3
        out = torch.empty(rows, cols)
        kernel([x, out], [])
        torch.testing.assert_close(out, torch.softmax(x, 1))


def test_persistent_kernels_load_everything_first():
    # layer norm: the weight and bias loads come before the first reduction
    body = "\n".join([
        load("a", "in0", "64*x0 + r0", "f32"),
        reduce("s", "sum", "a", "f32"),
        load("w", "in1", "r0", "f32"),
        prim("y", "mul", ["a", "w"], "f32"),
        prim("z", "sub", ["y", "s"], "f32"),
        store("z", "out0", "64*x0 + r0", "f32"),
    ])
    source = compile_kernel(kernel_func(body, ["f32", "f32", "f32"], 2, "8", "64"), "cpu").source
    assert source.index("tl.load(in1") < source.index("tl.reduce")
    assert "eviction_policy='evict_last'" in source.split("tl.load(in1")[1].split("\n")[0]


@pytest.mark.parametrize("load_index, store_index, layout", [
    ("64*x0 + r0", "64*x0 + r0", "inner"),
    ("32*r0 + x0", "x0", "outer"),
    ("32*r0 + x0", "64*x0 + r0", "mixed"),
])
def test_layouts(load_index, store_index, layout):
    body = "\n".join([load("a", "in0", load_index, "f32"), reduce("s", "sum", "a", "f32"), prim("d", "sub", ["a", "s"], "f32")])
    body += "\n" + (store("d", "out0", store_index, "f32") if "r0" in store_index else store("s", "out0", store_index, "f32"))
    assert triton_source.KernelSource(kernel_func(body, ["f32", "f32"], 1, "32", "64"), "cpu").layout == layout


def test_transposed_softmax_tile_is_wide_in_x():
    from strata.codegen.triton_tiles import reduction_tile

    # a softmax of a transposed input walks its rows three times: a narrow persistent
    # tile that reads each column once, several columns wide (H200: 117 us against
    # 275 us for a looped 32x32 tile)
    inner, mixed = reduction_tile(8192, 4096, "inner", passes=3), reduction_tile(8192, 4096, "mixed", passes=3)
    assert inner.persistent and inner.xblock == 1
    assert mixed.persistent and mixed.xblock >= 4
    # a column sum walks its rows once: a wide looped tile, split when there are few columns
    column = reduction_tile(4096, 8192, "outer", splittable=True)
    assert not column.persistent and column.xblock >= 32 and column.split > 1


# ---------------------------------------------------------------- split reductions
SPLIT_ROWS = 40000


def split_kernel(rows: str, cols: str, symbols: str = "", index: str = f"{SPLIT_ROWS}*x0 + r0", dtype: str = "f32"):
    body = "\n".join([
        load("a", "in0", index, dtype),
        load("n", "in1", "x0", dtype),
        reduce("s", "sum", "a", dtype),
        reduce("m", "amax", "a", dtype),
        prim("mean", "div", ["s", "n"], dtype),
        store("mean", "out0", "x0", dtype),
        store("m", "out1", "x0", dtype),
    ])
    return kernel_func(body, [dtype] * 4, 2, rows, cols, symbols=symbols)


def test_long_rows_few_of_them_are_split():
    func = split_kernel("3", str(SPLIT_ROWS))
    kernel = compile_kernel(func, "cpu")
    assert "def k0_split" in kernel.source and "def k0_combine" in kernel.source
    torch.manual_seed(0)
    x, n = randn(3, SPLIT_ROWS), torch.tensor([1.0, 2.0, 4.0])
    mean, top = torch.empty(3), torch.empty(3)
    kernel([x, n, mean, top], [])
    # Against the exact sum: 40000 terms added in f32 (in blocks, then the blocks) stay
    # within eps * sum|x| (over 20 seeds the error reached 0.13 of that bound); torch's
    # own f32 sum, which this compared with before, is another summation order, and the
    # two differed by more than a fixed 1e-4 for some inputs.
    exact = x.double().sum(1) / n.double()
    bound = torch.finfo(torch.float32).eps * x.double().abs().sum(1) / n.double()
    assert ((mean.double() - exact).abs() <= bound).all(), (mean.double() - exact, bound)
    torch.testing.assert_close(top, x.amax(1))


def test_split_with_symbolic_sizes_and_bf16():
    func = split_kernel('"s0"', '"s1"', symbols='"s0", "s1"', index="s1*x0 + r0", dtype="bf16")
    kernel = compile_kernel(func, "cpu")
    for rows, cols in ((2, SPLIT_ROWS + 7), (3, 100)):  # split, then not
        x, n = randn(rows, cols, dtype=torch.bfloat16), torch.full((rows,), 2.0, dtype=torch.bfloat16)
        mean, top = torch.empty(rows, dtype=torch.bfloat16), torch.empty(rows, dtype=torch.bfloat16)
        kernel([x, n, mean, top], [rows, cols])
        torch.testing.assert_close(mean, x.sum(1) / n, rtol=1e-2, atol=1e-2)
        torch.testing.assert_close(top, x.amax(1))


def test_column_sums_of_a_tall_matrix_are_split():
    rows = SPLIT_ROWS
    body = "\n".join([load("a", "in0", "4*r0 + x0", "f32"), reduce("s", "sum", "a", "f32"), store("s", "out0", "x0", "f32")])
    func = kernel_func(body, ["f32", "f32"], 1, "4", str(rows))
    kernel = compile_kernel(func, "cpu")
    assert "k0_combine" in kernel.source
    x = randn(rows, 4)
    (out,) = run(func, [x], [torch.empty(4)])
    torch.testing.assert_close(out, x.sum(0), rtol=1e-5, atol=1e-4)


def test_kernels_storing_rows_after_a_reduction_are_not_split():
    cols = SPLIT_ROWS
    func = kernel_func(SOFTMAX.replace("x0*s1", f"{cols}*x0"), ["f32", "f32"], 1, "2", str(cols))
    assert not triton_source.KernelSource(func, "cpu").splittable


def test_column_sums_that_also_store_rows_are_split():
    """A layer norm's backward: the weight's gradient summed over the rows, where the
    input's gradient (needing no reduction of this kernel) is stored element by element."""
    rows = SPLIT_ROWS
    body = "\n".join([
        load("a", "in0", "4*r0 + x0", "f32"),
        load("b", "in1", "4*r0 + x0", "f32"),
        prim("p", "mul", ["a", "b"], "f32"),
        reduce("s", "sum", "p", "f32"),
        store("s", "out0", "x0", "f32"),
        prim("d", "sub", ["a", "b"], "f32"),
        store("d", "out1", "4*r0 + x0", "f32"),
    ])
    func = kernel_func(body, ["f32"] * 4, 2, "4", str(rows))
    kernel = compile_kernel(func, "cpu")
    assert "k0_combine" in kernel.source
    a, b = randn(rows, 4), randn(rows, 4)
    total, diff = run(func, [a, b], [torch.empty(4), torch.empty(rows, 4)])
    torch.testing.assert_close(total, (a * b).sum(0), rtol=1e-5, atol=1e-3)
    torch.testing.assert_close(diff, a - b)


# ---------------------------------------------------------------- max-autotune
def test_autotune_times_every_candidate_and_caches_the_winner(tmp_path, monkeypatch, capsys):
    from strata.codegen import triton_autotune

    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    func = kernel_func(SOFTMAX.replace("x0*s1", "96*x0"), ["f32", "f32"], 1, "6", "96")
    kernel = compile_kernel(func, "cpu", max_autotune=True)
    tuner = kernel.run.__closure__[0].cell_contents  # the interpreted launcher wraps the Autotuner
    assert isinstance(tuner, triton_autotune.Autotuner)
    x = randn(6, 96) * 3
    out = torch.empty(6, 96)
    kernel([x, out], [])
    torch.testing.assert_close(out, torch.softmax(x, 1))
    (timings,) = tuner.timings.values()
    candidates = triton_autotune.candidates(kernel.module, (6, 96), True)
    assert set(timings) == set(candidates) and len(candidates) > 1
    err, n = capsys.readouterr().err, len(candidates)
    bar = next(line for line in err.splitlines() if line.startswith("strata: autotuning k0 (6x96)"))
    assert f"{n}/{n}" in bar and "best: XBLOCK=" in bar and "(heuristic " in bar
    assert "\r" not in err  # stderr is not a terminal here: only the final line
    from strata.codegen.triton_gpu import _interpreting

    for tile in candidates:  # every candidate computes the same thing
        out.fill_(float("nan"))
        with _interpreting():
            kernel.module.launch_tile(tile, [x, out], [])
        torch.testing.assert_close(out, torch.softmax(x, 1))
    again = compile_kernel(func, "cpu", max_autotune=True)
    again([x, out], [])
    assert "autotuning" not in capsys.readouterr().err  # the winner came from the disk cache
    assert list((tmp_path / "triton-tune").glob("*.json"))


def test_autotune_progress_is_live_on_a_terminal_and_off_when_asked(monkeypatch):
    import io

    from strata.codegen import triton_autotune

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    def tune(stream):
        bar = triton_autotune.progress("strata: autotuning k0 (6x96)", 3, stream)
        for _ in range(3):
            bar.update()
        triton_autotune.done(bar, "XBLOCK=1 warps=4, 0.010 ms")
        return stream.getvalue()

    live = tune(Terminal())
    assert live.startswith("\rstrata: autotuning k0 (6x96)") and " 0/3" in live  # drawn before the first tile
    assert live.endswith("\n") and "3/3" in live.rsplit("\r", 1)[1] and "best: XBLOCK=1 warps=4, 0.010 ms" in live
    monkeypatch.setenv(triton_autotune.PROGRESS_VAR, "0")
    assert tune(Terminal()) == "" and tune(io.StringIO()) == ""


def test_symbolic_dim_beside_a_literal_zero_dim():
    # size 0 with no symbol left, but the store's index names the symbolic dim's neighbours
    body = "\n".join(["  %c = arith.constant false", store("c", "out0", "5*x1 + x2", "i1")])
    kernel = compile_kernel(kernel_func(body, ["i1"], 0, '"s0", 0, 5', symbols='"s0"'), "cpu")
    kernel([torch.empty(0, dtype=torch.bool)], [2])


def test_no_rows_to_split():
    from strata.codegen.triton_tiles import reduction_configs, reduction_tile

    assert reduction_tile(0, 100000, "inner", splittable=True).split == 1
    assert reduction_configs(0, 100000, "inner", True)
    body = "\n".join([load("a", "in0", "100000*x0 + r0", "f32"), reduce("s", "sum", "a", "f32"), store("s", "out0", "x0", "f32")])
    kernel = compile_kernel(kernel_func(body, ["f32", "f32"], 1, "0", "100000"), "cpu")
    kernel([torch.empty(0, 100000), torch.empty(0)], [])
