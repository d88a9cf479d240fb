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
    assert "enable_fp_fusion=False" in source  # g is stored in f32: no FMA contraction


def test_cuda_fma_contraction_only_where_every_f32_value_ends_in_bf16():
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
    compared = chain + ["  %c = prim.gt %m, %w : (f32, f32) -> i1", store("c", "out1", "x0", "i1")]
    exact = KernelSource(kernel_func("\n".join(compared), ["bf16", "bf16", "i1"], 1, "64"), "cuda").module()
    assert "enable_fp_fusion=False" in exact and "enable_fp_fusion=True" not in exact  # m is compared in f32
