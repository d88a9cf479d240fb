"""A norm read by matrix-vector products of one shape is recomputed in their kernel
(passes/fusion/plan.py `_scaled_row_of_products`, passes/fusion/domain.py
`Domain.reduction_index`): the property that the fused program computes the graph's
values, that the Triton kernels compute the kernel interpreter's, and that no kernel
runs the norm on its own."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strata.dialects import kernel as kd
from strata.dialects.context import parse_module, strata_context
from strata.passes.fuse import FusePass
from strata.passes.matvec_to_reduction import MatvecToReductionPass
from strata.testing.checks import check_codegen, check_values, print_module


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def ty(*dims, dtype="f32") -> str:
    return f"!strata.tensor<[{', '.join(map(str, dims))}], {dtype}>"


def norm_ir(k: int, widths: list[int], centered: bool, weighted: bool, residual: bool) -> str:
    """A graph normalizing a [1, 1, k] row (RMSNorm, or with `centered` a LayerNorm's
    mean and variance; times a bf16 weight with `weighted`) of the argument x (with
    `residual`, of x + r as bf16 widened to f32) and reading it, as bf16, as the vector
    of one product per width."""
    row, one = ty(1, 1, k), ty(1, 1)
    lines = []
    bf16 = ty(1, 1, k, dtype="bf16")
    if residual:  # a bf16 add as decompose writes it: in f32, rounded as eager rounds it
        lines += [f"%rf = prim.convert_element_type %r {{dtype = \"f32\"}} : ({bf16}) -> {row}",
                  f"%sum = prim.add %x, %rf : ({row}, {row}) -> {row}",
                  f"%sb = prim.convert_element_type %sum {{strata.opmath_rounding, dtype = \"bf16\"}} : ({row}) -> {bf16}",
                  f"%h = prim.convert_element_type %sb {{dtype = \"f32\"}} : ({bf16}) -> {row}"]
    else:
        lines += [f"%h = prim.convert_element_type %x {{dtype = \"f32\"}} : ({row}) -> {row}"]
    lines += [f'%kf = prim.full {{shape = [1 : i64, 1 : i64], value = {float(k)} : f64, dtype = "f32"}} : {one}']
    if centered:
        lines += [f"%s1 = prim.sum %h {{dims = array<i64: 2>}} : ({row}) -> {one}",
                  f"%mean = prim.div %s1, %kf : ({one}, {one}) -> {one}",
                  f"%mb = prim.broadcast_in_dim %mean {{shape = [1 : i64, 1 : i64, {k} : i64], broadcast_dimensions = array<i64: 0, 1>}} : ({one}) -> {row}",
                  f"%c = prim.sub %h, %mb : ({row}, {row}) -> {row}"]
    else:
        lines += [f"%c = prim.convert_element_type %h {{dtype = \"f32\"}} : ({row}) -> {row}"]
    lines += [
        f"%sq = prim.mul %c, %c : ({row}, {row}) -> {row}",
        f"%s2 = prim.sum %sq {{dims = array<i64: 2>}} : ({row}) -> {one}",
        f"%var = prim.div %s2, %kf : ({one}, {one}) -> {one}",
        f'%eps = prim.full {{shape = [1 : i64, 1 : i64], value = 1.0e-05 : f64, dtype = "f32"}} : {one}',
        f"%ve = prim.add %var, %eps : ({one}, {one}) -> {one}",
        f"%rs = prim.rsqrt %ve : ({one}) -> {one}",
        f"%rb = prim.broadcast_in_dim %rs {{shape = [1 : i64, 1 : i64, {k} : i64], broadcast_dimensions = array<i64: 0, 1>}} : ({one}) -> {row}",
        f"%n = prim.mul %c, %rb : ({row}, {row}) -> {row}",
        f"%nb = prim.convert_element_type %n {{dtype = \"bf16\"}} : ({row}) -> {ty(1, 1, k, dtype='bf16')}",
    ]
    if weighted:  # `.type_as(x) * weight`, as decompose writes it
        lines += [f"%nf = prim.convert_element_type %nb {{dtype = \"f32\"}} : ({bf16}) -> {row}",
                  f"%gf = prim.convert_element_type %g {{dtype = \"f32\"}} : ({ty(k, dtype='bf16')}) -> {ty(k)}",
                  f"%gb = prim.broadcast_in_dim %gf {{shape = [1 : i64, 1 : i64, {k} : i64], broadcast_dimensions = array<i64: 2>}} : ({ty(k)}) -> {row}",
                  f"%yf = prim.mul %nf, %gb : ({row}, {row}) -> {row}",
                  f"%y = prim.convert_element_type %yf {{strata.opmath_rounding, dtype = \"bf16\"}} : ({row}) -> {bf16}"]
    else:
        lines += [f"%y = prim.convert_element_type %nb {{dtype = \"bf16\"}} : ({ty(1, 1, k, dtype='bf16')}) -> {ty(1, 1, k, dtype='bf16')}"]
    lines += [f"%y2 = prim.reshape %y {{shape = [1 : i64, {k} : i64]}} : ({ty(1, 1, k, dtype='bf16')}) -> {ty(1, k, dtype='bf16')}"]
    results = []
    for i, n in enumerate(widths):
        lines += [f"%wt{i} = prim.permute %w{i} {{dims = array<i64: 1, 0>}} : ({ty(n, k, dtype='bf16')}) -> {ty(k, n, dtype='bf16')}",
                  f"%p{i} = prim.mm %y2, %wt{i} : ({ty(1, k, dtype='bf16')}, {ty(k, n, dtype='bf16')}) -> {ty(1, n, dtype='bf16')}"]
        results.append((f"%p{i}", ty(1, n, dtype="bf16")))
    args = [f"%x: {row}"] + ([f"%r: {ty(1, 1, k, dtype='bf16')}"] if residual else []) + ([f"%g: {ty(k, dtype='bf16')}"] if weighted else [])
    args += [f"%w{i}: {ty(n, k, dtype='bf16')}" for i, n in enumerate(widths)]
    lines += [f"func.return {', '.join(r for r, _ in results)} : {', '.join(t for _, t in results)}"]
    body = "".join(f"  {line}\n" for line in lines)
    return (f"func.func @graph({', '.join(args)}) -> ({', '.join(t for _, t in results)}) "
            f'attributes {{strata.device = "cuda"}} {{\n{body}}}\n')


def fused(ir: str, emulate_precision_casts: bool = True):
    """(the graph with its products as sums, passes/matvec_to_reduction.py; fused).
    The property fuses with every rounding kept, as eager rounds: what it checks is
    where values are computed, not the f32 chains fusion keeps by default (each
    element of those is judged against the float64 program, a test of its own)."""
    before = parse_module(ir)
    MatvecToReductionPass().apply(strata_context(), before)
    after = before.clone()
    FusePass(emulate_precision_casts=emulate_precision_casts).apply(strata_context(), after)
    return before, after


@settings(max_examples=30, deadline=None)
@given(k=st.integers(2, 40), widths=st.lists(st.integers(1, 24), min_size=1, max_size=3), same=st.booleans(),
       centered=st.booleans(), weighted=st.booleans(), residual=st.booleans(), seed=st.integers(0, 1000))
def test_a_norm_recomputed_by_its_products_keeps_the_values(k, widths, same, centered, weighted, residual, seed):
    if same:
        widths = [widths[0]] * max(2, len(widths))  # a gate and an up product
    before, after = fused(norm_ir(k, widths, centered, weighted, residual))
    funcs = [op for op in after.ops if isinstance(op, kd.FuncOp)]
    program = next(op for op in after.ops if isinstance(op, kd.ProgramOp))
    rows = [r for op in program.block.ops if isinstance(op, kd.LaunchOp) for r in op.results
            if r.type.dtype == "bf16" and [d for d in r.type.dims if d != 1] == [k] and k not in widths]
    # Products of other widths are one product over the weights side by side
    # (passes/row_product_siblings.py), as wide as all of them.
    merged = len(widths) >= 2 and len(set(widths)) > 1
    if (len(widths) >= 2 and not merged) or (merged and sum(widths) < 16):
        # Recomputed: no kernel writes the normalized row, one kernel runs the products;
        # with `residual` or `centered` perhaps one more, for the sums. The value the
        # norm reads three times (x + r, x - mean) is computed where it is read
        # (passes/fusion/shared_values.py).
        assert not rows and len(funcs) <= 1 + (residual or centered), print_module(after)
    elif sum(widths) >= 16 and k not in widths:
        # A product broadcasting it along 16 outputs or more
        # (_recomputed_product_sides): the row is written once.
        assert rows, print_module(after)
    assert check_values(before, after, f"seed={seed}") is None
    assert check_codegen(after, "triton", f"seed={seed}") is None


def test_a_row_also_read_elsewhere_is_written_once():
    """Where the normalized row is also a result of the graph (read by something other
    than products), it is written by a kernel as before and the products read it."""
    ir = norm_ir(16, [8, 8], centered=False, weighted=True, residual=False)
    two, three = f"{ty(1, 8, dtype='bf16')}, {ty(1, 8, dtype='bf16')}", f"{ty(1, 8, dtype='bf16')}, {ty(1, 8, dtype='bf16')}, {ty(1, 1, 16, dtype='bf16')}"
    ir = ir.replace("func.return %p0, %p1 :", "func.return %p0, %p1, %y :").replace(f"-> ({two})", f"-> ({three})").replace(
        f": {two}\n}}", f": {three}\n}}")
    before, after = fused(ir)
    funcs = [op for op in after.ops if isinstance(op, kd.FuncOp)]
    assert len(funcs) == 2 and not any(d != 1 for d in funcs[0].pointwise_dims), print_module(after)
    assert "prim.rsqrt" not in print_module(funcs[1]), print_module(after)
    assert check_values(before, after, "seed=1") is None
