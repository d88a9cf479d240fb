"""Layout-changing pointwise kernels on the CPU: the tiled path of the LLVM code
generator (llvm_plan.choose_tile, llvm_kernel._emit_tile), against torch, bit-exact."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
import torch

import strata
from strata.codegen.llvm_cpu import compile_kernel, host_target
from strata.codegen.llvm_kernel import Target
from strata.codegen.llvm_plan import BodyPlan, choose_lanes, choose_tile
from strata.dialects.context import parse_module
from strata.dialects.kernel import FuncOp
from strata.dialects.types import DTYPES

IR_TYPE = {**{d: d for d in DTYPES}, "u8": "ui8"}
NARROW = Target(vector_bits=256, threads="pool", avx512=False)  # 8 f32 or 4 f64 a tile side


def index(strides: list) -> str:
    return " + ".join(f"{s}*x{i}" for i, s in enumerate(strides))


def layout_kernel(dims: list, loads: list[tuple[str, list]], body: list[str], stores: list[tuple[str, str, list]], symbols: list[str] = ()) -> FuncOp:
    """A pointwise kernel over `dims`: %l<i> loaded from input i (dtype, strides), the
    `body` lines, then each (value, dtype, strides) of `stores` stored to an output."""
    n_in = len(loads)
    args = [f"%in{i}: !kernel.buffer<{IR_TYPE[d]}>" for i, (d, _) in enumerate(loads)]
    args += [f"%out{i}: !kernel.buffer<{IR_TYPE[d]}>" for i, (_, d, _) in enumerate(stores)]
    dim_text = ", ".join(f'"{d}"' if isinstance(d, str) else f"{d} : i64" for d in dims)
    names = ", ".join(f'"{s}"' for s in symbols)
    lines = [
        f"kernel.func @t attributes {{pointwise = [{dim_text}], reduction = [], num_inputs = {n_in} : i64, "
        f'symbols = [{names}], sources = ["aten.permute.default"]}} {{',
        f"^bb0({', '.join(args)}):",
    ]
    lines += [f'  %l{i} = kernel.load %in{i}["{index(s)}"] : !kernel.buffer<{IR_TYPE[d]}> -> {IR_TYPE[d]}' for i, (d, s) in enumerate(loads)]
    lines += [f"  {line}" for line in body]
    lines += [f'  kernel.store {v}, %out{i}["{index(s)}"] : {IR_TYPE[d]}, !kernel.buffer<{IR_TYPE[d]}>' for i, (v, d, s) in enumerate(stores)]
    lines.append("}")
    func = parse_module("builtin.module {\n" + "\n".join(lines) + "\n}").body.block.first_op
    func.verify()
    return func


def random(n: int, dtype: str) -> torch.Tensor:
    t = DTYPES[dtype]
    if t == torch.bool:
        return torch.rand(n) < 0.5
    if t.is_floating_point:
        return torch.randn(n).to(t)
    info = torch.iinfo(t)
    return torch.randint(max(info.min, -1000), min(info.max, 1000) + 1, (n,), dtype=t)


def extent(shape: list[int], strides: list[int]) -> int:
    return sum((n - 1) * s for n, s in zip(shape, strides)) + 1


def view(buffer: torch.Tensor, shape: list[int], strides: list[int]) -> torch.Tensor:
    return buffer.as_strided(shape, strides)


def tiled(func: FuncOp, target: Target | None = None) -> str | None:
    """The variable a kernel is tiled across (None: not tiled)."""
    plan = BodyPlan(func)
    bits = (target or host_target()).vector_bits
    return choose_tile(func, plan, choose_lanes(func, plan, bits), bits).across


def compile_and_run(func: FuncOp, inputs: list[torch.Tensor], outputs: list[torch.Tensor], symbols: list[int] = (), target: Target | None = None):
    kernel = compile_kernel(func, target)
    kernel([*inputs, *outputs], list(symbols))
    return kernel


TRANSPOSE_DTYPES = ["f32", "f64", "bf16", "f16", "i64", "i32", "i16", "i8", "u8", "i1"]
SHAPES = [(16, 16), (37, 53), (17, 100), (100, 17), (64, 3), (5, 7), (1000, 24), (33, 1)]


@pytest.mark.parametrize("dtype", TRANSPOSE_DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_transpose_2d(dtype, shape):
    """out[m, n] = in[n, m] over domain [m, n]: loads contiguous along x0, stores along x1."""
    m, n = shape
    func = layout_kernel([m, n], [(dtype, [1, m])], [], [("%l0", dtype, [n, 1])])
    x = random(m * n, dtype)
    out = torch.zeros(m * n, dtype=DTYPES[dtype])
    kernel = compile_and_run(func, [x], [out])
    assert torch.equal(out.view(m, n), x.view(n, m).t())
    if min(m, n) >= 16:
        assert tiled(func) == "x0" and "shufflevector" in kernel.source


@pytest.mark.parametrize("dtype", ["f32", "f64", "bf16", "i8"])
@pytest.mark.parametrize("shape", [(8, 8), (13, 29), (40, 9)])
def test_transpose_2d_narrow_vectors(dtype, shape):
    """Tiles of 8 × 8 (f32) and 4 × 4 (f64) with 256-bit vectors."""
    m, n = shape
    func = layout_kernel([m, n], [(dtype, [1, m])], [], [("%l0", dtype, [n, 1])])
    x = random(m * n, dtype)
    out = torch.zeros(m * n, dtype=DTYPES[dtype])
    compile_and_run(func, [x], [out], target=NARROW)
    assert torch.equal(out.view(m, n), x.view(n, m).t())
    side = {"f32": 8, "f64": 4, "bf16": 16, "i8": 16}[dtype]
    assert tiled(func, NARROW) == ("x0" if min(m, n) >= side else None)


@pytest.mark.parametrize("shape", [(2, 20, 9, 13), (8, 64, 28, 28), (1, 17, 16, 33), (3, 5, 4, 4)])
def test_nchw_to_nhwc_and_back(shape):
    n, c, h, w = shape
    nchw = [c * h * w, h * w, w, 1]
    nhwc = [h * w * c, 1, w * c, c]
    x = torch.randn(n * c * h * w)
    to_nhwc = layout_kernel(shape, [("f32", nchw)], [], [("%l0", "f32", nhwc)])
    out = torch.zeros_like(x)
    compile_and_run(to_nhwc, [x], [out])
    assert torch.equal(view(out, shape, nhwc), view(x, shape, nchw))
    back = layout_kernel(shape, [("f32", nhwc)], [], [("%l0", "f32", nchw)])
    again = torch.zeros_like(x)
    compile_and_run(back, [out], [again])
    assert torch.equal(again, x)
    if min(c, w) >= 16:
        assert tiled(to_nhwc) is not None and tiled(back) is not None


@pytest.mark.parametrize("shape", [(8, 64, 28, 28), (2, 19, 5, 21)])
def test_resnet_epilogue(shape):
    """relu(x_nchw + (y_nhwc - mean[c]) * scale[c]) written NCHW, and y + 1 written
    NHWC: a contiguous load, a transposed load, per-channel loads, two outputs."""
    n, c, h, w = shape
    nchw = [c * h * w, h * w, w, 1]
    nhwc = [h * w * c, 1, w * c, c]
    func = layout_kernel(
        shape,
        [("f32", nchw), ("f32", nhwc), ("f32", [0, 1, 0, 0]), ("f32", [0, 1, 0, 0])],
        [
            "%a = prim.sub %l1, %l2 : (f32, f32) -> f32",
            "%b = prim.mul %a, %l3 : (f32, f32) -> f32",
            "%d = prim.add %l0, %b : (f32, f32) -> f32",
            "%z = arith.constant 0.000000e+00 : f32",
            "%r = prim.maximum %d, %z : (f32, f32) -> f32",
            "%one = arith.constant 1.000000e+00 : f32",
            "%e = prim.add %l1, %one : (f32, f32) -> f32",
        ],
        [("%r", "f32", nchw), ("%e", "f32", nhwc)],
    )
    size = n * c * h * w
    x, y, mean, scale = torch.randn(size), torch.randn(size), torch.randn(c), torch.rand(c) + 0.5
    out0, out1 = torch.zeros(size), torch.zeros(size)
    compile_and_run(func, [x, y, mean, scale], [out0, out1])
    xs, ys = view(x, shape, nchw), view(y, shape, nhwc)
    expected = torch.relu(xs + (ys - mean[:, None, None]) * scale[:, None, None])
    assert torch.equal(view(out0, shape, nchw), expected)
    assert torch.equal(view(out1, shape, nhwc), ys + 1)
    if min(c, w) >= 16:
        assert tiled(func) is not None


@pytest.mark.parametrize("shape", [(48, 40), (37, 21)])
def test_several_inputs_and_outputs_mixed_dtypes(shape):
    """A transposed f32 load and a transposed bf16 store (a conversion) in one
    kernel, next to a contiguous load and store and an i64 output."""
    m, n = shape
    func = layout_kernel(
        [m, n],
        [("f32", [1, m]), ("f32", [n, 1]), ("i64", [1, m])],
        [
            "%s = prim.add %l0, %l1 : (f32, f32) -> f32",
            "%h = prim.convert_element_type %s {dtype = \"bf16\"} : (f32) -> bf16",
            "%i = prim.add %l2, %l2 : (i64, i64) -> i64",
        ],
        [("%s", "f32", [n, 1]), ("%h", "bf16", [1, m]), ("%i", "i64", [n, 1])],
    )
    a, b, k = torch.randn(m * n), torch.randn(m * n), torch.randint(-99, 99, (m * n,))
    out0, out1, out2 = torch.zeros(m * n), torch.zeros(m * n, dtype=torch.bfloat16), torch.zeros(m * n, dtype=torch.int64)
    compile_and_run(func, [a, b, k], [out0, out1, out2])
    s = a.view(n, m).t() + b.view(m, n)
    assert torch.equal(out0.view(m, n), s)
    assert torch.equal(out1.view(n, m).t(), s.to(torch.bfloat16))
    assert torch.equal(out2.view(m, n), k.view(n, m).t() * 2)
    assert tiled(func) == "x0"


def test_index_values_in_tiles():
    """kernel.index in a tiled body: each step of a tile sees its own point."""
    m, n = 40, 19
    func = layout_kernel(
        [m, n],
        [("i64", [1, m])],
        ['%i = kernel.index "1000*x0 + x1" : i64', "%s = prim.add %l0, %i : (i64, i64) -> i64"],
        [("%s", "i64", [n, 1]), ("%i", "i64", [1, m])],
    )
    x = torch.randint(-99, 99, (m * n,))
    out0, out1 = torch.zeros(m * n, dtype=torch.int64), torch.zeros(m * n, dtype=torch.int64)
    compile_and_run(func, [x], [out0, out1])
    points = 1000 * torch.arange(m)[:, None] + torch.arange(n)[None, :]
    assert torch.equal(out0.view(m, n), x.view(n, m).t() + points)
    assert torch.equal(out1.view(n, m).t(), points)
    assert tiled(func) is not None


def test_strided_inputs():
    """Rows with padding (still tiled) and a step of 2 (gathered), into a padded output."""
    m, n = 37, 45
    pad_in, pad_out = 40, 50
    func = layout_kernel(
        [m, n],
        [("f32", [1, pad_in]), ("f32", [2, 2 * m + 3])],
        ["%s = prim.sub %l0, %l1 : (f32, f32) -> f32"],
        [("%s", "f32", [pad_out, 1])],
    )
    a = torch.randn(extent([m, n], [1, pad_in]))
    b = torch.randn(extent([m, n], [2, 2 * m + 3]))
    out = torch.full((extent([m, n], [pad_out, 1]),), 7.0)
    compile_and_run(func, [a, b], [out])
    expected = view(a, [m, n], [1, pad_in]) - view(b, [m, n], [2, 2 * m + 3])
    assert torch.equal(view(out, [m, n], [pad_out, 1]), expected)
    gaps = torch.ones_like(out, dtype=torch.bool)
    view(gaps, [m, n], [pad_out, 1]).fill_(False)
    assert (out[gaps] == 7.0).all()  # nothing written between the rows
    assert tiled(func) == "x0"


@pytest.mark.parametrize("sizes", [(3, 5), (15, 16), (16, 15), (16, 16), (40, 70), (15, 200), (200, 1)])
def test_symbolic_sizes(sizes):
    """One kernel for every size: sides shorter than a tile run untiled at run time."""
    func = layout_kernel(["s0", "s1"], [("f32", [1, "s0"])], [], [("%l0", "f32", ["s1", 1])], ["s0", "s1"])
    m, n = sizes
    x = torch.randn(m * n)
    out = torch.zeros(m * n)
    compile_and_run(func, [x], [out], [m, n])
    assert torch.equal(out.view(m, n), x.view(n, m).t())
    assert tiled(func) == "x0"


@pytest.mark.parametrize("shape", [(16, 200_003), (1024, 1000), (21, 100_000)])
def test_threads(shape):
    """Large enough to run on all cores: work items split across threads, and with
    fewer tile rows than threads the lanes split into blocks (the last tile of a block
    overlapping its neighbour)."""
    m, n = shape
    func = layout_kernel([m, n], [("f32", [1, m])], [], [("%l0", "f32", [n, 1])])
    x = torch.randn(m * n)
    out = torch.zeros(m * n)
    compile_and_run(func, [x], [out])
    assert torch.equal(out.view(m, n), x.view(n, m).t())


def test_not_tiled():
    """Contiguous kernels, short sides and reductions keep the untiled code."""
    same = layout_kernel([64, 64], [("f32", [64, 1])], [], [("%l0", "f32", [64, 1])])
    assert tiled(same) is None
    weights = layout_kernel([64, 64, 3, 3], [("f32", [576, 9, 3, 1])], [], [("%l0", "f32", [576, 1, 192, 64])])
    assert tiled(weights) is None  # a 3-wide side: shorter than a tile


def test_compiled_functions():
    x = torch.randn(2048, 1024)
    f = strata.compile(lambda x: x.t().contiguous() * 2)
    assert torch.equal(f(x), x.t().contiguous() * 2)
    y = torch.randn(4, 32, 17, 19)
    g = strata.compile(lambda y: (y.permute(0, 2, 3, 1) + 1).contiguous())
    assert torch.equal(g(y), (y.permute(0, 2, 3, 1) + 1).contiguous())


_SYMBOLS = ("x0", "x1", "r0", "s0", "s1")


@settings(max_examples=200, deadline=None)
@given(
    terms=st.lists(
        st.tuples(st.integers(-8, 8), st.sampled_from(_SYMBOLS), st.sampled_from(_SYMBOLS + ("1",)),
                  st.sampled_from(["", "floor", "mod", "square", "floor_coefficient"])),
        min_size=1, max_size=5),
    var=st.sampled_from(["x0", "x1", "r0"]),
)
def test_stride_along_is_the_difference_of_consecutive_indices(terms, var):
    """stride_along's shortcut for affine terms answers as the general difference does:
    index(var + 1) - index(var), or None where that depends on var or hides a floor."""
    import sympy

    from strata.codegen.llvm_plan import stride_along
    from strata.dialects.types import sym

    parts = []
    for c, a, b, shape in terms:
        term = f"{c}*{a}*{b}"
        parts.append({"": term, "floor": f"floor({term}/3)", "mod": f"Mod({a}, 4)", "square": f"{a}*{a}",
                      "floor_coefficient": f"floor({a}/3)*{b}"}[shape])
    index = " + ".join(parts)
    expr, v = sym(index), sym(var)
    if v not in expr.free_symbols:
        expected = sympy.Integer(0)
    else:
        diff = sympy.expand(expr.subs(v, v + 1) - expr)
        hidden = diff.atoms(sympy.floor, sympy.ceiling, sympy.Mod, sympy.Max, sympy.Min)
        expected = None if v in diff.free_symbols or hidden else diff
    got = stride_along(str(expr), var)
    assert (got is None) == (expected is None), (index, var, got, expected)
    if got is not None:
        assert sympy.expand(got - expected) == 0, (index, var, got, expected)
