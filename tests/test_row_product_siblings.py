"""Sibling row products (passes/row_product_siblings.py): products of one row by weights
of different widths become one product over the weights side by side, whose Triton
kernel masks each weight's loads to the points that keep them (codegen/triton_guards.py).

The property: for any widths, dtypes and weight layouts, the rewritten and fused
program computes the graph's values, the Triton kernels (in the interpreter) compute
the kernel interpreter's, and the products of a group of different widths run as one
kernel per POINTWISE_CAT_OPERANDS of them."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from strata.codegen.triton_source import KernelSource
from strata.dialects import kernel as kd
from strata.dialects.context import parse_module, strata_context
from strata.passes.decompositions.shape import POINTWISE_CAT_OPERANDS
from strata.passes.fuse import FusePass
from strata.passes.matvec_to_reduction import MatvecToReductionPass
from strata.testing.checks import check_codegen, check_values, print_module


@pytest.fixture(autouse=True)
def _interpreter(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def ty(*dims, dtype="f32") -> str:
    return f"!strata.tensor<[{', '.join(map(str, dims))}], {dtype}>"


def siblings_ir(k: int, widths: list[int], dtype: str, transposed: list[bool]) -> str:
    """Products of the argument row x ([1, k]) by one weight per width: an [n, k]
    argument read through a permute (a linear layer's weight) or a [k, n] argument."""
    lines, args, results = [], [f"%x: {ty(1, k, dtype=dtype)}"], []
    for i, (n, t) in enumerate(zip(widths, transposed)):
        if t:
            args.append(f"%w{i}: {ty(n, k, dtype=dtype)}")
            lines.append(f"%b{i} = prim.permute %w{i} {{dims = array<i64: 1, 0>}} : ({ty(n, k, dtype=dtype)}) -> {ty(k, n, dtype=dtype)}")
        else:
            args.append(f"%w{i}: {ty(k, n, dtype=dtype)}")
            lines.append(f"%b{i} = prim.reshape %w{i} {{shape = [{k} : i64, {n} : i64]}} : ({ty(k, n, dtype=dtype)}) -> {ty(k, n, dtype=dtype)}")
        lines.append(f"%p{i} = prim.mm %x, %b{i} : ({ty(1, k, dtype=dtype)}, {ty(k, n, dtype=dtype)}) -> {ty(1, n, dtype=dtype)}")
        results.append((f"%p{i}", ty(1, n, dtype=dtype)))
    lines.append(f"func.return {', '.join(r for r, _ in results)} : {', '.join(t for _, t in results)}")
    body = "".join(f"  {line}\n" for line in lines)
    return (f"func.func @graph({', '.join(args)}) -> ({', '.join(t for _, t in results)}) "
            f'attributes {{strata.device = "cuda"}} {{\n{body}}}\n')


@settings(max_examples=30, deadline=None)
@given(k=st.integers(1, 40), widths=st.lists(st.integers(1, 24), min_size=2, max_size=6),
       dtype=st.sampled_from(["bf16", "f16", "f32"]), data=st.data(), seed=st.integers(0, 1000))
def test_sibling_products_keep_their_values_in_one_kernel(k, widths, dtype, data, seed):
    transposed = data.draw(st.lists(st.booleans(), min_size=len(widths), max_size=len(widths)), label="transposed")
    before = parse_module(siblings_ir(k, widths, dtype, transposed))
    after = before.clone()
    MatvecToReductionPass().apply(strata_context(), after)
    fused = after.clone()
    FusePass().apply(strata_context(), fused)
    funcs = [op for op in fused.ops if isinstance(op, kd.FuncOp)]
    # a kernel per domain: a chunk of different widths is one product as wide as all
    # of them; products of one width (left apart) share one
    chunks = [widths[i : i + POINTWISE_CAT_OPERANDS] for i in range(0, len(widths), POINTWISE_CAT_OPERANDS)]
    domains = {sum(c) if len(set(c)) > 1 else c[0] for c in chunks}
    assert len(funcs) == len(domains), print_module(fused)
    assert "prim.mm" not in print_module(after)
    assert check_values(before, after, f"seed={seed}") is None
    assert check_values(before, fused, f"seed={seed}") is None
    assert check_codegen(fused, "triton", f"seed={seed}") is None


def test_each_row_reads_one_weight_through_one_load():
    """q, k and v of widths 48, 16, 16: the Triton kernel selects the row's start in
    the weight the row falls in (codegen/triton_selects.py) and loads once, so a row of
    q fetches nothing of k's or v's weight."""
    module = parse_module(siblings_ir(64, [48, 16, 16], "bf16", [True] * 3))
    MatvecToReductionPass().apply(strata_context(), module)
    FusePass().apply(strata_context(), module)
    (func,) = [op for op in module.ops if isinstance(op, kd.FuncOp)]
    source = KernelSource(func, "cuda").module()
    weights = [line.strip() for line in source.splitlines() if "tl.load(" in line and "in1" in line]
    assert len(weights) == 1, source
    assert re.search(r"tl\.load\(tl\.where\(v\d+, in1 \+ \(64\*v\d+\), tl\.where\(v\d+, in2 \+ \(64\*v\d+\), "
                     r"in3 \+ \(64\*v\d+\)\)\) \+ \(rindex\)\)", weights[0]), weights[0]
    loads = [line.strip() for line in source.splitlines() if "tl.load(" in line]
    assert [line for line in loads if "in2" in line or "in3" in line] == weights, loads


def test_the_merged_kernel_names_every_product():
    module = parse_module(siblings_ir(8, [4, 2], "bf16", [True, True]).replace(
        "%p0 = prim.mm %x, %b0", '%p0 = prim.mm %x, %b0 {strata.source = "aten.mm.default @ m.py:1 in q"}').replace(
        "%p1 = prim.mm %x, %b1", '%p1 = prim.mm %x, %b1 {strata.source = "aten.mm.default @ m.py:2 in k"}'))
    MatvecToReductionPass().apply(strata_context(), module)
    FusePass().apply(strata_context(), module)
    (func,) = [op for op in module.ops if isinstance(op, kd.FuncOp)]
    sources = func.source_ops
    assert any("m.py:1 in q" in s for s in sources) and any("m.py:2 in k" in s for s in sources), sources


def test_a_product_on_the_cpu_is_left_alone():
    before = parse_module(siblings_ir(8, [4, 2], "bf16", [True, True]).replace('"cuda"', '"cpu"'))
    after = before.clone()
    MatvecToReductionPass().apply(strata_context(), after)
    assert print_module(after).count("prim.mm") == 2
