"""The LLVM CPU code generator (codegen/llvm_cpu.py) against eager PyTorch."""

from __future__ import annotations

import dataclasses
import math
import re

import pytest
import torch
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, f32

from strata.codegen import CodegenError, llvm_jit
from strata.codegen.llvm_cpu import compile_kernel, host_target, optimized_ir
from strata.codegen.llvm_kernel import Target
from strata.dialects.context import parse_module
from strata.dialects.kernel import BufferType, FuncOp, LoadOp, StoreOp
from strata.dialects.prim import ELEMENTWISE, ELEMENTWISE_OPS
from strata.dialects.types import DTYPES, sym

# How a dtype is spelled in IR types.
IR_TYPE = {**{d: d for d in DTYPES}, "u8": "ui8"}


def kernel(text: str) -> FuncOp:
    """The kernel.func written in `text`."""
    func = parse_module("builtin.module {\n" + text + "\n}").body.block.first_op
    func.verify()
    return func


def header(name: str, pointwise: list, reduction: list, num_inputs: int, symbols: list[str]) -> str:
    def dims(ds):
        return ", ".join(f'"{d}"' if isinstance(d, str) else f"{d} : i64" for d in ds)

    names = ", ".join(f'"{s}"' for s in symbols)
    return (
        f"kernel.func @{name} attributes {{pointwise = [{dims(pointwise)}], reduction = [{dims(reduction)}], "
        f'num_inputs = {num_inputs} : i64, symbols = [{names}], sources = ["aten.test.default"]}} {{'
    )


def pointwise_kernel(op_line: str, in_dtypes: list[str], out_dtype: str) -> FuncOp:
    """A 1-D kernel out0[x0] = <op_line> of in0[x0], in1[x0], …; op_line defines %r
    from %a0, %a1, …"""
    out = IR_TYPE[out_dtype]
    args = [f"%in{i}: !kernel.buffer<{IR_TYPE[d]}>" for i, d in enumerate(in_dtypes)] + [f"%out0: !kernel.buffer<{out}>"]
    loads = [
        f'  %a{i} = kernel.load %in{i}["x0"] : !kernel.buffer<{IR_TYPE[d]}> -> {IR_TYPE[d]}'
        for i, d in enumerate(in_dtypes)
    ]
    return kernel(
        "\n".join(
            [
                header("k", ["s0"], [], len(in_dtypes), ["s0"]),
                f"^bb0({', '.join(args)}):",
                *loads,
                f"  {op_line}",
                f'  kernel.store %r, %out0["x0"] : {out}, !kernel.buffer<{out}>',
                "}",
            ]
        )
    )


def run(func: FuncOp, inputs: list[torch.Tensor], outputs: list[torch.Tensor], symbols: list[int]) -> list:
    """Compiles `func` and runs it once; returns `outputs`."""
    compile_kernel(func)(inputs + outputs, symbols)
    return outputs


def elementwise(name: str, dtype: str, args: list[torch.Tensor]) -> torch.Tensor:
    """prim.<name> applied by the generated code to 1-D tensors of `dtype`."""
    t = IR_TYPE[dtype]
    result = "i1" if ELEMENTWISE[name][2] else dtype
    operands = ", ".join(f"%a{i}" for i in range(len(args)))
    types = ", ".join([t] * len(args))
    func = pointwise_kernel(f"%r = prim.{name} {operands} : ({types}) -> {IR_TYPE[result]}", [dtype] * len(args), result)
    (out,) = run(func, args, [torch.empty(args[0].shape, dtype=DTYPES[result])], [args[0].numel()])
    return out


def reference(name: str, args: list[torch.Tensor]) -> torch.Tensor:
    """What the prim dialect defines prim.<name> to compute."""
    return ELEMENTWISE[name][3](*args)


def random_tensor(dtype: str, shape=(257,)) -> torch.Tensor:
    torch_dtype = DTYPES[dtype]
    if dtype == "i1":
        return torch.rand(shape) < 0.5
    if torch_dtype.is_floating_point:
        return (torch.randn(shape) * 3).to(torch_dtype)
    info = torch.iinfo(torch_dtype)
    return torch.randint(max(info.min, -1000), min(info.max, 1000) + 1, shape, dtype=torch_dtype)


# ---------------------------------------------------------------- structure
SOFTMAX = """
kernel.func @softmax attributes {pointwise = ["s0"], reduction = ["s1"], num_inputs = 1 : i64, symbols = ["s0", "s1"], sources = ["aten._softmax.default", "aten.exp.default"]} {
^bb0(%in0: !kernel.buffer<f32>, %out0: !kernel.buffer<f32>):
  %a = kernel.load %in0["s1*x0 + r0"] : !kernel.buffer<f32> -> f32
  %m = kernel.reduce "amax" %a : f32 -> f32
  %d = prim.sub %a, %m : (f32, f32) -> f32
  %e = prim.exp %d : (f32) -> f32
  %s = kernel.reduce "sum" %e : f32 -> f32
  %r = prim.div %e, %s : (f32, f32) -> f32
  kernel.store %r, %out0["s1*x0 + r0"] : f32, !kernel.buffer<f32>
}
"""


def test_source_names_kernel_and_aten_ops():
    compiled = compile_kernel(kernel(SOFTMAX))
    lines = compiled.source.splitlines()
    assert compiled.name == "softmax"
    assert lines[:2] == ["; strata kernel softmax", "; from aten ops: aten._softmax.default, aten.exp.default"]


def test_softmax_rows_of_every_size_with_one_compile():
    compiled = compile_kernel(kernel(SOFTMAX))
    for rows, cols in [(3, 1), (5, 7), (4, 8), (6, 1000), (2, 4096 + 3)]:
        x = torch.randn(rows, cols) * 4
        out = torch.empty(rows, cols)
        compiled([x, out], [rows, cols])
        torch.testing.assert_close(out, torch.softmax(x, -1))


def test_pointwise_chain_with_broadcast_and_transposed_loads():
    func = kernel(
        header("chain", ["s0", "s1"], [], 3, ["s0", "s1"])
        + """
^bb0(%a: !kernel.buffer<f32>, %bias: !kernel.buffer<f32>, %t: !kernel.buffer<f32>, %out: !kernel.buffer<f32>):
  %x = kernel.load %a["s1*x0 + x1"] : !kernel.buffer<f32> -> f32
  %y = kernel.load %bias["x1"] : !kernel.buffer<f32> -> f32
  %z = kernel.load %t["s0*x1 + x0"] : !kernel.buffer<f32> -> f32
  %half = arith.constant 0.5 : f32
  %s = prim.add %x, %y : (f32, f32) -> f32
  %p = prim.mul %s, %z : (f32, f32) -> f32
  %q = prim.mul %p, %half : (f32, f32) -> f32
  %r = prim.tanh %q : (f32) -> f32
  kernel.store %r, %out["s1*x0 + x1"] : f32, !kernel.buffer<f32>
}"""
    )
    a, bias, t = torch.randn(13, 37), torch.randn(37), torch.randn(37, 13)
    (out,) = run(func, [a, bias, t], [torch.empty(13, 37)], [13, 37])
    torch.testing.assert_close(out, torch.tanh((a + bias) * t.t() * 0.5))


def test_sum_over_a_non_last_dim():
    # x0, x1 walk dims 0 and 2 of a [4, s1, s2] tensor; the reduction walks dim 1.
    func = kernel(
        header("sum1", [4, "s2"], ["s1"], 1, ["s1", "s2"])
        + """
^bb0(%a: !kernel.buffer<f32>, %out: !kernel.buffer<f32>):
  %x = kernel.load %a["s1*s2*x0 + s2*r0 + x1"] : !kernel.buffer<f32> -> f32
  %s = kernel.reduce "sum" %x : f32 -> f32
  kernel.store %s, %out["s2*x0 + x1"] : f32, !kernel.buffer<f32>
}"""
    )
    a = torch.randn(4, 300, 9)
    (out,) = run(func, [a], [torch.empty(4, 9)], [300, 9])
    torch.testing.assert_close(out, a.sum(1))


def test_sum_over_two_dims():
    func = kernel(
        header("sum12", ["s0"], ["s1", "s2"], 1, ["s0", "s1", "s2"])
        + """
^bb0(%a: !kernel.buffer<f32>, %out: !kernel.buffer<f32>):
  %x = kernel.load %a["s1*s2*x0 + s2*r0 + r1"] : !kernel.buffer<f32> -> f32
  %s = kernel.reduce "sum" %x : f32 -> f32
  kernel.store %s, %out["x0"] : f32, !kernel.buffer<f32>
}"""
    )
    a = torch.randn(5, 30, 17)
    (out,) = run(func, [a], [torch.empty(5)], [5, 30, 17])
    torch.testing.assert_close(out, a.sum((1, 2)))


def test_layer_norm_runs_reductions_in_stages():
    # mean, then the variance around it, then a row store and two per-row outputs.
    func = kernel(
        header("layer_norm", ["s0"], ["s1"], 1, ["s0", "s1"])
        + """
^bb0(%in: !kernel.buffer<f32>, %y: !kernel.buffer<f32>, %mean_out: !kernel.buffer<f32>, %rstd_out: !kernel.buffer<f32>):
  %x = kernel.load %in["s1*x0 + r0"] : !kernel.buffer<f32> -> f32
  %n64 = kernel.index "s1" : i64
  %n = prim.convert_element_type %n64 {dtype = "f32"} : (i64) -> f32
  %sum = kernel.reduce "sum" %x : f32 -> f32
  %mean = prim.div %sum, %n : (f32, f32) -> f32
  %c = prim.sub %x, %mean : (f32, f32) -> f32
  %c2 = prim.mul %c, %c : (f32, f32) -> f32
  %ss = kernel.reduce "sum" %c2 : f32 -> f32
  %var = prim.div %ss, %n : (f32, f32) -> f32
  %eps = arith.constant 1.0e-05 : f32
  %ve = prim.add %var, %eps : (f32, f32) -> f32
  %rstd = prim.rsqrt %ve : (f32) -> f32
  %r = prim.mul %c, %rstd : (f32, f32) -> f32
  kernel.store %r, %y["s1*x0 + r0"] : f32, !kernel.buffer<f32>
  kernel.store %mean, %mean_out["x0"] : f32, !kernel.buffer<f32>
  kernel.store %rstd, %rstd_out["x0"] : f32, !kernel.buffer<f32>
}"""
    )
    x = torch.randn(6, 333) * 3 + 1
    y, mean, rstd = run(func, [x], [torch.empty(6, 333), torch.empty(6), torch.empty(6)], [6, 333])
    expected, expected_mean, expected_rstd = torch.native_layer_norm(x, [333], None, None, 1e-5)
    torch.testing.assert_close(y, expected)
    torch.testing.assert_close(mean, expected_mean.squeeze(1))
    torch.testing.assert_close(rstd, expected_rstd.squeeze(1))


def test_index_expressions():
    index = "floor(x0/3) + Mod(x0, 5) + floor((x0 + 2*s0)/6) + ceiling(x0/4) + Max(x0, 7) + x0**2"
    func = pointwise_kernel(f'%r = kernel.index "{index}" : i32', [], "i32")
    (out,) = run(func, [], [torch.empty(50, dtype=torch.int32)], [50])
    x = torch.arange(50)
    expected = x // 3 + x % 5 + (x + 100) // 6 + (x + 3) // 4 + x.clamp(min=7) + x * x
    torch.testing.assert_close(out, expected.int())


def test_empty_domains():
    func = kernel(
        header("reductions", ["s0"], ["s1"], 1, ["s0", "s1"])
        + """
^bb0(%in: !kernel.buffer<f32>, %o0: !kernel.buffer<f32>, %o1: !kernel.buffer<f32>, %o2: !kernel.buffer<f32>, %o3: !kernel.buffer<f32>):
  %x = kernel.load %in["s1*x0 + r0"] : !kernel.buffer<f32> -> f32
  %sum = kernel.reduce "sum" %x : f32 -> f32
  %prod = kernel.reduce "prod" %x : f32 -> f32
  %amax = kernel.reduce "amax" %x : f32 -> f32
  %amin = kernel.reduce "amin" %x : f32 -> f32
  kernel.store %sum, %o0["x0"] : f32, !kernel.buffer<f32>
  kernel.store %prod, %o1["x0"] : f32, !kernel.buffer<f32>
  kernel.store %amax, %o2["x0"] : f32, !kernel.buffer<f32>
  kernel.store %amin, %o3["x0"] : f32, !kernel.buffer<f32>
}"""
    )
    compiled = compile_kernel(func)
    outs = [torch.full((3,), 42.0) for _ in range(4)]
    compiled([torch.empty(3, 0), *outs], [3, 0])
    assert [o.tolist() for o in outs] == [[0.0] * 3, [1.0] * 3, [-math.inf] * 3, [math.inf] * 3]
    compiled([torch.empty(0, 5), *[torch.empty(0) for _ in range(4)]], [0, 5])

    x = torch.randn(4, 5)
    outs = [torch.empty(4) for _ in range(4)]
    compiled([x, *outs], [4, 5])
    for out, expected in zip(outs, [x.sum(1), x.prod(1), x.amax(1), x.amin(1)]):
        torch.testing.assert_close(out, expected)


def test_kernel_built_in_python_with_constant_domain():
    # Built with the dialect's builders (no SSA names), sized without symbols.
    func = FuncOp("scale", [BufferType(f32), BufferType(f32)], 1, [6, 5], [], [], ["aten.mul.Tensor"])
    x, out = func.block.args
    load = LoadOp(x, sym("5*x0 + x1"))
    two = arith.ConstantOp(FloatAttr(2.0, f32))
    mul = ELEMENTWISE_OPS["mul"](load.result, two.result)
    func.block.add_ops([load, two, mul, StoreOp(mul.result, out, sym("x0 + 6*x1"))])
    func.verify()
    a = torch.randn(6, 5)
    result = torch.empty(5, 6)
    compile_kernel(func)([a, result], [])
    torch.testing.assert_close(result, (a * 2).t())


def test_nan_propagates_through_maximum_and_amax():
    a = torch.tensor([1.0, math.nan, 3.0, -1.0])
    b = torch.tensor([math.nan, 2.0, 1.0, -2.0])
    torch.testing.assert_close(elementwise("maximum", "f32", [a, b]), torch.maximum(a, b), equal_nan=True)
    torch.testing.assert_close(elementwise("minimum", "f32", [a, b]), torch.minimum(a, b), equal_nan=True)

    func = kernel(
        header("amax", ["s0"], ["s1"], 1, ["s0", "s1"])
        + """
^bb0(%in: !kernel.buffer<f32>, %o0: !kernel.buffer<f32>, %o1: !kernel.buffer<f32>):
  %x = kernel.load %in["s1*x0 + r0"] : !kernel.buffer<f32> -> f32
  %amax = kernel.reduce "amax" %x : f32 -> f32
  %amin = kernel.reduce "amin" %x : f32 -> f32
  kernel.store %amax, %o0["x0"] : f32, !kernel.buffer<f32>
  kernel.store %amin, %o1["x0"] : f32, !kernel.buffer<f32>
}"""
    )
    x = torch.randn(5, 100)
    x[1, 17] = math.nan
    x[3, 99] = math.nan
    amax, amin = run(func, [x], [torch.empty(5), torch.empty(5)], [5, 100])
    torch.testing.assert_close(amax, x.amax(1), equal_nan=True)
    torch.testing.assert_close(amin, x.amin(1), equal_nan=True)


@pytest.mark.parametrize(
    "kind, dtype",
    [
        ("sum", "i64"), ("prod", "i32"), ("amax", "i8"), ("amin", "u8"),
        ("amax", "i1"), ("amin", "i1"), ("sum", "bf16"), ("amax", "f16"),
    ],
)
def test_reductions_of_other_dtypes(kind, dtype):
    t = IR_TYPE[dtype]
    func = kernel(
        header("reduce", ["s0"], ["s1"], 1, ["s0", "s1"])
        + f"""
^bb0(%in: !kernel.buffer<{t}>, %out: !kernel.buffer<{t}>):
  %x = kernel.load %in["s1*x0 + r0"] : !kernel.buffer<{t}> -> {t}
  %s = kernel.reduce "{kind}" %x : {t} -> {t}
  kernel.store %s, %out["x0"] : {t}, !kernel.buffer<{t}>
}}"""
    )
    x = random_tensor(dtype, (7, 33))
    if kind == "prod":
        x = x % 3 + 1
    (out,) = run(func, [x], [torch.empty(7, dtype=DTYPES[dtype])], [7, 33])
    reduce = {"sum": torch.sum, "prod": torch.prod, "amax": torch.amax, "amin": torch.amin}[kind]
    expected = reduce(x.float() if dtype in ("bf16", "f16") else x, 1).to(DTYPES[dtype])
    torch.testing.assert_close(out, expected)


# ---------------------------------------------------------------- scalar ops
UNIT = ("asin", "acos", "atanh", "erfinv")
POSITIVE = ("log", "log2", "log10", "log1p", "sqrt", "rsqrt", "lgamma")
FLOAT_UNARY = [n for n, (arity, accepts, _, _) in ELEMENTWISE.items() if arity == 1 and accepts("f32")]


@pytest.mark.parametrize("name", FLOAT_UNARY)
def test_float_unary(name):
    x = torch.randn(1001) * 3
    x[:3] = torch.tensor([math.nan, math.inf, -math.inf])
    if name in UNIT:
        x[3:] = torch.rand(998) * 1.98 - 0.99
    elif name in POSITIVE:
        x[3:] = x[3:].abs() + 0.01
    elif name == "acosh":
        x[3:] = x[3:].abs() + 1
    elif name == "round":
        x[3:] = torch.arange(-499, 499) / 2  # ties go to even
    torch.testing.assert_close(elementwise(name, "f32", [x]), reference(name, [x]), equal_nan=True)


FLOAT_BINARY = [n for n, (arity, accepts, _, _) in ELEMENTWISE.items() if arity == 2 and accepts("f32")]


@pytest.mark.parametrize("name", FLOAT_BINARY)
def test_float_binary(name):
    x, y = torch.randn(1001) * 4, torch.randn(1001) * 4
    if name == "pow":
        x = x.abs()
    y[:4] = torch.tensor([0.0, -0.0, math.nan, 3.0])
    x[:4] = torch.tensor([5.0, -5.0, 1.0, math.nan])
    torch.testing.assert_close(elementwise(name, "f32", [x, y]), reference(name, [x, y]), equal_nan=True)


INT_BINARY = (
    "add sub mul div floordiv remainder fmod maximum minimum pow bitwise_and bitwise_or bitwise_xor "
    "shift_left shift_right eq ne lt le gt ge"
).split()


@pytest.mark.parametrize("dtype", ["i8", "i32", "i64", "u8"])
@pytest.mark.parametrize("name", INT_BINARY)
def test_int_binary(name, dtype):
    x, y = random_tensor(dtype), random_tensor(dtype)
    if name in ("div", "floordiv", "remainder", "fmod"):
        y[y == 0] = 1
        if DTYPES[dtype].is_signed:  # every sign combination
            x[:4], y[:4] = torch.tensor([7, -7, 7, -7]), torch.tensor([2, 2, -2, -2])
        if dtype == "i8":  # MIN / -1 wraps (eager traps on it for i32 and i64)
            x[4], y[4] = -128, -1
    if name == "pow":
        x, y = x % 5, y % 9
        if DTYPES[dtype].is_signed:
            x[:4], y[:4] = torch.tensor([1, -1, -1, 2]), torch.tensor([-3, -3, -2, -1])
    if name.startswith("shift"):
        y = y % 12 - 2 if DTYPES[dtype].is_signed else y % 12
    torch.testing.assert_close(elementwise(name, dtype, [x, y]), reference(name, [x, y]))


@pytest.mark.parametrize("dtype", ["i16", "i64", "u8"])
@pytest.mark.parametrize("name", ["neg", "abs", "sign", "bitwise_not", "round", "signbit", "isnan"])
def test_int_unary(name, dtype):
    x = random_tensor(dtype)
    torch.testing.assert_close(elementwise(name, dtype, [x]), reference(name, [x]))


@pytest.mark.parametrize(
    "name", "add mul maximum logical_and logical_or logical_xor lt ne logical_not bitwise_not".split()
)
def test_bool_ops(name):
    args = [random_tensor("i1") for _ in range(ELEMENTWISE[name][0])]
    torch.testing.assert_close(elementwise(name, "i1", args), reference(name, args))


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("name", ["add", "mul", "div", "exp", "sigmoid", "gt", "maximum"])
def test_16_bit_float_ops(name, dtype):
    args = [random_tensor(dtype) for _ in range(ELEMENTWISE[name][0])]
    torch.testing.assert_close(elementwise(name, dtype, args), reference(name, args))


def test_16_bit_floordiv_rounds_each_step_like_eager():
    # ATen computes floor_divide on f16 one rounded op at a time: -22.125 // -0.014007…
    # is 1579 exactly, but 1580 in eager.
    x = torch.cat([torch.tensor([-22.125]), torch.randn(2000) * 1e3]).half()
    y = torch.cat([torch.tensor([-0.014007568359375]), torch.randn(2000)]).half()
    out = elementwise("floordiv", "f16", [x, y])
    assert out[0].item() == 1580
    torch.testing.assert_close(out, torch.floor_divide(x, y), rtol=0, atol=0)


def test_comparison_and_where():
    func = pointwise_kernel(
        "%c = prim.gt %a0, %a1 : (f32, f32) -> i1\n  %r = prim.where %c, %a0, %a2 : (i1, f32, f32) -> f32",
        ["f32", "f32", "f32"],
        "f32",
    )
    a, b, c = torch.randn(300), torch.randn(300), torch.randn(300)
    a[0] = math.nan
    (out,) = run(func, [a, b, c], [torch.empty(300)], [300])
    torch.testing.assert_close(out, torch.where(a > b, a, c))


CONVERSIONS = [
    ("f32", "bf16"), ("f32", "f16"), ("bf16", "f32"), ("f16", "f32"), ("bf16", "f16"), ("f64", "bf16"),
    ("f32", "i32"), ("f64", "i64"), ("f32", "i8"), ("f32", "u8"), ("bf16", "i16"), ("f32", "i1"), ("bf16", "i1"),
    ("i1", "f32"), ("i1", "bf16"), ("i1", "i32"), ("i64", "bf16"), ("i32", "f16"), ("i64", "f64"), ("u8", "f32"),
    ("i32", "i8"), ("i8", "i64"), ("u8", "i32"), ("i64", "u8"), ("i32", "i1"),
]


@pytest.mark.parametrize("src, dst", CONVERSIONS)
def test_convert_element_type(src, dst):
    x = random_tensor(src)
    if DTYPES[src].is_floating_point:
        x[:4] = torch.tensor([0.0, -0.0, 2.9, -2.9])
        if dst in ("u8", "i8"):
            x = x.abs() % 100 if dst == "u8" else x % 100
        elif DTYPES[dst].is_floating_point or dst == "i1":
            x[4] = math.nan
    func = pointwise_kernel(
        f'%r = prim.convert_element_type %a0 {{dtype = "{dst}"}} : ({IR_TYPE[src]}) -> {IR_TYPE[dst]}', [src], dst
    )
    (out,) = run(func, [x], [torch.empty(x.shape, dtype=DTYPES[dst])], [x.numel()])
    torch.testing.assert_close(out, x.to(DTYPES[dst]), equal_nan=True, rtol=0, atol=0)


def test_bf16_rounds_to_nearest_even():
    ulp = 2.0**-7
    x = torch.tensor(
        [1 + ulp / 2, 1 + 3 * ulp / 2, 1 + ulp / 2 + 2**-20, 1e-40, -3e-39, 3.4e38, math.inf, math.nan],
        dtype=torch.float32,
    )
    func = pointwise_kernel('%r = prim.convert_element_type %a0 {dtype = "bf16"} : (f32) -> bf16', ["f32"], "bf16")
    (out,) = run(func, [x], [torch.empty(x.shape, dtype=torch.bfloat16)], [x.numel()])
    torch.testing.assert_close(out, x.bfloat16(), equal_nan=True, rtol=0, atol=0)
    assert out[:3].float().tolist() == [1.0, 1 + 2 * ulp, 1 + ulp]


# ---------------------------------------------------------------- compilation
ROW_SUM = """
kernel.func @row_sum attributes {pointwise = ["s0"], reduction = ["s1"], num_inputs = 1 : i64, symbols = ["s0", "s1"], sources = ["aten.sum.dim_IntList"]} {
^bb0(%in0: !kernel.buffer<f32>, %out0: !kernel.buffer<f32>):
  %a = kernel.load %in0["s1*x0 + r0"] : !kernel.buffer<f32> -> f32
  %s = kernel.reduce "sum" %a : f32 -> f32
  kernel.store %s, %out0["x0"] : f32, !kernel.buffer<f32>
}
"""


def test_optimized_code_is_vectorized():
    add = pointwise_kernel("%r = prim.add %a0, %a1 : (f32, f32) -> f32", ["f32", "f32"], "f32")
    vector = re.compile(r"<(4|8|16|32|64) x float>")
    assert vector.search(optimized_ir(add))
    assert vector.search(optimized_ir(kernel(ROW_SUM)))


def test_disk_cache_hit_and_corrupt_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATA_CACHE_DIR", str(tmp_path))
    func = kernel(ROW_SUM)
    compile_kernel(func)
    (entry,) = (tmp_path / llvm_jit.CACHE_KIND).iterdir()
    x = torch.randn(3, 10)
    out = torch.empty(3)

    def no_compiling(ir_text):
        raise AssertionError("compiled although the object code is cached")

    with monkeypatch.context() as m:
        m.setattr(llvm_jit, "optimize", no_compiling)
        cached = compile_kernel(func)
    cached([x, out], [3, 10])
    torch.testing.assert_close(out, x.sum(1))

    entry.write_bytes(entry.read_bytes()[:100] + b"garbage")
    compile_kernel(func)([x, out], [3, 10])  # a miss: compiled again and rewritten
    torch.testing.assert_close(out, x.sum(1))
    with monkeypatch.context() as m:
        m.setattr(llvm_jit, "optimize", no_compiling)
        compile_kernel(func)


def test_unsupported_op_raises_codegen_error():
    func = pointwise_kernel("%r = arith.addf %a0, %a0 : f32", ["f32"], "f32")
    with pytest.raises(CodegenError, match="arith.addf"):
        compile_kernel(func)


# ---------------------------------------------------------------- vector math
def _ulps(got: torch.Tensor, exact: torch.Tensor) -> torch.Tensor:
    """|got - exact| in units of the last place of exact rounded to f32 (0 where the
    exact value is not a finite f32)."""
    rounded = exact.float()
    spacing = (torch.nextafter(rounded.abs(), torch.tensor(math.inf)) - rounded.abs()).double()
    error = (got.double() - exact).abs() / spacing
    return torch.where(torch.isfinite(rounded) & torch.isfinite(exact), error, torch.zeros_like(error))


def _f32_samples(lo: float, hi: float, n: int = 50_000) -> torch.Tensor:
    """Every binade between lo and hi (random bit patterns), a dense grid, and the
    specials: ±0, ±inf, NaN, the smallest denormals and normals."""
    g = torch.Generator().manual_seed(7)
    bits = torch.randint(-(2**31), 2**31 - 1, (n,), generator=g, dtype=torch.int64).to(torch.int32)
    random = bits.view(torch.float32)
    random = random[(random > lo) & (random < hi)]
    specials = torch.tensor([0.0, -0.0, math.inf, -math.inf, math.nan, 1e-45, -1e-45, 1e-40, -1e-40, 1.17e-38, -1.17e-38])
    return torch.cat([specials, torch.linspace(lo, hi, n), torch.linspace(max(lo, -3.0), min(hi, 3.0), n), random])


# name: (domain, max ulps against float64). Eager's own f32 routines (Sleef u10) stay
# within 1 ulp; ours within 1 for exp, log, erf, 1.5 for tanh, 2.5 for the composed ones.
VECTOR_MATH = {
    "exp": ((-110.0, 100.0), 1.0),
    "log": ((-1.0, 3.4e38), 1.0),
    "tanh": ((-20.0, 20.0), 1.5),
    "erf": ((-6.0, 6.0), 1.5),
    "sigmoid": ((-80.0, 80.0), 2.5),
    "expm1": ((-30.0, 90.0), 2.0),
    "log1p": ((-1.0, 3.4e38), 2.5),
    "exp2": ((-160.0, 130.0), 2.0),
    "log2": ((-1.0, 3.4e38), 2.5),
    "log10": ((-1.0, 3.4e38), 2.5),
}


# The host's code (AVX-512 here: vscalefps in exp) and the generic vector code that any
# LLVM target gets (256-bit vectors, exponent bits built by hand).
GENERIC = Target(vector_bits=256, threads="pool", avx512=False)


@pytest.fixture
def one_thread():
    """torch's own ops on one thread: on a machine shared with other processes, every
    OpenMP region of the reference computations may wait milliseconds for a worker."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize("target", [None, GENERIC], ids=["host", "generic"])
@pytest.mark.parametrize("name", list(VECTOR_MATH))
def test_vector_math_accuracy_over_every_binade(name, target, one_thread):
    (lo, hi), max_ulps = VECTOR_MATH[name]
    x = _f32_samples(lo, hi)
    func = pointwise_kernel(f"%r = prim.{name} %a0 : (f32) -> f32", ["f32"], "f32")
    got = torch.empty_like(x)
    compile_kernel(func, target)([x, got], [x.numel()])
    exact = getattr(torch, name)(x.double())
    # Where the exact result is a denormal, count ulps of the smallest normal's spacing.
    tiny = exact.abs() < 1.1754943508222875e-38
    error = torch.where(tiny, (got.double() - exact).abs() / 2.0**-149, _ulps(got, exact))
    worst = error.max().item()
    assert worst <= max_ulps, f"{name}: {worst:.2f} ulps at x = {x[error.argmax()].item()!r}"
    # NaN where the result is NaN, infinities and signed zeros exactly …
    rounded = exact.float()
    special = ~torch.isfinite(rounded) | (rounded == 0)
    assert torch.equal(got[special].isnan(), rounded[special].isnan())
    kept = special & ~rounded.isnan()
    assert torch.equal(got[kept], rounded[kept]) and torch.equal(got[kept].signbit(), rounded[kept].signbit())
    # … and within eager's tolerance of eager itself.
    torch.testing.assert_close(got, getattr(torch, name)(x), equal_nan=True)


def test_vector_math_is_not_a_libm_call_per_element():
    func = pointwise_kernel("%r = prim.tanh %a0 : (f32) -> f32", ["f32"], "f32")
    ir_text = optimized_ir(func)
    assert re.search(r"<\d+ x float>", ir_text)
    assert not re.search(r"@(expf|tanhf|erff|logf)\b", ir_text)


# ---------------------------------------------------------------- lanes, tails, threads
def _pointwise_2d(op_line: str) -> FuncOp:
    return kernel(
        header("pw", ["s0", "s1"], [], 1, ["s0", "s1"])
        + f"""
^bb0(%in0: !kernel.buffer<f32>, %out0: !kernel.buffer<f32>):
  %a = kernel.load %in0["s1*x0 + x1"] : !kernel.buffer<f32> -> f32
  {op_line}
  kernel.store %r, %out0["s1*x0 + x1"] : f32, !kernel.buffer<f32>
}}"""
    )


def test_tails_of_every_length():
    compiled = compile_kernel(_pointwise_2d("%r = prim.exp %a : (f32) -> f32"))
    row_sums = compile_kernel(kernel(ROW_SUM))
    for cols in list(range(1, 70)) + [127, 129, 1000]:
        x = torch.randn(3, cols)
        out = torch.full((3, cols), 42.0)
        compiled([x, out], [3, cols])
        torch.testing.assert_close(out, torch.exp(x))
        sums = torch.empty(3)
        row_sums([x, sums], [3, cols])
        torch.testing.assert_close(sums, x.sum(1))


# Where a kernel's shares run: the pool's own workers, torch's OpenMP team through the
# pool, or a kernel that calls OpenMP itself.
RUNTIMES = {"workers": ("pool", "pool"), "openmp-team": ("pool", "omp"), "openmp": ("omp", "auto")}


@pytest.mark.parametrize("runtime", list(RUNTIMES))
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("shape", [(1501, 777), (3, 400_003), (400_001, 3)])
def test_threads_split_the_domain_exactly(shape, threads, runtime, monkeypatch):
    # Each shape is past the threshold that forks threads; the results must not
    # depend on how many there are, on how the domain is cut, or on the runtime.
    from strata.codegen import llvm_pool

    codegen, mode = RUNTIMES[runtime]
    monkeypatch.setenv("STRATA_CPU_THREADS", mode)
    target = dataclasses.replace(host_target(), threads=codegen)
    llvm_pool.adapt(force=True)
    monkeypatch.setitem(llvm_pool._state, "next", math.inf)  # no switching mid-test
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        compiled = compile_kernel(_pointwise_2d("%r = prim.tanh %a : (f32) -> f32"), target)
        torch.manual_seed(0)
        x = torch.randn(*shape)
        out = torch.full(shape, math.nan)
        compiled([x, out], list(shape))
        torch.testing.assert_close(out, torch.tanh(x))
        softmax = compile_kernel(kernel(SOFTMAX), target)
        out = torch.full(shape, math.nan)
        softmax([x, out], list(shape))
        torch.testing.assert_close(out, torch.softmax(x, -1))
        column = torch.full((shape[1],), math.nan)
        compile_kernel(kernel(COLUMN_SUM), target)([x, column], list(shape))
        # 400,001 f32 terms a column: judged against the exact (f64) sum, which any order of
        # f32 additions misses by about sqrt(n)·eps·|partial sums| (~1e-4 here)
        torch.testing.assert_close(column.double(), x.double().sum(0), rtol=0, atol=1e-3)
    finally:
        torch.set_num_threads(before)
        monkeypatch.undo()
        llvm_pool.adapt(force=True)


COLUMN_SUM = """
kernel.func @column_sum attributes {pointwise = ["s1"], reduction = ["s0"], num_inputs = 1 : i64, symbols = ["s0", "s1"], sources = ["aten.sum.dim_IntList"]} {
^bb0(%in0: !kernel.buffer<f32>, %out0: !kernel.buffer<f32>):
  %a = kernel.load %in0["s1*r0 + x0"] : !kernel.buffer<f32> -> f32
  %s = kernel.reduce "sum" %a : f32 -> f32
  kernel.store %s, %out0["x0"] : f32, !kernel.buffer<f32>
}
"""


def test_sums_of_long_rows_and_columns_stay_accurate():
    # Blocked f32 partial sums flushed into f64: as close to the exact sum as eager.
    x = torch.rand(2, 1_000_003) * 2 - 0.9
    sums = torch.empty(2)
    compile_kernel(kernel(ROW_SUM))([x, sums], [2, x.shape[1]])
    exact = x.double().sum(1)
    assert (sums.double() - exact).abs().max() <= (x.sum(1).double() - exact).abs().max() + 1e-3
    torch.testing.assert_close(sums, exact.float(), rtol=1e-6, atol=1e-3)
    y = torch.rand(100_003, 37) * 2 - 0.9
    columns = torch.empty(37)
    compile_kernel(kernel(COLUMN_SUM))([y, columns], list(y.shape))
    torch.testing.assert_close(columns, y.double().sum(0).float(), rtol=1e-6, atol=1e-3)


def test_max_and_min_propagate_nan_along_lanes_and_across_them():
    kinds = {"amax": torch.amax, "amin": torch.amin}
    for kind, reduce in kinds.items():
        rows = kernel(ROW_SUM.replace('"sum"', f'"{kind}"'))
        columns = kernel(COLUMN_SUM.replace('"sum"', f'"{kind}"'))
        x = torch.randn(9, 75)
        x[2, 70] = x[5, 0] = math.nan  # one in a row's partial last vector
        x[7] = -math.inf
        out = torch.empty(9)
        compile_kernel(rows)([x, out], [9, 75])
        torch.testing.assert_close(out, reduce(x, 1), equal_nan=True)
        out = torch.empty(75)
        compile_kernel(columns)([x, out], [9, 75])
        torch.testing.assert_close(out, reduce(x, 0), equal_nan=True)


def test_softmax_of_a_transposed_input_writes_rows_through_a_tile():
    # Lanes walk the rows (loads are contiguous along them); the stores are
    # contiguous along r, so they go through a tile transposed in L1.
    func = kernel(
        header("softmax_t", ["s0"], ["s1"], 1, ["s0", "s1"])
        + """
^bb0(%in0: !kernel.buffer<f32>, %out0: !kernel.buffer<f32>):
  %a = kernel.load %in0["x0 + s0*r0"] : !kernel.buffer<f32> -> f32
  %m = kernel.reduce "amax" %a : f32 -> f32
  %d = prim.sub %a, %m : (f32, f32) -> f32
  %e = prim.exp %d : (f32) -> f32
  %s = kernel.reduce "sum" %e : f32 -> f32
  %r = prim.div %e, %s : (f32, f32) -> f32
  kernel.store %r, %out0["s1*x0 + r0"] : f32, !kernel.buffer<f32>
}"""
    )
    compiled = compile_kernel(func)
    assert "r0.tile" in compiled.source
    for rows, cols in [(1, 1), (5, 3), (37, 53), (64, 16), (100, 17), (33, 64)]:
        x = torch.randn(cols, rows).t()
        out = torch.empty(rows, cols)
        compiled([x.t().contiguous(), out], [rows, cols])
        torch.testing.assert_close(out, torch.softmax(x, -1))


def test_costly_row_values_are_computed_once_per_row():
    # softmax: exp(x - max) is kept in a scratch row by the sum's loop and read back
    # by the loop that stores, instead of being computed again.
    # Once in the sum's vector loop and once for its partial last vector; without the
    # scratch row the storing loop would have the same two.
    compiled = compile_kernel(kernel(SOFTMAX))
    assert len(re.findall(r'call <\d+ x float> @"strata\.math\.exp', compiled.source)) == 2
    assert re.search(r"call ptr @\"?malloc", compiled.source) and re.search(r"@\"?free", compiled.source)


def test_row_values_of_two_reduction_dims_are_cached_and_reread():
    func = kernel(
        header("softmax2", ["s0"], ["s1", "s2"], 1, ["s0", "s1", "s2"])
        + """
^bb0(%in0: !kernel.buffer<f32>, %out0: !kernel.buffer<f32>):
  %a = kernel.load %in0["s1*s2*x0 + s2*r0 + r1"] : !kernel.buffer<f32> -> f32
  %m = kernel.reduce "amax" %a : f32 -> f32
  %d = prim.sub %a, %m : (f32, f32) -> f32
  %e = prim.exp %d : (f32) -> f32
  %s = kernel.reduce "sum" %e : f32 -> f32
  %r = prim.div %e, %s : (f32, f32) -> f32
  kernel.store %r, %out0["s1*s2*x0 + s2*r0 + r1"] : f32, !kernel.buffer<f32>
}"""
    )
    x = torch.randn(4, 7, 19)
    out = torch.empty_like(x)
    compile_kernel(func)([x, out], [4, 7, 19])
    torch.testing.assert_close(out, torch.softmax(x.reshape(4, -1), -1).reshape(4, 7, 19))


def test_convolution_is_a_library_call_and_batch_norm_fuses_around_it():
    import warnings

    import strata
    from strata.dialects import prim

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(6, 8, 3, stride=2, padding=1, groups=2)
            self.bn = torch.nn.BatchNorm2d(8)

        def forward(self, x):
            return torch.relu(self.bn(self.conv(x))) * 2

    torch.manual_seed(0)
    model = Block().eval()
    model.bn.running_mean.uniform_(-1, 1)
    model.bn.running_var.uniform_(0.5, 2)
    x = torch.randn(3, 6, 11, 9)
    torch._dynamo.reset()
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")  # no eager fallback warned about
        compiled = strata.compile(model)
        torch.testing.assert_close(compiled(x), model(x))
    op = prim.ConvolutionOp
    assert op.name == "prim.convolution" and op in prim.LIBRARY_OPS


def test_kernels_called_from_several_python_threads_at_once():
    # ctypes releases the GIL: two callers may be in the pool at the same time (the
    # second runs its work itself) and each must get its own results.
    import threading

    compiled = compile_kernel(kernel(SOFTMAX))
    inputs = [torch.randn(300, 1000) * (i + 1) for i in range(4)]
    expected = [torch.softmax(x, -1) for x in inputs]
    failures = []

    def worker(i: int) -> None:
        out = torch.empty(300, 1000)
        for _ in range(20):
            compiled([inputs[i], out], [300, 1000])
            if not torch.allclose(out, expected[i], rtol=1e-5, atol=1e-6):
                failures.append(i)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


@pytest.mark.parametrize("rows, cols", [(5, 3), (2, 17), (9, 33), (1, 1)])
def test_static_extents_shorter_than_the_vectors(rows, cols):
    softmax = kernel(SOFTMAX.replace('["s0"]', f"[{rows} : i64]").replace('["s1"]', f"[{cols} : i64]").replace("s1*x0", f"{cols}*x0"))
    x = torch.randn(rows, cols)
    out = torch.empty(rows, cols)
    compile_kernel(softmax)([x, out], [rows, cols])
    torch.testing.assert_close(out, torch.softmax(x, -1))
    func = kernel(
        header("pw", [rows, cols], [], 1, [])
        + f"""
^bb0(%in0: !kernel.buffer<f32>, %out0: !kernel.buffer<f32>):
  %a = kernel.load %in0["{cols}*x0 + x1"] : !kernel.buffer<f32> -> f32
  %r = prim.erf %a : (f32) -> f32
  kernel.store %r, %out0["x0 + {rows}*x1"] : f32, !kernel.buffer<f32>
}}"""
    )
    out = torch.empty(cols, rows)
    compile_kernel(func)([x, out], [])
    torch.testing.assert_close(out, torch.erf(x).t())
