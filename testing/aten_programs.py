"""Random aten programs: Core ATen overloads as traced graphs hold them, and some
overloads outside the core set (`aten.call`).

Every op is first run by torch on stand-in tensors (ones, of the shape symbols' hint
sizes): an op torch refuses is not added, and the result types are torch's (dtype) and
the generator's own symbolic shape rule, checked against torch's sizes. So a program
is one a traced graph could be, and the generator never guesses torch's promotion.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import sympy
import torch
from hypothesis import strategies as st
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IntegerAttr, StringAttr, i64
from xdsl.ir import Attribute, Operation, SSAValue

from strata.dialects import aten
from strata.dialects.prim_special_loops import SPECIAL_LOOP_OPS
from strata.dialects.types import DTYPES, Dim, TensorType, concrete, is_float, sym, symbol
from strata.testing.graphs import (
    FLOAT_DTYPES,
    GeneratorError,
    GraphBuilder,
    Program,
    axes,
    broadcast_dims,
    canonical,
    dims_strategy,
    new_input,
    operand,
    partner,
    pick,
    program,
    reshaped,
    same_dims,
    tensor_of,
)

# Sizes of the shape symbols while torch checks an op: distinct, neither 0 nor 1, so
# that no broadcast or specialization holds by accident.
HINTS = {"s0": 5, "s1": 7}

# Left out of f16 and bf16 programs: ops whose condition number is unbounded (it grows
# with the argument: exp, pow, sin of a large angle; or near some point: log near 1,
# atanh near ±1) and ops that jump (floor, fmod). A pass may round a 16-bit value
# once where eager rounds twice (a fused kernel computes in f32; addmm becomes mm and
# add): one ulp, within the dtype's tolerance, which these ops would turn into more.
# f32 programs keep them all: there a pass computes in the same precision as eager.
AMPLIFYING = frozenset(
    "exp exp2 expm1 sinh cosh pow sin cos tan log log2 log10 log1p asin acos atanh acosh "
    "erfinv erfcx digamma lgamma floor ceil round trunc remainder fmod floordiv sign".split()
) | frozenset(SPECIAL_LOOP_OPS)  # zeta and the orthogonal polynomials: both kinds


class AtenGraph(GraphBuilder):
    """Emits aten ops after checking them with torch."""

    def allowed(self, name: str) -> bool:
        return self.float_dtype == "f32" or name not in AMPLIFYING

    def emit(
        self,
        overload: str,
        values: dict[str, Any],
        result_dims: Callable[[], Sequence[Sequence[Dim]]] | None = None,
    ) -> Operation | None:
        """Adds `overload` with schema arguments `values` (SSAValues for tensors,
        Python or sympy values for the rest), or returns None when torch refuses them
        or a result would be of another floating dtype than the program's.
        `result_dims` gives the symbolic result shapes (default: the broadcast of the
        tensor operands)."""
        sig = aten.signature_of(aten.torch_overload(overload)._schema)
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for a in sig.args:
            if a.name not in values:
                continue
            if a.kwarg_only:
                kwargs[a.name] = _stand_in(values[a.name])
            else:
                args.append(_stand_in(values[a.name]))
        try:
            out = aten.torch_overload(overload)(*args, **kwargs)
        except Exception:
            return None
        if _refuses_dtypes(overload, sig, values):
            return None
        results = list(out) if isinstance(out, list | tuple) else [out]
        if not all(isinstance(r, torch.Tensor) for r in results):
            return None
        if result_dims is None:
            shape = broadcast_dims(*(tensor_of(v).dims for v in values.values() if isinstance(v, SSAValue)))
            if shape is None:
                raise GeneratorError(f"{overload}: the operands do not broadcast")
            dims_list: Sequence[Sequence[Dim]] = [shape] * len(results)
        else:
            dims_list = result_dims()
        types = []
        for r, dims in zip(results, dims_list):
            dims = [canonical(d) for d in dims]
            if concrete(dims, HINTS) != list(r.shape):
                raise GeneratorError(f"{overload}: the generator says {dims}, torch {list(r.shape)}, for {values}")
            dtype = aten.TORCH_TO_DTYPE.get(r.dtype)
            if dtype is None or (is_float(dtype) and dtype != self.float_dtype):
                return None
            types.append(TensorType(dims, dtype))
        op = aten.build(overload, {k: _hinted(v) for k, v in values.items()}, types)
        for a in sig.args:  # arguments that hold shape symbols, as the importer writes them
            if not a.is_tensor and _has_symbols(values.get(a.name)):
                set_argument(op, a.name, _symbolic_attr(values[a.name]))
        self.add(op)
        return op


def set_argument(op: aten.AtenOp, name: str, attr: Attribute) -> None:
    """Sets a non-tensor argument: a property, or an entry of aten.call's `arguments`."""
    if isinstance(op, aten.CallOp):
        op.properties["arguments"] = DictionaryAttr({**op.arguments.data, name: attr})
    else:
        op.properties[name] = attr


# What torch says when it refuses an operand's dtype rather than its shape.
_DTYPE_ERROR = re.compile(r"not implemented for|not supported|can't be cast|expected scalar type|dtype", re.I)


def _refuses_dtypes(overload: str, sig: aten.Signature, values: dict[str, Any]) -> bool:
    """Whether torch refuses these operand dtypes on tensors with elements: a kernel
    given an empty tensor may return before it checks the dtype, so the stand-ins of
    an op with an empty operand are run again with every dim 1."""
    tensors = [v for v in values.values() if isinstance(v, SSAValue)]
    tensors += [x for v in values.values() if isinstance(v, list) for x in v if isinstance(x, SSAValue)]
    if all(0 not in concrete(tensor_of(t).dims, HINTS) for t in tensors):
        return False

    def ones(v: Any) -> Any:
        if isinstance(v, SSAValue):
            return torch.ones([1] * tensor_of(v).rank, dtype=tensor_of(v).torch_dtype)
        if isinstance(v, list):
            return [ones(x) for x in v]
        return _stand_in(v)

    args = [ones(values[a.name]) for a in sig.args if a.name in values and not a.kwarg_only]
    kwargs = {a.name: ones(values[a.name]) for a in sig.args if a.name in values and a.kwarg_only}
    try:
        aten.torch_overload(overload)(*args, **kwargs)
    except Exception as e:
        return bool(_DTYPE_ERROR.search(str(e)))
    return False


def _stand_in(v: Any) -> Any:
    """What torch runs the op on: ones of the hint sizes (on the CPU: meta tensors
    would let through what the CPU kernels refuse, such as bitwise ops on floats)."""
    if isinstance(v, SSAValue):
        t = tensor_of(v)
        return torch.ones(concrete(t.dims, HINTS), dtype=t.torch_dtype)
    if isinstance(v, list):
        return [_stand_in(x) for x in v]
    if isinstance(v, sympy.Expr):
        return concrete([v], HINTS)[0]
    return v


def _hinted(v: Any) -> Any:
    """v with sympy values as ints (a symbolic one gets its property after build)."""
    if isinstance(v, list):
        return [_hinted(x) for x in v]
    if isinstance(v, sympy.Expr):
        return concrete([v], HINTS)[0]
    return v


def _has_symbols(v: Any) -> bool:
    if isinstance(v, list | tuple):
        return any(_has_symbols(x) for x in v)
    return isinstance(v, sympy.Expr) and not v.is_Integer


def _symbolic_attr(value: Any) -> Attribute:
    if isinstance(value, list | tuple):
        return ArrayAttr([_symbolic_attr(v) for v in value])
    if isinstance(value, sympy.Expr) and not value.is_Integer:
        return StringAttr(sympy.sstr(value))
    return IntegerAttr(int(value), i64)


# ---------------------------------------------------------------- the steps
UNARY = (
    "abs neg exp log sqrt sin cos tanh sigmoid relu erf floor ceil round trunc reciprocal rsqrt "
    "expm1 log1p sign logical_not bitwise_not isnan isinf clone alias atan asinh exp2 sinh"
).split()
BINARY = {
    "add": "aten::add.Tensor", "sub": "aten::sub.Tensor", "mul": "aten::mul.Tensor",
    "div": "aten::div.Tensor", "maximum": "aten::maximum", "minimum": "aten::minimum",
    "eq": "aten::eq.Tensor", "ne": "aten::ne.Tensor", "lt": "aten::lt.Tensor",
    "le": "aten::le.Tensor", "gt": "aten::gt.Tensor", "ge": "aten::ge.Tensor",
    "logical_and": "aten::logical_and", "logical_or": "aten::logical_or",
    "logical_xor": "aten::logical_xor", "bitwise_and": "aten::bitwise_and.Tensor",
    "bitwise_or": "aten::bitwise_or.Tensor", "bitwise_xor": "aten::bitwise_xor.Tensor",
    "atan2": "aten::atan2", "pow": "aten::pow.Tensor_Tensor",
}
WITH_SCALAR = {
    "add": "aten::add.Scalar", "sub": "aten::sub.Scalar", "mul": "aten::mul.Scalar",
    "div": "aten::div.Scalar", "eq": "aten::eq.Scalar", "ne": "aten::ne.Scalar",
    "lt": "aten::lt.Scalar", "ge": "aten::ge.Scalar", "pow": "aten::pow.Tensor_Scalar",
    "rsub": "aten::rsub.Scalar", "bitwise_and": "aten::bitwise_and.Scalar",
}
SCALARS = (2, 0.5, -1, 3.25, 0, 1, True, -2.5)


@st.composite
def unary(draw, b: AtenGraph) -> None:
    x = draw(operand(b))
    name = draw(st.sampled_from(UNARY))
    if b.allowed(name):
        b.emit(f"aten::{name}", {"self": x})


@st.composite
def activation(draw, b: AtenGraph) -> None:
    x = draw(operand(b, lambda t: t.dtype == b.float_dtype, dtype=b.float_dtype))
    kind = draw(st.sampled_from(["gelu", "leaky_relu", "hardtanh", "clamp", "clamp_min", "nan_to_num", "silu", "softplus", "elu"]))
    if kind == "gelu":
        b.emit("aten::gelu", {"self": x, "approximate": draw(st.sampled_from(["none", "tanh"]))})
    elif kind == "leaky_relu":
        b.emit("aten::leaky_relu", {"self": x, "negative_slope": draw(st.sampled_from([0.01, 0.2, -0.5]))})
    elif kind == "hardtanh":
        b.emit("aten::hardtanh", {"self": x, "min_val": -0.5, "max_val": draw(st.sampled_from([0.5, 2.0]))})
    elif kind == "clamp":
        lo, hi = draw(st.sampled_from([(None, 1.5), (-1.0, None), (0, 2), (-1.0, 1.5)]))
        b.emit("aten::clamp", {"self": x, "min": lo, "max": hi})
    elif kind == "clamp_min":
        b.emit("aten::clamp_min", {"self": x, "min": draw(st.sampled_from([0.0, -0.5]))})
    elif kind == "nan_to_num":
        b.emit("aten::nan_to_num", {"self": x, "nan": 0.5, "posinf": draw(st.sampled_from([None, 100.0]))})
    elif b.allowed("exp"):  # silu, softplus, elu: outside the core set or without a rule
        b.emit(f"aten::{kind}", {"self": x})


@st.composite
def binary(draw, b: AtenGraph) -> None:
    name = draw(st.sampled_from(list(BINARY)))
    x = draw(operand(b))
    y = draw(partner(b, x))
    values: dict[str, Any] = {"self": x, "other": y}
    floats = is_float(tensor_of(x).dtype) and is_float(tensor_of(y).dtype)
    if name in ("add", "sub") and draw(st.booleans()):
        values["alpha"] = draw(st.sampled_from([2, 0.5])) if floats else 2
    if name == "pow":
        if not b.allowed("pow"):
            return
        if not is_float(tensor_of(x).dtype) and not is_float(tensor_of(y).dtype):
            values["other"] = clamped(b, y, 0, 3)  # integers to negative powers: an error
    if values["other"] is not None:
        b.emit(BINARY[name], values)


def clamped(b: AtenGraph, y: SSAValue, lo: int, hi: int | None) -> SSAValue | None:
    op = b.emit("aten::clamp", {"self": y, "min": lo, "max": hi}, lambda: [tensor_of(y).dims])
    return None if op is None else op.results[0]


@st.composite
def division(draw, b: AtenGraph) -> None:
    """Floor and trunc division, remainder and fmod; an integer divisor is clamped
    to 1 and above."""
    kind = draw(st.sampled_from(["floor", "trunc", "remainder", "fmod"]))
    numeric = b.numeric if b.allowed(kind) else ("i64",)
    x = draw(operand(b, lambda t: t.dtype in numeric, dtypes=numeric))
    y = draw(partner(b, x, numeric))
    if not is_float(tensor_of(x).dtype) and not is_float(tensor_of(y).dtype):
        y = clamped(b, y, 1, None)
    if y is None:
        return
    if kind in ("floor", "trunc"):
        b.emit("aten::div.Tensor_mode", {"self": x, "other": y, "rounding_mode": kind})
    else:
        b.emit(f"aten::{kind}.Tensor", {"self": x, "other": y})


@st.composite
def with_scalar(draw, b: AtenGraph) -> None:
    name = draw(st.sampled_from(list(WITH_SCALAR)))
    x = draw(operand(b))
    s = draw(st.sampled_from(SCALARS))
    if name == "pow":
        if not b.allowed("pow"):
            return
        if not is_float(tensor_of(x).dtype):
            s = draw(st.sampled_from([2, 0, 1]))
    b.emit(WITH_SCALAR[name], {"self": x, "exponent" if name == "pow" else "other": s})


@st.composite
def where(draw, b: AtenGraph) -> None:
    c = draw(pick(b, lambda t: t.dtype == "i1"))
    if c is None:
        x = draw(operand(b, lambda t: t.dtype != "i1", dtypes=b.numeric))
        op = b.emit("aten::gt.Scalar", {"self": x, "other": 0})
        if op is None:
            return
        c = op.results[0]
    a = draw(partner(b, c))
    other = draw(partner(b, a))
    if broadcast_dims(tensor_of(c).dims, tensor_of(a).dims, tensor_of(other).dims) is not None:
        b.emit("aten::where.self", {"condition": c, "self": a, "other": other})


def _reduced(dims: Sequence[Dim], reduced: Sequence[int], keepdim: bool) -> list[Dim]:
    if keepdim:
        return [1 if i in reduced else d for i, d in enumerate(dims)]
    return [d for i, d in enumerate(dims) if i not in reduced]


@st.composite
def reduction(draw, b: AtenGraph) -> None:
    kind = draw(st.sampled_from(
        ["sum", "mean", "amax", "amin", "prod", "any", "var", "max", "argmax", "softmax", "log_softmax", "sum_all"]
    ))
    x = draw(operand(b, lambda t: t.rank >= 1, dims=draw(st.integers(1, 3).flatmap(dims_strategy))))
    t = tensor_of(x)
    keepdim = draw(st.booleans())
    dims = draw(axes(t.rank))
    if kind in ("amax", "amin", "max", "argmax", "softmax", "log_softmax"):
        # torch refuses these over an empty dim: keep to dims known to be nonempty
        dims = [d for d in dims if isinstance(t.dims[d], int) and t.dims[d] > 0]
        if not dims:
            return
    written = [d - t.rank for d in dims] if draw(st.booleans()) else dims
    out = _reduced(t.dims, dims, keepdim)
    one = _reduced(t.dims, dims[:1], keepdim)
    if kind == "sum":
        b.emit("aten::sum.dim_IntList", {"self": x, "dim": written, "keepdim": keepdim}, lambda: [out])
    elif kind == "sum_all":
        b.emit("aten::sum", {"self": x}, lambda: [[]])
    elif kind == "mean":
        b.emit("aten::mean.dim", {"self": x, "dim": written, "keepdim": keepdim}, lambda: [out])
    elif kind in ("amax", "amin"):
        b.emit(f"aten::{kind}", {"self": x, "dim": written, "keepdim": keepdim}, lambda: [out])
    elif kind == "var":
        correction = draw(st.sampled_from([0, 1]))
        b.emit("aten::var.correction", {"self": x, "dim": written, "correction": correction, "keepdim": keepdim}, lambda: [out])
    elif kind == "prod":
        b.emit("aten::prod.dim_int", {"self": x, "dim": written[0], "keepdim": keepdim}, lambda: [one])
    elif kind == "any":
        b.emit("aten::any.dim", {"self": x, "dim": written[0], "keepdim": keepdim}, lambda: [one])
    elif kind == "max":
        b.emit("aten::max.dim", {"self": x, "dim": written[0], "keepdim": keepdim}, lambda: [one, one])
    elif kind == "argmax":
        b.emit("aten::argmax", {"self": x, "dim": written[0], "keepdim": keepdim}, lambda: [one])
    else:
        name = "aten::_softmax" if kind == "softmax" else "aten::_log_softmax"
        b.emit(name, {"self": x, "dim": written[0], "half_to_float": False}, lambda: [t.dims])


@st.composite
def view(draw, b: AtenGraph) -> None:
    kind = draw(st.sampled_from(["reshape", "permute", "transpose", "unsqueeze", "squeeze", "expand", "slice", "select", "flip", "t"]))
    x = draw(operand(b))
    t = tensor_of(x)
    dims = list(t.dims)
    if kind == "reshape":
        target = draw(reshaped(dims))
        if draw(st.booleans()):
            b.emit("aten::reshape", {"self": x, "size": target}, lambda: [target])
            return
        # eager's view needs a layout it can view: traced graphs make the operand
        # contiguous first (x.contiguous().view(...)), and so do we
        contiguous = b.emit("aten::clone", {"self": x, "memory_format": torch.contiguous_format}, lambda: [dims])
        if contiguous is not None:
            b.emit("aten::view", {"self": contiguous.results[0], "size": target}, lambda: [target])
    elif kind == "permute" and t.rank >= 1:
        perm = list(draw(st.permutations(range(t.rank))))
        b.emit("aten::permute", {"self": x, "dims": perm}, lambda: [[dims[p] for p in perm]])
    elif kind == "transpose" and t.rank >= 2:
        i, j = draw(st.integers(0, t.rank - 1)), draw(st.integers(0, t.rank - 1))
        out = list(dims)
        out[i], out[j] = out[j], out[i]
        b.emit("aten::transpose.int", {"self": x, "dim0": i, "dim1": j}, lambda: [out])
    elif kind == "t" and t.rank <= 2:
        b.emit("aten::t", {"self": x}, lambda: [dims[::-1]])
    elif kind == "unsqueeze":
        d = draw(st.integers(0, t.rank))
        b.emit("aten::unsqueeze", {"self": x, "dim": d}, lambda: [[*dims[:d], 1, *dims[d:]]])
    elif kind == "squeeze":
        ones = [i for i, d in enumerate(dims) if d == 1]
        chosen = sorted(draw(st.lists(st.sampled_from(ones), unique=True))) if ones else []
        b.emit("aten::squeeze.dims", {"self": x, "dim": chosen}, lambda: [[d for i, d in enumerate(dims) if i not in chosen]])
    elif kind == "expand":
        lead = draw(st.lists(st.sampled_from([2, 1, 3, symbol("s0")]), max_size=2))
        grown = [draw(st.sampled_from([2, 3, symbol("s1")])) if d == 1 and draw(st.booleans()) else d for d in dims]
        size = [*lead, *[(-1 if draw(st.booleans()) else d) if g is d else g for d, g in zip(dims, grown)]]
        b.emit("aten::expand", {"self": x, "size": size}, lambda: [[*lead, *grown]])
    elif kind in ("slice", "select"):
        literal = [i for i, d in enumerate(dims) if isinstance(d, int) and d >= 1]
        if not literal:
            return
        i = draw(st.sampled_from(literal))
        n = dims[i]
        if kind == "select":
            index = draw(st.integers(-n, n - 1))
            b.emit("aten::select.int", {"self": x, "dim": i, "index": index}, lambda: [dims[:i] + dims[i + 1 :]])
            return
        start = draw(st.integers(-n, n))
        end = draw(st.sampled_from([n, n - 1, 2**63 - 1, -1, 1]))
        step = draw(st.sampled_from([1, 2, 3]))
        out = [len(range(n)[start:end:step]) if k == i else d for k, d in enumerate(dims)]
        b.emit("aten::slice.Tensor", {"self": x, "dim": i, "start": start, "end": end, "step": step}, lambda: [out])
    elif kind == "flip" and t.rank >= 1:
        b.emit("aten::flip", {"self": x, "dims": draw(axes(t.rank))}, lambda: [dims])


@st.composite
def cat(draw, b: AtenGraph) -> None:
    x = draw(operand(b, lambda t: t.rank >= 1, dims=draw(st.integers(1, 3).flatmap(dims_strategy))))
    t = tensor_of(x)
    axis = draw(st.integers(0, t.rank - 1))

    def fits(u: TensorType) -> bool:
        return u.rank == t.rank and same_dims([d for k, d in enumerate(u.dims) if k != axis], [d for k, d in enumerate(t.dims) if k != axis])

    parts = [x]
    for _ in range(draw(st.integers(1, 2))):
        y = draw(pick(b, fits)) if draw(st.booleans()) else None
        if y is None:
            dims = list(t.dims)
            dims[axis] = draw(st.sampled_from([1, 2, 0, symbol("s1")]))
            y = draw(new_input(b, dims=dims))
        parts.append(y)
    total = canonical(sum((sym(tensor_of(p).dims[axis]) for p in parts), sympy.Integer(0)))
    out = [total if k == axis else d for k, d in enumerate(t.dims)]
    b.emit("aten::cat", {"tensors": parts, "dim": axis}, lambda: [out])


@st.composite
def convert(draw, b: AtenGraph) -> None:
    x = draw(operand(b))
    dtype = draw(st.sampled_from(b.dtypes))
    b.emit("aten::_to_copy", {"self": x, "dtype": DTYPES[dtype]}, lambda: [tensor_of(x).dims])


@st.composite
def matmul(draw, b: AtenGraph) -> None:
    kind = draw(st.sampled_from(["mm", "bmm", "addmm"]))
    size = st.sampled_from([2, 3, 1, symbol("s0"), 4])
    m, k, n = draw(size), draw(size), draw(size)
    dtype = b.float_dtype

    def matrix(dims: list[Dim]) -> SSAValue:
        return draw(operand(b, lambda t: t.dtype == dtype and same_dims(t.dims, dims), dims=dims, dtype=dtype))

    if kind == "bmm":
        batch = draw(size)
        b.emit("aten::bmm", {"self": matrix([batch, m, k]), "mat2": matrix([batch, k, n])}, lambda: [[batch, m, n]])
    elif kind == "mm":
        b.emit("aten::mm", {"self": matrix([m, k]), "mat2": matrix([k, n])}, lambda: [[m, n]])
    else:
        values = {"self": matrix(draw(st.sampled_from([[n], [m, n], [1, n]]))), "mat1": matrix([m, k]), "mat2": matrix([k, n])}
        if draw(st.booleans()):
            values["beta"], values["alpha"] = draw(st.sampled_from([(0.5, 2), (1, 0.5), (0, 1)]))
        b.emit("aten::addmm", values, lambda: [[m, n]])


@st.composite
def convolution(draw, b: AtenGraph) -> None:
    from strata.testing.prim_programs import convolution_crashes, convolution_shapes

    if convolution_crashes(b.float_dtype):
        return
    batch = draw(st.sampled_from([2, 1, symbol("s0")]))
    x_dims, w_dims, stride, padding, dilation, groups = draw(convolution_shapes(batch))
    dtype = b.float_dtype

    def tensor(dims: list[Dim]) -> SSAValue:
        return draw(operand(b, lambda t: t.dtype == dtype and same_dims(t.dims, dims), dims=dims, dtype=dtype))

    x, w = tensor(x_dims), tensor(w_dims)
    bias = tensor([w_dims[0]]) if draw(st.booleans()) else None
    out = [batch, w_dims[0]] + [
        (n + 2 * p - d * (k - 1) - 1) // s + 1
        for n, k, s, p, d in zip(x_dims[2:], w_dims[2:], stride, padding, dilation)
    ]
    values = {
        "input": x, "weight": w, "bias": bias, "stride": stride, "padding": padding, "dilation": dilation,
        "transposed": False, "output_padding": [0] * len(stride), "groups": groups,
    }
    b.emit("aten::convolution", values, lambda: [out])


@st.composite
def creation(draw, b: AtenGraph) -> None:
    kind = draw(st.sampled_from(["full", "scalar_tensor", "arange", "full_like", "zeros_like"]))
    if kind == "full":
        dims = draw(st.integers(0, 3).flatmap(dims_strategy))
        dtype = draw(st.sampled_from(b.dtypes))
        value = {"i1": True, "i64": draw(st.sampled_from([2, 0, -3]))}.get(dtype, draw(st.sampled_from([1.5, 0.0, -2.0])))
        b.emit("aten::full", {"size": dims, "fill_value": value, "dtype": DTYPES[dtype]}, lambda: [dims])
    elif kind == "scalar_tensor":
        dtype = draw(st.sampled_from([b.float_dtype, "i64"]))
        b.emit("aten::scalar_tensor", {"s": draw(st.sampled_from([2.5, -1.0, 3])), "dtype": DTYPES[dtype]}, lambda: [[]])
    elif kind == "arange":
        start, end, step = draw(st.sampled_from([(0, 5, 1), (1, 10, 2), (0, 3, 1), (-2, 2, 1)]))
        dtype = draw(st.sampled_from([None, DTYPES[b.float_dtype]]))
        n = len(range(start, end, step))
        b.emit("aten::arange.start_step", {"start": start, "end": end, "step": step, "dtype": dtype}, lambda: [[n]])
    else:
        x = draw(operand(b))
        if kind == "zeros_like":
            b.emit("aten::zeros_like", {"self": x}, lambda: [tensor_of(x).dims])
        else:
            b.emit("aten::full_like", {"self": x, "fill_value": draw(st.sampled_from([1, 0]))}, lambda: [tensor_of(x).dims])


STEPS: dict[str, Callable[[AtenGraph], st.SearchStrategy[None]]] = {
    "unary": unary,
    "binary": binary,
    "scalar": with_scalar,
    "view": view,
    "reduction": reduction,
    "activation": activation,
    "where": where,
    "division": division,
    "convert": convert,
    "cat": cat,
    "matmul": matmul,
    "creation": creation,
    "convolution": convolution,
}


# Elementwise ops are most of any program.
WEIGHTS = {"binary": 3, "scalar": 2, "unary": 2}


def _clone_first(b: GraphBuilder) -> None:
    assert isinstance(b, AtenGraph)
    x = b.pool[0]
    b.emit("aten::clone", {"self": x}, lambda: [tensor_of(x).dims])


@st.composite
def aten_programs(draw, max_ops: int = 8, steps: Sequence[str] = tuple(STEPS), float_dtypes: Sequence[str] = FLOAT_DTYPES) -> Program:
    """Random programs of aten ops; `steps` picks the kinds of ops (keys of STEPS)."""
    b = AtenGraph(float_dtype=draw(st.sampled_from(list(float_dtypes))))
    return draw(program(b, STEPS, steps, max_ops, "aten", _clone_first, WEIGHTS))
