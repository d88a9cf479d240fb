"""Float math in generated CUDA kernels (sources only, no GPU needed): where the
approximate exp, log and division and FMA contraction are allowed, and where eager's
precise forms are kept."""

from __future__ import annotations

from tests.test_codegen_triton import kernel_func, load, store


def test_cuda_math_rounded_to_bf16_may_be_approximate():
    # exp and division whose f32 result reaches only roundings to bf16 (directly, or
    # through other f32 ops) use tl.exp and `/`; the same ops whose result is kept in
    # f32 (stored as f32) or read by a comparison stay precise.
    from strata.codegen.triton_source import KernelSource

    body = "\n".join([
        load("x", "in0", "x0", "bf16"),
        "  %w = prim.convert_element_type %x {dtype = \"f32\"} : (bf16) -> f32",
        "  %e = prim.exp %w : (f32) -> f32",
        "  %s = prim.sigmoid %w : (f32) -> f32",
        "  %es = prim.convert_element_type %s {dtype = \"bf16\"} : (f32) -> bf16",
        "  %f = prim.exp %w : (f32) -> f32",
        "  %g = prim.add %f, %w : (f32, f32) -> f32",
        "  %eb = prim.convert_element_type %e {dtype = \"bf16\"} : (f32) -> bf16",
        "  %h = prim.exp %w : (f32) -> f32",
        "  %k = prim.mul %h, %w : (f32, f32) -> f32",
        "  %kb = prim.convert_element_type %k {dtype = \"bf16\"} : (f32) -> bf16",
        "  %c32 = prim.log %w : (f32) -> f32",
        "  %cmp = prim.gt %c32, %w : (f32, f32) -> i1",
        "  %cb = prim.convert_element_type %c32 {dtype = \"bf16\"} : (f32) -> bf16",
        store("eb", "out0", "x0", "bf16"),
        store("es", "out1", "x0", "bf16"),
        store("g", "out2", "x0", "f32"),
        store("kb", "out3", "x0", "bf16"),
        store("cb", "out4", "x0", "bf16"),
        store("cmp", "out5", "x0", "i1"),
    ])
    dtypes = ["bf16", "bf16", "bf16", "f32", "bf16", "bf16", "i1"]
    source = KernelSource(kernel_func(body, dtypes, 1, "64"), "cuda").module()
    assert source.count("tl.exp(") == 3 and source.count("libdevice.exp(") == 1, source  # e, s, h / f
    assert "libdevice.log(" in source and "tl.log(" not in source, source  # c32: a comparison reads it
    assert "tl.div_rn" not in source and "1.0 / (1.0 + tl.exp(" in source
    cpu = KernelSource(kernel_func(body, dtypes, 1, "64"), "cpu").module()
    assert "tl.div_rn" in cpu  # the interpreter's results stay correctly rounded
    # g is stored in f32, but exp and add are contraction-safe: FMA contraction is on
    assert "enable_fp_fusion=True" in source


def test_cuda_fma_contraction_keeps_every_rounding_of_eager():
    from strata.codegen.triton_source import KernelSource

    chain = [
        load("x", "in0", "x0", "bf16"),
        "  %w = prim.convert_element_type %x {dtype = \"f32\"} : (bf16) -> f32",
        "  %m = prim.mul %w, %w : (f32, f32) -> f32",
        "  %a = prim.add %m, %w : (f32, f32) -> f32",
        "  %ab = prim.convert_element_type %a {dtype = \"bf16\"} : (f32) -> bf16",
        store("ab", "out0", "x0", "bf16"),
    ]
    fused = KernelSource(kernel_func("\n".join(chain), ["bf16", "bf16"], 1, "64"), "cuda").module()
    assert "enable_fp_fusion=True" in fused and "enable_fp_fusion=False" not in fused, fused
    assert "mul_rn" not in fused  # every value ends in bf16: the product may fuse
    # m is also compared in f32: its product keeps its rounding (mul_rn), the rest fuses
    compared = chain + ["  %c = prim.gt %m, %w : (f32, f32) -> i1", store("c", "out1", "x0", "i1")]
    exact = KernelSource(kernel_func("\n".join(compared), ["bf16", "bf16", "i1"], 1, "64"), "cuda").module()
    assert "enable_fp_fusion=True" in exact and "_mul_rn(" in exact, exact
    # an f32 chain of products and sums: contraction on, every product mul_rn
    f32 = [
        load("x", "in0", "x0", "f32"),
        load("y", "in1", "x0", "f32"),
        "  %p = prim.mul %x, %y : (f32, f32) -> f32",
        "  %s = prim.sub %p, %x : (f32, f32) -> f32",
        "  %e = prim.sigmoid %s : (f32) -> f32",
        store("e", "out0", "x0", "f32"),
    ]
    source = KernelSource(kernel_func("\n".join(f32), ["f32", "f32", "f32"], 2, "64"), "cuda").module()
    assert "enable_fp_fusion=True" in source and "v2 = _mul_rn(v0, v1)" in source and "mul.rn.f32" in source, source
    cpu = KernelSource(kernel_func("\n".join(f32), ["f32", "f32", "f32"], 2, "64"), "cpu").module()
    assert "mul_rn" not in cpu and "rcp" not in cpu and "tl.div_rn(1.0" in cpu


def test_cuda_no_contraction_past_an_op_that_is_not_safe():
    # pow's libdevice code changes with contraction: the kernel is compiled without it
    from strata.codegen.triton_source import KernelSource

    body = [
        load("x", "in0", "x0", "f32"),
        "  %p = prim.mul %x, %x : (f32, f32) -> f32",
        "  %q = prim.pow %p, %x : (f32, f32) -> f32",
        store("q", "out0", "x0", "f32"),
    ]
    source = KernelSource(kernel_func("\n".join(body), ["f32", "f32"], 1, "64"), "cuda").module()
    assert "enable_fp_fusion=False" in source and "mul_rn" not in source, source


def test_cuda_reciprocal_is_ptx_rcp_rn():
    from strata.codegen.triton_source import KernelSource

    body = [load("x", "in0", "x0", "f32"), "  %r = prim.reciprocal %x : (f32) -> f32", store("r", "out0", "x0", "f32")]
    source = KernelSource(kernel_func("\n".join(body), ["f32", "f32"], 1, "64"), "cuda").module()
    assert "_rcp_rn(" in source and "rcp.rn.f32" in source and "div_rn" not in source, source


def test_contraction_safe_ops_write_no_bare_float_product():
    """Every op CONTRACTION_SAFE lists, lowered for CUDA in a contracting kernel, writes
    no `*` or `/` that LLVM could fuse with an add (only PTX mul.rn, libdevice)."""
    from strata.codegen.triton_scalar_ops import CONTRACTION_SAFE, ScalarOps
    from strata.dialects.prim import ELEMENTWISE

    for dtype, names in CONTRACTION_SAFE.items():
        for name in sorted(names):
            ops = ScalarOps("cuda")
            ops.contracting = True
            expr = ops.elementwise(name, dtype, [f"a{i}" for i in range(ELEMENTWISE[name][0])])
            assert " * " not in expr and not ("/" in expr and dtype == "f32"), (name, dtype, expr)
