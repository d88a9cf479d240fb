"""One op of every op class of a dialect, with random operands and properties: what
the printer and parser must round-trip (tests/test_roundtrip.py).

aten ops get operands of random types and every kind of non-tensor argument torch's
schemas have (ints and symbolic sizes, floats with infinities, bools, dtypes,
strings with quotes, lists), so they need not verify; prim and kernel ops are valid.
Dims are literal or sympy expressions over shape symbols (floor, Mod, Max, …), so
their canonical printed form is exercised too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from hypothesis import strategies as st
from xdsl.dialects import arith, func
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, ModuleOp, i64
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from strata.dialects import aten, prim
from strata.dialects.prim_attention import ScaledDotProductAttentionOp
from strata.dialects.prim_collectives import COMMUNICATION_OPS
from strata.dialects.prim_attention_training import FUSED_ATTENTION_OPS, SdpaBackwardOp, SdpaForwardOp
from strata.dialects import kernel as kd
from strata.dialects.types import COMPLEX_DTYPES, DTYPES, Dim, TensorType, is_float, scalar_type, sym
from strata.testing.aten_programs import _has_symbols, _symbolic_attr, set_argument
from strata.testing.graphs import GeneratorError, canonical, contiguous_strides

SYMBOLIC_DIMS = ("s0", "s1", "s0*s1", "2*s0 + 1", "floor(s0/2)", "Mod(s1, 3)", "Max(s0, s1)", "s0 - 1")


def zoo_dims() -> st.SearchStrategy[Dim]:
    return st.one_of(st.sampled_from([0, 1, 2, 7]), st.sampled_from(SYMBOLIC_DIMS).map(sym).map(canonical))


def zoo_types(dtypes: Sequence[str] = tuple(DTYPES)) -> st.SearchStrategy[TensorType]:
    return st.builds(TensorType, st.lists(zoo_dims(), max_size=3), st.sampled_from(list(dtypes)))


@st.composite
def _zoo_constant(draw, kind: str) -> Any:
    """A value of an aten argument kind ("int", "float[]", "ScalarType?", …)."""
    base = kind.rstrip("?")
    if base.endswith("[]"):
        return draw(st.lists(_zoo_constant(base[:-2]), max_size=3))
    if base == "int":
        return draw(st.one_of(st.integers(-2**63, 2**63 - 1), st.sampled_from(SYMBOLIC_DIMS).map(sym)))
    if base == "float":
        return draw(st.floats(allow_nan=False, width=64))
    if base == "bool":
        return draw(st.booleans())
    if base == "Scalar":
        return draw(st.one_of(st.integers(-1000, 1000), st.floats(-1e6, 1e6), st.booleans()))
    if base == "ScalarType":
        return DTYPES[draw(st.sampled_from(list(DTYPES)))]
    if base == "str":
        return draw(st.sampled_from(["none", "tanh", "floor", 'a "quoted" \\ string']))
    if base == "Layout":
        return torch.strided
    if base == "Device":
        return torch.device("cpu")
    if base == "MemoryFormat":
        return torch.contiguous_format
    return None  # Generator and the rest: left at their default


class Palette:
    """A few types and values per example, which the ops then pick from: one small
    draw per operand or argument keeps a module of hundreds of ops quick to draw."""

    def __init__(self, draw, block: Block, dtypes: Sequence[str] = tuple(DTYPES)):
        self.draw = draw
        self.block = block
        self.types = draw(st.lists(zoo_types(dtypes), min_size=4, max_size=4))
        self.constants: dict[str, list[Any]] = {}
        self.args: dict[Attribute, SSAValue] = {}

    def type(self) -> TensorType:
        return self.types[self.draw(st.integers(0, len(self.types) - 1))]

    def arg(self, t: Attribute) -> SSAValue:
        """The function argument of type t (one per type: a module of hundreds of ops
        with as many arguments would be slow to parse)."""
        if t not in self.args:
            self.args[t] = self.block.insert_arg(t, len(self.block.args))
        return self.args[t]

    def constant(self, kind: str) -> Any:
        """A value of an argument kind, or None for "absent"."""
        base = kind.rstrip("?")
        if base not in self.constants:
            self.constants[base] = self.draw(st.lists(_zoo_constant(base), min_size=3, max_size=3))
        choice = self.draw(st.integers(0, 3))
        return None if choice == 3 else self.constants[base][choice]


@st.composite
def _zoo_aten_op(draw, palette: Palette, block: Block, cls: type[aten.AtenOp], overload: str | None = None) -> Operation:
    sig = cls.SIGNATURE if overload is None else aten._signature_by_name(overload)

    def arg() -> SSAValue:
        return palette.arg(palette.type())

    values: dict[str, Any] = {}
    symbolic: dict[str, Any] = {}
    for a in sig.args:
        if a.kind == "Tensor":
            values[a.name] = arg()
        elif a.kind == "Tensor?":
            values[a.name] = arg() if draw(st.booleans()) else None
        elif a.kind == "Tensor[]":
            values[a.name] = [arg() for _ in range(draw(st.integers(0, 3)))]
        elif a.kind == "Tensor?[]":
            values[a.name] = [arg() if draw(st.booleans()) else None for _ in range(draw(st.integers(0, 3)))]
        else:
            v = palette.constant(a.kind)
            if v is not None:
                (symbolic if _has_symbols(v) else values)[a.name] = v
    n = sig.num_results if sig.num_results is not None else draw(st.integers(0, 3))
    op = aten.build(sig.qualified_name, values, [palette.type() for _ in range(n)])
    for name, v in symbolic.items():
        set_argument(op, name, _symbolic_attr(v))
    return op


# Prim's element types: complex values exist at the aten level only.
REAL_DTYPES = [d for d in DTYPES if d not in COMPLEX_DTYPES]

# Overloads outside the core set that `aten.call` carries in the zoo.
ZOO_CALLS = ("aten::silu", "aten::softplus", "aten::rsub.Scalar", "aten::transpose.int", "aten::nan_to_num", "aten::masked_fill.Scalar")


@st.composite
def _zoo_prim_op(draw, palette: Palette, block: Block, cls: type[Operation]) -> Operation:
    arg = palette.arg

    t = palette.type()
    dims = list(t.dims)
    if issubclass(cls, prim.ElementwiseOp):
        dtype = draw(st.sampled_from([d for d in REAL_DTYPES if cls.ACCEPTS(d)]))
        tt = t.with_dtype(dtype)
        if draw(st.booleans()):  # the scalar form, as in kernel bodies
            return cls(*[arg(scalar_type(dtype)) for _ in range(cls.ARITY)])
        return cls(*[arg(tt) for _ in range(cls.ARITY)])
    if cls is prim.WhereOp:
        return prim.WhereOp(arg(t.with_dtype("i1")), arg(t), arg(t))
    if cls is prim.ConvertElementTypeOp:
        return prim.ConvertElementTypeOp(arg(t), draw(st.sampled_from(REAL_DTYPES)))
    if cls is prim.BroadcastInDimOp:
        lead = draw(st.lists(zoo_dims(), max_size=2))
        return prim.BroadcastInDimOp(arg(t), [*lead, *dims], range(len(lead), len(lead) + len(dims)))
    if cls is prim.ReshapeOp:
        return prim.ReshapeOp(arg(t), [1, *dims])
    if cls is prim.PermuteOp:
        return prim.PermuteOp(arg(t), list(draw(st.permutations(range(len(dims))))))
    if cls is prim.SliceOp:
        return prim.SliceOp(arg(t), [0] * len(dims), dims, [draw(st.integers(1, 3)) for _ in dims])
    if cls is prim.CatOp:
        if not dims:
            t, dims = TensorType([2], t.dtype), [2]
        return prim.CatOp([arg(t), arg(t)], draw(st.integers(0, len(dims) - 1)))
    if issubclass(cls, prim.ReductionOp):
        return cls(arg(t), sorted(set(draw(st.lists(st.integers(0, max(len(dims) - 1, 0)), max_size=len(dims))))))
    if cls is prim.FullOp:
        value = draw(st.floats(allow_nan=False, width=32)) if is_float(t.dtype) else draw(st.integers(-100, 100))
        return prim.FullOp(dims, bool(value) if t.dtype == "i1" else value, t.dtype)
    if cls is prim.IotaOp:
        return prim.IotaOp(draw(zoo_dims()), draw(st.integers(-5, 5)), draw(st.integers(-3, 3)), t.dtype)
    if cls is prim.MmOp:
        m, k, n = (draw(zoo_dims()) for _ in range(3))
        return prim.MmOp(arg(TensorType([m, k], "f32")), arg(TensorType([k, n], "f32")))
    if cls is prim.AddmmOp:
        m, k, n = (draw(zoo_dims()) for _ in range(3))
        bias = draw(st.sampled_from([[n], [m, n], [1, n]]))
        return prim.AddmmOp(arg(TensorType(bias, "f32")), arg(TensorType([m, k], "f32")), arg(TensorType([k, n], "f32")))
    if cls is prim.BmmOp:
        bb, m, k, n = (draw(zoo_dims()) for _ in range(4))
        return prim.BmmOp(arg(TensorType([bb, m, k], "f32")), arg(TensorType([bb, k, n], "f32")))
    if cls is prim.ConvolutionOp:
        from strata.testing.prim_programs import convolution_shapes

        x, w, stride, padding, dilation, groups = draw(convolution_shapes(draw(zoo_dims())))
        return prim.ConvolutionOp(arg(TensorType(x, "f32")), arg(TensorType(w, "f32")), stride, padding, dilation, groups)
    from strata.dialects import prim_indexing, prim_scan

    if cls in (prim_indexing.GatherOp, prim_indexing.ScatterOp):
        shape = [draw(st.integers(1, 4)), draw(st.integers(1, 4))]
        x, index = arg(TensorType(shape, "f32")), arg(TensorType([shape[0], 2], "i64"))
        if cls is prim_indexing.GatherOp:
            return cls(x, index, 1)
        reduce = draw(st.sampled_from(prim_indexing.SCATTER_REDUCE))
        return cls(x, index, arg(TensorType([shape[0], 2], "f32")), 1, reduce, draw(st.booleans()))
    if cls in (prim_scan.CumsumOp, prim_scan.CumprodOp, prim_scan.SortOp, prim_scan.TopkOp):
        if not dims or t.dtype == "i1":
            t, dims = TensorType([2], "f32"), [2]
        d = draw(st.integers(0, len(dims) - 1))
        if cls is prim_scan.SortOp:
            return cls(arg(t), d, draw(st.booleans()), draw(st.booleans()))
        if cls is prim_scan.TopkOp:
            return cls(arg(t), 1, d, draw(st.booleans()), True)
        return cls(arg(t), d)
    if cls is prim_indexing.CheckIndexOp:
        it = t.with_dtype("i64") if draw(st.booleans()) else scalar_type("i64")  # a tensor, or a kernel's scalar
        return cls(arg(it), arg(it), draw(st.integers(0, 3)), draw(st.booleans()), "aten.index.Tensor")
    if cls in prim_scan.SCAN_OPS or cls in prim_indexing.INDEXING_OPS:
        return _zoo_library_op(draw, cls, arg)
    from strata.dialects import prim_linalg

    if cls in prim_linalg.LINALG_OPS:
        m, n = draw(zoo_dims()), draw(zoo_dims())
        a = arg(TensorType([2, m, n], draw(st.sampled_from(prim_linalg.LAPACK_DTYPES))))
        square = arg(TensorType([m, m], "f64"))
        if cls is prim_linalg.SvdOp:
            return cls(a, draw(st.booleans()), draw(st.booleans()))
        if cls is prim_linalg.QrOp:
            return cls(a, draw(st.sampled_from(prim_linalg.QR_MODES)))
        if cls is prim_linalg.PinvOp:
            tol = arg(TensorType([2], a.type.dtype)) if draw(st.booleans()) else None
            return cls(a, tol, None, draw(st.booleans()))
        if cls is prim_linalg.EighOp:
            return cls(square, draw(st.booleans()), draw(st.booleans()))
        return cls(square)
    from strata.testing.op_zoo_linalg import ZOO_LINALG_OPS, zoo_linalg_op

    if cls in ZOO_LINALG_OPS:
        return zoo_linalg_op(draw, cls, arg, zoo_dims)
    from strata.dialects import prim_convolution_backward, prim_random

    if cls is prim_random.RandomSeedOp:
        return cls()
    if cls in prim_random.PHILOX_OPS:
        return cls(arg(prim_random.SEED_TYPE), dims, draw(st.one_of(st.sampled_from([0, 2**40]), zoo_dims())))
    if cls in prim_convolution_backward.CONVOLUTION_BACKWARD_OPS:
        from strata.testing.prim_programs import convolution_shapes

        x, w, stride, padding, dilation, groups = draw(convolution_shapes(draw(zoo_dims())))
        grad = TensorType(prim._convolution_dims(x, w, stride, padding, dilation), "f32")
        if cls is prim_convolution_backward.ConvolutionBackwardInputOp:
            return cls(arg(grad), arg(TensorType(w, "f32")), x, stride, padding, dilation, groups)
        if cls is prim_convolution_backward.ConvolutionBackwardOp:
            return cls(arg(grad), arg(TensorType(x, "f32")), arg(TensorType(w, "f32")), stride, padding, dilation, groups)
        return cls(arg(grad), arg(TensorType(x, "f32")), w, stride, padding, dilation, groups)
    if cls is ScaledDotProductAttentionOp:
        bb, q_len, kv_len, e, ev = (draw(zoo_dims()) for _ in range(5))
        q, k = arg(TensorType([bb, q_len, e], "f32")), arg(TensorType([bb, kv_len, e], "f32"))
        v = arg(TensorType([bb, kv_len, ev], "f32"))
        mask = arg(TensorType([q_len, kv_len], "f32")) if draw(st.booleans()) else None
        scale = draw(st.one_of(st.none(), st.sampled_from([0.125, 0.5, 1.0])))
        return ScaledDotProductAttentionOp(q, k, v, mask, draw(st.booleans()), scale)
    if cls in FUSED_ATTENTION_OPS:
        bb, heads, q_len, kv_len, e, ev = (draw(zoo_dims()) for _ in range(6))
        q = arg(TensorType([bb, heads, q_len, e], "bf16"))
        k, v = arg(TensorType([bb, heads, kv_len, e], "bf16")), arg(TensorType([bb, heads, kv_len, ev], "bf16"))
        mask = arg(TensorType([q_len, kv_len], "bf16")) if draw(st.booleans()) else None
        flags = (draw(st.booleans()), draw(st.one_of(st.none(), st.sampled_from([0.125, 1.0]))), draw(st.sampled_from([1, 2, 3])))
        lse = TensorType([bb, heads, q_len], "f32")
        if cls is SdpaForwardOp:
            return SdpaForwardOp(q, k, v, mask, lse, *flags)
        out = arg(TensorType([bb, heads, q_len, ev], "bf16"))
        return SdpaBackwardOp(arg(TensorType([bb, heads, q_len, ev], "bf16")), q, k, v, mask, out, arg(lse), *flags)
    if cls in COMMUNICATION_OPS:
        return _zoo_collective(draw, cls, arg)
    from strata.testing.op_zoo_extra import ZOO_EXTRA_OPS, zoo_extra_op

    if cls in ZOO_EXTRA_OPS:
        return zoo_extra_op(draw, cls, arg, zoo_dims)
    raise GeneratorError(f"the zoo does not know {cls.name}: add it to _zoo_prim_op in testing/op_zoo.py")


def _zoo_collective(draw, cls, arg) -> Operation:
    """A collective over a group of two ranks (named "0"), or its wait."""
    from strata.dialects import prim_collectives as pc

    rows = 2 * draw(st.integers(1, 3))
    t = TensorType([rows, draw(zoo_dims())], draw(st.sampled_from(["f32", "bf16", "i64"])))
    reduce = draw(st.sampled_from(["sum", "max", "avg"]))
    if cls is pc.WaitOp:
        return cls(arg(t))
    if cls is pc.AllReduceOp:
        return cls(arg(t), reduce, "0")
    if cls is pc.AllGatherOp:
        return cls(arg(t), 2, "0")
    if cls is pc.ReduceScatterOp:
        return cls(arg(t), reduce, 2, "0")
    if cls is pc.AllToAllOp:
        splits = [rows // 2, rows // 2] if draw(st.booleans()) else None
        return cls(arg(t), splits, splits, "0")
    if cls is pc.BroadcastOp:
        return cls(arg(t), draw(st.integers(0, 1)), "0")
    xs = [arg(t), arg(t.with_dims([rows, 3]))]
    if cls is pc.AllReduceCoalescedOp:
        return cls(xs, reduce, "0")
    if cls is pc.AllGatherCoalescedOp:
        return cls(xs, 2, "0")
    return cls(xs, reduce, 2, "0")


def _zoo_library_op(draw, cls, arg) -> Operation:
    """The line ops of prim_scan (cummax … searchsorted) and the library writes of
    prim_indexing (index_reduce, put, nonzero_static)."""
    from strata.dialects import prim_indexing, prim_scan

    rows, cols = draw(st.integers(1, 4)), draw(zoo_dims())
    x = arg(TensorType([rows, cols], draw(st.sampled_from(["f32", "i64", "f16"]))))
    d = draw(st.integers(0, 1))
    if cls in (prim_scan.CummaxOp, prim_scan.CumminOp, prim_scan.ModeOp):
        return cls(x, d)
    if cls is prim_scan.KthvalueOp:
        return cls(x, 1, d)
    if cls is prim_scan.MedianOp:
        return cls(x, d, draw(st.booleans()))
    if cls is prim_scan.SearchsortedOp:
        seq = arg(TensorType(draw(st.sampled_from([[5], [rows, 5]])), x.type.dtype))
        return cls(seq, x, draw(st.booleans()), draw(st.booleans()))
    if cls is prim_indexing.IndexReduceOp:
        index, src = arg(TensorType([3], "i64")), arg(TensorType([3, cols], x.type.dtype))
        return cls(x, index, src, 0, draw(st.sampled_from(prim_indexing.INDEX_REDUCE)), draw(st.booleans()))
    if cls is prim_indexing.PutOp:
        return cls(x, arg(TensorType([2, 2], "i64")), arg(TensorType([4], x.type.dtype)), draw(st.booleans()))
    if cls is prim_indexing.NonzeroStaticOp:
        return cls(x, draw(zoo_dims()), draw(st.integers(-1, 1)))
    raise GeneratorError(f"the zoo does not know {cls.name}: add it to _zoo_library_op in testing/op_zoo.py")


INDEX_EXPRS = ("x0", "x0 + 4*x1", "r0 + s0*x0", "2*x0 + 1", "floor(x0/3)", "Mod(x1, s1)", "0", "s0*s1 - 1 - x0")


def _index_exprs(rank: int, reduction: bool) -> list[str]:
    """The INDEX_EXPRS that name only loop variables the domain has."""
    allowed = {f"x{i}" for i in range(rank)} | ({"r0"} if reduction else set()) | {"s0", "s1"}
    return [e for e in INDEX_EXPRS if {s.name for s in sym(e).free_symbols} <= allowed]


@st.composite
def _zoo_kernel_func(draw, name: str, reduction: bool) -> kd.FuncOp:
    dtype = draw(st.sampled_from(["f32", "f16", "i64", "i1", "bf16"]))
    et = scalar_type(dtype)
    func_op = kd.FuncOp(
        name,
        [kd.BufferType(et), kd.BufferType(et)],
        1,
        draw(st.lists(zoo_dims(), min_size=1, max_size=2)),
        [draw(zoo_dims())] if reduction else [],
        ["s0", "s1"],
        draw(st.lists(st.sampled_from(["aten.add.Tensor", "aten._softmax.default"]), max_size=2)),
    )
    inp, out = func_op.block.args
    exprs = st.sampled_from(_index_exprs(len(func_op.pointwise.data), bool(func_op.reduction.data)))

    def add(op: Operation) -> SSAValue:
        func_op.block.add_op(op)
        return op.results[0] if op.results else None

    x = add(kd.LoadOp(inp, sym(draw(exprs))))
    add(kd.IndexOp(sym(draw(exprs)), draw(st.sampled_from([i64, scalar_type("i32")]))))
    counter = add(kd.IndexOp(sym(draw(exprs))))
    add(kd.PhiloxOp(counter, counter, draw(st.integers(0, 3))))
    if is_float(dtype):
        value = FloatAttr(draw(st.floats(allow_nan=False, allow_infinity=False, width=16)), et)
    else:
        value = IntegerAttr(int(draw(st.booleans())) if dtype == "i1" else draw(st.integers(-100, 100)), et)
    y = add(prim.ELEMENTWISE_OPS["maximum"](x, add(arith.ConstantOp(value))))
    if func_op.reduction.data:
        y = add(kd.ReduceOp(y, draw(st.sampled_from(list(kd.REDUCE_KINDS)))))
    add(kd.StoreOp(y, out, sym(draw(exprs))))
    return func_op


@st.composite
def _zoo_kernel_program(draw, callee: str) -> kd.ProgramOp:
    t = draw(zoo_types(("f32", "i64")))
    program = kd.ProgramOp("graph", [t, t], [t], ["", ""], [contiguous_strides(t.dims), draw(st.lists(zoo_dims(), min_size=t.rank, max_size=t.rank))])
    a, c = program.block.args
    launch = kd.LaunchOp(callee, [a], [t])
    added = prim.ELEMENTWISE_OPS["add"](launch.outs[0], c)
    program.block.add_ops([launch, added, kd.ReturnOp([added.result])])
    return program


def dialect_ops(dialect: str) -> list[type[Operation]]:
    from strata.dialects.context import strata_dialects

    return list(next(d for d in strata_dialects() if d.name == dialect).operations)


# The zoo of a dialect with many ops is drawn in parts, one part an example.
PARTS = {"aten": 16, "prim": 6, "kernel": 1}


@st.composite
def op_zoo(draw, dialect: str, part: int | None = None) -> ModuleOp:
    """A module holding one op of every op class of `dialect` ("aten", "prim",
    "kernel") or, for a dialect with many, of every class in one part of them (part
    i of n holds classes i, i+n, …; `part` None draws it): each op with random
    operand types and properties. (aten ops need not verify: operands are random.)"""
    if dialect == "kernel":
        funcs = [draw(_zoo_kernel_func(f"k{i}", reduction=i == 0)) for i in range(draw(st.integers(1, 2)))]
        return ModuleOp([*funcs, draw(_zoo_kernel_program("k0"))])
    block = Block()
    palette = Palette(draw, block)
    n = PARTS[dialect]
    part = draw(st.integers(0, n - 1)) if part is None else part
    for cls in dialect_ops(dialect)[part::n]:
        if dialect == "aten":
            if cls is aten.CallOp:
                for overload in ZOO_CALLS:
                    block.add_op(draw(_zoo_aten_op(palette, block, cls, overload)))
            else:
                block.add_op(draw(_zoo_aten_op(palette, block, cls)))
        else:
            block.add_op(draw(_zoo_prim_op(palette, block, cls)))
    block.add_op(func.ReturnOp())
    fn = func.FuncOp("graph", ([a.type for a in block.args], []), Region(block))
    return ModuleOp([fn])
