"""The zoo's complex-value and data-dependent ops (dialects/prim_complex.py,
prim_data_dependent.py): one op of a class with random dims (symbolic ones included)
and dtypes, for testing/op_zoo.py."""

from __future__ import annotations

from hypothesis import strategies as st
from xdsl.ir import Operation

from strata.dialects import prim_complex as pc
from strata.dialects import prim_data_dependent as pdd
from strata.dialects.types import TensorType, sym

ZOO_EXTRA_OPS = (*pc.COMPLEX_OPS, *pdd.DATA_DEPENDENT_OPS)


def zoo_extra_op(draw, cls, arg, dims) -> Operation:
    """`dims`: the zoo's strategy for one dim."""
    part = draw(st.sampled_from(pc.PART_DTYPES))
    n = draw(dims())
    if cls is pc.ViewAsRealOp:
        return cls(arg(TensorType([draw(dims()), n], pc.COMPLEX_OF[part])))
    if cls is pc.ViewAsComplexOp:
        return cls(arg(TensorType([n, 2], part)))
    norm = draw(st.sampled_from(pc.NORM_MODES))
    if cls is pc.FftR2cOp:
        return cls(arg(TensorType([2, n], part)), [1], norm, draw(st.booleans()))
    if cls is pc.FftC2cOp:
        return cls(arg(TensorType([2, n, 2], part)), [1], norm, draw(st.booleans()))
    if cls is pc.FftC2rOp:
        return cls(arg(TensorType([2, n, 2], part)), [1], norm, draw(st.integers(1, 8)))
    dtype = draw(st.sampled_from(["f32", "i64", "i1"]))
    if cls is pdd.NonzeroOp:
        return cls(arg(TensorType([draw(dims()), n], dtype)), "u0")
    if cls is pdd.ItemOp:
        return cls(arg(TensorType([], dtype)), "u1")
    if cls is pdd.AssertScalarOp:
        return cls(draw(st.sampled_from(["u0 >= 0", "Eq(u1, 3)", "u0 < 2*u1 + 1"])), "a runtime check failed")
    if cls is pdd.CheckScalarIndexOp:
        index = sym(draw(st.sampled_from(["nu0", "Min(-1, 2*nu0)", "Abs(nu1) - 3"])))
        return cls(index, n, "idx0", draw(st.integers(0, 3)), draw(st.booleans()), "aten.select.int")
    if cls is pdd.RandpermOp:
        return cls(n, draw(st.sampled_from(["i64", "i32"])))
    raise ValueError(f"not a complex-value or data-dependent op: {cls.name}")
