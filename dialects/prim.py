"""The prim dialect: a closed set of primitive tensor ops, in the spirit of PrimTorch.

No implicit broadcasting (`prim.broadcast_in_dim`) or promotion
(`prim.convert_element_type`), no optional arguments. Elementwise ops accept either
`!strata.tensor` operands of one shape and dtype, or builtin scalars of one type: the
second form is how kernel bodies (dialects/kernel.py) compute one element.

Each op carries three rules next to its definition: `verify_` (operand constraints),
`infer_type` (result type from operand types and properties, over sympy dims) and
`reference` (its meaning, as torch code). Elementwise ops are declared by table, the
rest by hand.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import ClassVar

import sympy
from strata.dialects.lazy_torch import torch, torch_fn
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    f64,
    i64,
)
from xdsl.ir import Attribute, Dialect, SSAValue
from xdsl.irdl import (
    IRDLOperation,
    ParsePropInAttrDict,
    irdl_op_definition,
    operand_def,
    prop_def,
    result_def,
    traits_def,
    var_operand_def,
)
from xdsl.traits import Pure
from xdsl.utils.exceptions import VerifyException

from strata.dialects.prim_bits import BIT_OPS
from strata.dialects.prim_special_loops import SPECIAL_LOOP_OPS
from strata.dialects.prim_igamma import IGAMMA_OPS
from strata.dialects.types import (
    DTYPES,
    Dim,
    TensorType,
    concrete,
    dim_attr,
    dim_from_attr,
    is_float,
    numel,
    scalar_dtype,
    sym,
)

FORMAT = "operands attr-dict `:` functional-type(operands, results)"
CREATION_FORMAT = "attr-dict `:` type(results)"


# ---------------------------------------------------------------- property helpers
def dims_attr(dims: Sequence[Dim]) -> ArrayAttr:
    """A list of dims (ints or sympy expressions) as a property."""
    out: list[Attribute] = []
    for d in dims:
        a = dim_attr(d)
        out.append(IntegerAttr(a.data, i64) if not isinstance(a, StringAttr) else a)
    return ArrayAttr(out)


def dims_of(attr: ArrayAttr) -> tuple[Dim, ...]:
    return tuple(
        a.value.data if isinstance(a, IntegerAttr) else dim_from_attr(a)
        for a in attr.data
    )


def ints_attr(values: Sequence[int]) -> DenseArrayBase:
    return DenseArrayBase.from_list(i64, list(values))


def ints_of(attr: DenseArrayBase) -> tuple[int, ...]:
    return tuple(int(v) for v in attr.get_values())


def scalar_attr(value: float | int | bool, dtype: str) -> Attribute:
    """A compile-time scalar: FloatAttr for float dtypes, IntegerAttr otherwise."""
    if is_float(dtype):
        return FloatAttr(float(value), f64)
    return IntegerAttr(int(value), IntegerType(1) if dtype == "i1" else i64)


def scalar_of(attr: Attribute) -> float | int | bool:
    if isinstance(attr, FloatAttr):
        return attr.value.data
    assert isinstance(attr, IntegerAttr)
    return attr.value.data


def same_dims(a: Sequence[Dim], b: Sequence[Dim]) -> bool:
    return len(a) == len(b) and all(_same_dim(x, y) for x, y in zip(a, b))


def _same_dim(x: Dim, y: Dim) -> bool:
    # Equal as written (nearly every dim a verifier compares), two different integers,
    # or equal as expressions; sympy.simplify only where expand cannot tell.
    if x == y:
        return True
    if isinstance(x, int) and isinstance(y, int):
        return False
    ex, ey = sym(x), sym(y)
    return ex == ey or sympy.expand(ex - ey) == 0 or sympy.simplify(ex - ey) == 0


def element_dtype(t: Attribute) -> str:
    return t.dtype if isinstance(t, TensorType) else scalar_dtype(t)


class PrimOp(IRDLOperation):
    """Base of every prim op: the shared format and the three rules."""

    assembly_format = FORMAT
    irdl_options = (ParsePropInAttrDict(),)
    traits = traits_def(Pure())

    def infer_type(self) -> Attribute:
        raise NotImplementedError(f"{self.name} has no shape rule")

    def reference(self, *args: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError(f"{self.name} has no reference implementation")

    def verify_(self) -> None:
        for r in self.results:
            expected = self.infer_type()
            if not types_match(r.type, expected):
                raise VerifyException(
                    f"{self.name}: result type {r.type} does not match the inferred {expected}"
                )


def types_match(a: Attribute, b: Attribute) -> bool:
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        return a.dtype == b.dtype and same_dims(a.dims, b.dims)
    return a == b


# ---------------------------------------------------------------- elementwise ops
def _float_only(dtype: str) -> bool:
    return is_float(dtype)


def _numeric(dtype: str) -> bool:
    return dtype != "i1"


def _integral(dtype: str) -> bool:
    return not is_float(dtype)


def _integral_not_bool(dtype: str) -> bool:
    return not is_float(dtype) and dtype != "i1"


def _bool_only(dtype: str) -> bool:
    return dtype == "i1"


def _any(dtype: str) -> bool:
    return True


def _remainder(a, b):
    return torch.remainder(a, b)


def _div(a, b):
    if a.dtype.is_floating_point:
        return torch.div(a, b)
    return torch.div(a, b, rounding_mode="trunc")


# name: (arity, operand dtype rule, result is bool, reference)
ELEMENTWISE: dict[str, tuple[int, Callable[[str], bool], bool, Callable]] = {
    # unary, float math
    **{
        n: (1, _float_only, False, torch_fn(n))
        for n in (
            "exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan asin acos atan "
            "sinh cosh tanh asinh acosh atanh erf erfc erfinv sigmoid reciprocal lgamma "
            "digamma"
        ).split()
    },
    # exp(x^2) erfc(x), by ATen's table of 100 polynomials (codegen/llvm_erfcx.py)
    "erfcx": (1, _float_only, False, torch_fn("special.erfcx")),
    # unary, numeric
    "neg": (1, _numeric, False, torch_fn("neg")),
    "abs": (1, _numeric, False, torch_fn("abs")),
    "sign": (1, _numeric, False, torch_fn("sign")),
    "floor": (1, _numeric, False, torch_fn("floor")),
    "ceil": (1, _numeric, False, torch_fn("ceil")),
    "round": (1, _numeric, False, torch_fn("round")),
    "trunc": (1, _numeric, False, torch_fn("trunc")),
    "bitwise_not": (1, _integral, False, torch_fn("bitwise_not")),
    "logical_not": (1, _bool_only, True, torch_fn("logical_not")),
    "isnan": (1, _any, True, torch_fn("isnan")),
    "isinf": (1, _any, True, torch_fn("isinf")),
    "signbit": (1, _numeric, True, torch_fn("signbit")),
    # binary, numeric
    "add": (2, _any, False, torch_fn("add")),
    "sub": (2, _numeric, False, torch_fn("sub")),
    "mul": (2, _any, False, torch_fn("mul")),
    "div": (2, _numeric, False, _div),
    "floordiv": (2, _numeric, False, lambda a, b: torch.div(a, b, rounding_mode="floor")),
    "remainder": (2, _numeric, False, _remainder),
    "fmod": (2, _numeric, False, torch_fn("fmod")),
    "pow": (2, _numeric, False, torch_fn("pow")),
    "maximum": (2, _any, False, torch_fn("maximum")),
    "minimum": (2, _any, False, torch_fn("minimum")),
    "atan2": (2, _float_only, False, torch_fn("atan2")),
    "copysign": (2, _float_only, False, torch_fn("copysign")),
    "hypot": (2, _float_only, False, torch_fn("hypot")),
    "bitwise_and": (2, _integral, False, torch_fn("bitwise_and")),
    "bitwise_or": (2, _integral, False, torch_fn("bitwise_or")),
    "bitwise_xor": (2, _integral, False, torch_fn("bitwise_xor")),
    "shift_left": (2, _integral_not_bool, False, torch_fn("bitwise_left_shift")),
    "shift_right": (2, _integral_not_bool, False, torch_fn("bitwise_right_shift")),
    # binary, comparisons and logic (bool results)
    "eq": (2, _any, True, torch_fn("eq")),
    "ne": (2, _any, True, torch_fn("ne")),
    "lt": (2, _any, True, torch_fn("lt")),
    "le": (2, _any, True, torch_fn("le")),
    "gt": (2, _any, True, torch_fn("gt")),
    "ge": (2, _any, True, torch_fn("ge")),
    "logical_and": (2, _bool_only, True, torch_fn("logical_and")),
    "logical_or": (2, _bool_only, True, torch_fn("logical_or")),
    "logical_xor": (2, _bool_only, True, torch_fn("logical_xor")),
    # binary, with a per-element loop (zeta, orthogonal polynomials)
    **SPECIAL_LOOP_OPS,
    # the regularized incomplete gamma functions, by ATen's series (prim_igamma.py)
    **IGAMMA_OPS,
    # on bits, or with a short integer loop (gcd, nextafter, frexp)
    **BIT_OPS,
}


class ElementwiseOp(PrimOp):
    """An op applied element by element to operands of one shape and one dtype."""

    ARITY: ClassVar[int]
    ACCEPTS: ClassVar[Callable[[str], bool]]
    BOOL_RESULT: ClassVar[bool]
    FN: ClassVar[Callable]

    args = var_operand_def()
    result = result_def()

    def __init__(self, *args: SSAValue, result_type: Attribute | None = None):
        super().__init__(operands=[list(args)], result_types=[result_type or _elementwise_type(self, args)])

    def infer_type(self) -> Attribute:
        return _elementwise_type(self, self.args)

    def verify_(self) -> None:
        if len(self.args) != self.ARITY:
            raise VerifyException(f"{self.name} takes {self.ARITY} operands, got {len(self.args)}")
        types = [a.type for a in self.args]
        if not all(types_match(t, types[0]) for t in types):
            raise VerifyException(
                f"{self.name}: operands must have one shape and dtype (prim does not "
                f"broadcast or promote), got {', '.join(map(str, types))}"
            )
        dtype = element_dtype(types[0])
        if not self.ACCEPTS(dtype):
            raise VerifyException(f"{self.name} does not accept dtype {dtype}")
        super().verify_()

    def reference(self, *args: torch.Tensor) -> torch.Tensor:
        return type(self).FN(*args)


def _elementwise_type(op: type | ElementwiseOp, args: Sequence[SSAValue]) -> Attribute:
    t = args[0].type
    if not op.BOOL_RESULT:
        return t
    if isinstance(t, TensorType):
        return t.with_dtype("i1")
    return IntegerType(1)


def _elementwise_class(name: str) -> type[ElementwiseOp]:
    arity, accepts, bool_result, fn = ELEMENTWISE[name]
    cls_name = "".join(p.capitalize() for p in name.split("_")) + "Op"
    cls = type(
        cls_name,
        (ElementwiseOp,),
        {
            "name": f"prim.{name}",
            "ARITY": arity,
            "ACCEPTS": staticmethod(accepts),
            "BOOL_RESULT": bool_result,
            "FN": staticmethod(fn),
            "__annotations__": {"ARITY": ClassVar[int], "BOOL_RESULT": ClassVar[bool]},
            "__qualname__": cls_name,
            "__module__": __name__,
        },
    )
    return irdl_op_definition(cls)


ELEMENTWISE_OPS: dict[str, type[ElementwiseOp]] = {
    n: _elementwise_class(n) for n in ELEMENTWISE
}


@irdl_op_definition
class WhereOp(PrimOp):
    """`cond ? a : b`, element by element; cond is i1, a and b share a type."""

    name = "prim.where"
    cond = operand_def()
    a = operand_def()
    b = operand_def()
    result = result_def()

    def __init__(self, cond: SSAValue, a: SSAValue, b: SSAValue):
        super().__init__(operands=[cond, a, b], result_types=[a.type])

    def infer_type(self) -> Attribute:
        return self.a.type

    def verify_(self) -> None:
        if element_dtype(self.cond.type) != "i1":
            raise VerifyException("prim.where: the condition must be i1")
        if not types_match(self.a.type, self.b.type):
            raise VerifyException("prim.where: both branches must have one type")
        if isinstance(self.a.type, TensorType) and not same_dims(self.cond.type.dims, self.a.type.dims):
            raise VerifyException("prim.where: condition and branches must have one shape")
        super().verify_()

    def reference(self, c, a, b):
        return torch.where(c, a, b)


# ---------------------------------------------------------------- type conversion
# A discardable attribute of a prim.convert_element_type to f16/bf16 that only rounds an
# elementwise op's f32 computation to the op's dtype (eager's opmath), not a cast the
# program asked for: inside a fused kernel the value may stay in f32.
OPMATH_ROUNDING = "strata.opmath_rounding"


@irdl_op_definition
class ConvertElementTypeOp(PrimOp):
    """Converts each element to `dtype` with torch's `.to()` semantics. With the unit
    attribute `strata.opmath_rounding` (set by the decompositions on the rounding that
    ends an f16/bf16 op computed in f32), fuse may keep the value in f32 inside a
    kernel and round it where it is stored, unless `fuse{emulate_precision_casts=true}`."""

    name = "prim.convert_element_type"
    x = operand_def()
    result = result_def()
    dtype = prop_def(StringAttr)

    def __init__(self, x: SSAValue, dtype: str):
        t = x.type
        rt = t.with_dtype(dtype) if isinstance(t, TensorType) else _scalar(dtype)
        super().__init__(operands=[x], result_types=[rt], properties={"dtype": StringAttr(dtype)})

    def infer_type(self) -> Attribute:
        t = self.x.type
        d = self.dtype.data
        return t.with_dtype(d) if isinstance(t, TensorType) else _scalar(d)

    def verify_(self) -> None:
        if self.dtype.data not in DTYPES:
            raise VerifyException(f"prim.convert_element_type: unknown dtype {self.dtype.data}")
        super().verify_()

    def reference(self, x):
        return x.to(DTYPES[self.dtype.data])


def _scalar(dtype: str) -> Attribute:
    from strata.dialects.types import scalar_type

    return scalar_type(dtype)


# ---------------------------------------------------------------- shape ops
class TensorOp(PrimOp):
    """A prim op over whole tensors (no scalar form)."""

    def tensor(self, v: SSAValue) -> TensorType:
        if not isinstance(v.type, TensorType):
            raise VerifyException(f"{self.name} takes tensors, got {v.type}")
        return v.type


@irdl_op_definition
class BroadcastInDimOp(TensorOp):
    """Result dims are `shape`; operand dim i becomes result dim
    `broadcast_dimensions[i]`, and must be 1 there or equal to it."""

    name = "prim.broadcast_in_dim"
    x = operand_def()
    result = result_def()
    shape = prop_def(ArrayAttr)
    broadcast_dimensions = prop_def(DenseArrayBase)

    def __init__(self, x: SSAValue, shape: Sequence[Dim], broadcast_dimensions: Sequence[int]):
        super().__init__(
            operands=[x],
            result_types=[x.type.with_dims(shape)],
            properties={"shape": dims_attr(shape), "broadcast_dimensions": ints_attr(broadcast_dimensions)},
        )

    def infer_type(self) -> Attribute:
        return self.tensor(self.x).with_dims(dims_of(self.shape))

    def verify_(self) -> None:
        t = self.tensor(self.x)
        shape = dims_of(self.shape)
        bd = ints_of(self.broadcast_dimensions)
        if len(bd) != t.rank:
            raise VerifyException("prim.broadcast_in_dim: one broadcast dimension per operand dim")
        if list(bd) != sorted(set(bd)) or any(not 0 <= b < len(shape) for b in bd):
            raise VerifyException("prim.broadcast_in_dim: broadcast_dimensions must increase and be in range")
        for i, b in enumerate(bd):
            if t.dims[i] != 1 and not same_dims([t.dims[i]], [shape[b]]):
                raise VerifyException(
                    f"prim.broadcast_in_dim: operand dim {i} ({t.dims[i]}) cannot broadcast to {shape[b]}"
                )
        super().verify_()

    def reference(self, x):
        return broadcast_in_dim(x, concrete(dims_of(self.shape)), ints_of(self.broadcast_dimensions))


def broadcast_in_dim(x, shape: Sequence[int], broadcast_dimensions: Sequence[int]):
    """x's dims placed at `broadcast_dimensions` of `shape` and expanded to it (a view)."""
    view = [1] * len(shape)
    for i, b in enumerate(broadcast_dimensions):
        view[b] = x.shape[i]
    return x.reshape(view).expand(shape)


@irdl_op_definition
class ReshapeOp(TensorOp):
    """Row-major reshape to `shape`, which has the operand's number of elements."""

    name = "prim.reshape"
    x = operand_def()
    result = result_def()
    shape = prop_def(ArrayAttr)

    def __init__(self, x: SSAValue, shape: Sequence[Dim]):
        super().__init__(operands=[x], result_types=[x.type.with_dims(shape)], properties={"shape": dims_attr(shape)})

    def infer_type(self) -> Attribute:
        return self.tensor(self.x).with_dims(dims_of(self.shape))

    def verify_(self) -> None:
        t = self.tensor(self.x)
        if sympy.simplify(sym(numel(t.dims)) - sym(numel(dims_of(self.shape)))) != 0:
            raise VerifyException(
                f"prim.reshape: {list(t.dims)} and {list(dims_of(self.shape))} differ in size"
            )
        super().verify_()

    def reference(self, x):
        return x.reshape(concrete(dims_of(self.shape)))


@irdl_op_definition
class PermuteOp(TensorOp):
    """Result dim i is operand dim `dims[i]`."""

    name = "prim.permute"
    x = operand_def()
    result = result_def()
    dims = prop_def(DenseArrayBase)

    def __init__(self, x: SSAValue, dims: Sequence[int]):
        t = x.type
        super().__init__(
            operands=[x],
            result_types=[t.with_dims([t.dims[d] for d in dims])],
            properties={"dims": ints_attr(dims)},
        )

    def infer_type(self) -> Attribute:
        t = self.tensor(self.x)
        return t.with_dims([t.dims[d] for d in ints_of(self.dims)])

    def verify_(self) -> None:
        t = self.tensor(self.x)
        if sorted(ints_of(self.dims)) != list(range(t.rank)):
            raise VerifyException(f"prim.permute: {list(ints_of(self.dims))} is not a permutation of {t.rank} dims")
        super().verify_()

    def reference(self, x):
        return x.permute(ints_of(self.dims))


@irdl_op_definition
class SliceOp(TensorOp):
    """Per dim: elements start, start+step, … below limit (limit clamped by the caller)."""

    name = "prim.slice"
    x = operand_def()
    result = result_def()
    start = prop_def(ArrayAttr)
    limit = prop_def(ArrayAttr)
    step = prop_def(DenseArrayBase)

    def __init__(self, x: SSAValue, start: Sequence[Dim], limit: Sequence[Dim], step: Sequence[int]):
        dims = _slice_dims(start, limit, step)
        super().__init__(
            operands=[x],
            result_types=[x.type.with_dims(dims)],
            properties={"start": dims_attr(start), "limit": dims_attr(limit), "step": ints_attr(step)},
        )

    def infer_type(self) -> Attribute:
        return self.tensor(self.x).with_dims(
            _slice_dims(dims_of(self.start), dims_of(self.limit), ints_of(self.step))
        )

    def verify_(self) -> None:
        t = self.tensor(self.x)
        n = t.rank
        if not (len(self.start.data) == len(self.limit.data) == len(ints_of(self.step)) == n):
            raise VerifyException("prim.slice: start, limit and step need one entry per dim")
        if any(s <= 0 for s in ints_of(self.step)):
            raise VerifyException("prim.slice: steps must be positive")
        super().verify_()

    def reference(self, x):
        index = tuple(
            slice(a, b, s)
            for a, b, s in zip(concrete(dims_of(self.start)), concrete(dims_of(self.limit)), ints_of(self.step))
        )
        return x[index]


def _slice_dims(start, limit, step) -> list[Dim]:
    out = []
    for a, b, s in zip(start, limit, step):
        n = sym(b) - sym(a)
        d = sympy.floor((n + s - 1) / s) if s != 1 else n
        d = sympy.simplify(d)
        out.append(int(d) if d.is_Integer else d)
    return out


@irdl_op_definition
class CatOp(TensorOp):
    """Concatenates operands of one dtype along `dim`. A library call: decompose
    writes a cat of at most four operands of static sizes along `dim` as reads that
    fusion takes into the kernel reading it (passes/decompositions/shape.py)."""

    name = "prim.cat"
    xs = var_operand_def()
    result = result_def()
    dim = prop_def(IntegerAttr)

    def __init__(self, xs: Sequence[SSAValue], dim: int):
        t = xs[0].type
        dims = list(t.dims)
        dims[dim] = sympy.Add(*[sym(x.type.dims[dim]) for x in xs])
        dims = [int(d) if isinstance(d, sympy.Expr) and d.is_Integer else d for d in dims]
        super().__init__(operands=[list(xs)], result_types=[t.with_dims(dims)], properties={"dim": IntegerAttr(dim, i64)})

    def infer_type(self) -> Attribute:
        t = self.tensor(self.xs[0])
        d = self.dim.value.data
        dims = list(t.dims)
        total = sympy.Add(*[sym(self.tensor(x).dims[d]) for x in self.xs])
        dims[d] = int(total) if total.is_Integer else total
        return t.with_dims(dims)

    def reference(self, *xs):
        return torch.cat(xs, self.dim.value.data)


# ---------------------------------------------------------------- reductions
REDUCTIONS: dict[str, Callable] = {
    "sum": lambda x, d: torch.sum(x, d, dtype=x.dtype),
    "prod": lambda x, d: torch.prod(x, d[0], dtype=x.dtype) if len(d) == 1 else _prod_dims(x, d),
    "amax": lambda x, d: torch.amax(x, d),
    "amin": lambda x, d: torch.amin(x, d),
}


def _prod_dims(x, dims):
    for d in sorted(dims, reverse=True):
        x = torch.prod(x, d, dtype=x.dtype)
    return x


def reduction_identity(kind: str, dtype: torch.dtype) -> int | float | bool:
    """What `kind` gives over no element: 0, 1, and for amax (amin) the dtype's lowest
    (highest) value, -inf (inf) for floats. Eager's amax and amin refuse an empty
    dim; prim's give this, as do the kernel interpreter and both code generators."""
    if kind in ("sum", "prod"):
        return int(kind == "prod")
    top = kind == "amin"
    if dtype == torch.bool:
        return top
    if dtype.is_floating_point:
        return math.inf if top else -math.inf
    info = torch.iinfo(dtype)
    return info.max if top else info.min


class ReductionOp(TensorOp):
    """Reduces over `dims`, which disappear from the result (no keepdim); over an
    empty dim the result is the identity (`reduction_identity`)."""

    x = operand_def()
    result = result_def()
    dims = prop_def(DenseArrayBase)
    KIND: ClassVar[str]

    def __init__(self, x: SSAValue, dims: Sequence[int]):
        t = x.type
        kept = [d for i, d in enumerate(t.dims) if i not in set(dims)]
        super().__init__(operands=[x], result_types=[t.with_dims(kept)], properties={"dims": ints_attr(sorted(dims))})

    def infer_type(self) -> Attribute:
        t = self.tensor(self.x)
        ds = set(ints_of(self.dims))
        return t.with_dims([d for i, d in enumerate(t.dims) if i not in ds])

    def verify_(self) -> None:
        t = self.tensor(self.x)
        ds = ints_of(self.dims)
        if list(ds) != sorted(set(ds)) or any(not 0 <= d < t.rank for d in ds):
            raise VerifyException(f"{self.name}: dims {list(ds)} must be increasing and within rank {t.rank}")
        super().verify_()

    def reference(self, x):
        ds = list(ints_of(self.dims))
        if not ds:
            return x.clone()
        if any(x.shape[d] == 0 for d in ds):
            kept = [n for i, n in enumerate(x.shape) if i not in ds]
            return torch.full(kept, reduction_identity(self.KIND, x.dtype), dtype=x.dtype)
        return REDUCTIONS[self.KIND](x, ds)


def _reduction_class(kind: str) -> type[ReductionOp]:
    cls_name = kind.capitalize() + "Op"
    cls = type(cls_name, (ReductionOp,), {"name": f"prim.{kind}", "KIND": kind, "__annotations__": {"KIND": ClassVar[str]}, "__qualname__": cls_name, "__module__": __name__})
    return irdl_op_definition(cls)


REDUCTION_OPS: dict[str, type[ReductionOp]] = {k: _reduction_class(k) for k in REDUCTIONS}


# ---------------------------------------------------------------- creation
@irdl_op_definition
class FullOp(TensorOp):
    """A tensor of `shape` filled with `value`."""

    name = "prim.full"
    assembly_format = CREATION_FORMAT
    result = result_def()
    shape = prop_def(ArrayAttr)
    value = prop_def(Attribute)
    dtype = prop_def(StringAttr)

    def __init__(self, shape: Sequence[Dim], value: float | int | bool, dtype: str):
        super().__init__(
            result_types=[TensorType(shape, dtype)],
            properties={"shape": dims_attr(shape), "value": scalar_attr(value, dtype), "dtype": StringAttr(dtype)},
        )

    def infer_type(self) -> Attribute:
        return TensorType(dims_of(self.shape), self.dtype.data)

    @property
    def scalar(self) -> float | int | bool:
        return scalar_of(self.value)

    def reference(self):
        return torch.full(concrete(dims_of(self.shape)), self.scalar, dtype=DTYPES[self.dtype.data])


@irdl_op_definition
class IotaOp(TensorOp):
    """The 1-D tensor start, start+step, … of `length` elements. `start` may be an
    expression over symbols (an int argument that may be negative): iota(1, start=e)
    is how a tensor holds the value of a symbolic scalar."""

    name = "prim.iota"
    assembly_format = CREATION_FORMAT
    result = result_def()
    length = prop_def(Attribute)
    start = prop_def(Attribute)
    step = prop_def(IntegerAttr)
    dtype = prop_def(StringAttr)

    def __init__(self, length: Dim, start: Dim, step: int, dtype: str):
        super().__init__(
            result_types=[TensorType([length], dtype)],
            properties={
                "length": dims_attr([length]).data[0],
                "start": dims_attr([start]).data[0],
                "step": IntegerAttr(step, i64),
                "dtype": StringAttr(dtype),
            },
        )

    @property
    def first(self) -> sympy.Expr:
        """The first element, as an expression."""
        return sym(dims_of(ArrayAttr([self.start]))[0])

    def infer_type(self) -> Attribute:
        return TensorType(dims_of(ArrayAttr([self.length])), self.dtype.data)

    def reference(self):
        n = concrete(dims_of(ArrayAttr([self.length])))[0]
        s, st = concrete([self.first])[0], self.step.value.data
        return torch.arange(s, s + n * st, st, dtype=DTYPES[self.dtype.data])[:n]


# ---------------------------------------------------------------- library calls
@irdl_op_definition
class MmOp(TensorOp):
    """Matrix product [m, k] × [k, n] → [m, n]; runs as a library call."""

    name = "prim.mm"
    a = operand_def()
    b = operand_def()
    result = result_def()

    def __init__(self, a: SSAValue, b: SSAValue):
        super().__init__(operands=[a, b], result_types=[a.type.with_dims([a.type.dims[0], b.type.dims[1]])])

    def infer_type(self) -> Attribute:
        a, b = self.tensor(self.a), self.tensor(self.b)
        return a.with_dims([a.dims[0], b.dims[1]])

    def verify_(self) -> None:
        a, b = self.tensor(self.a), self.tensor(self.b)
        if a.rank != 2 or b.rank != 2 or not same_dims([a.dims[1]], [b.dims[0]]) or a.dtype != b.dtype:
            raise VerifyException(f"prim.mm: cannot multiply {a} by {b}")
        super().verify_()

    def reference(self, a, b):
        return torch.mm(a, b)


@irdl_op_definition
class BmmOp(TensorOp):
    """Batched matrix product [b, m, k] × [b, k, n] → [b, m, n]; a library call."""

    name = "prim.bmm"
    a = operand_def()
    b = operand_def()
    result = result_def()

    def __init__(self, a: SSAValue, b: SSAValue):
        ad, bd = a.type.dims, b.type.dims
        super().__init__(operands=[a, b], result_types=[a.type.with_dims([ad[0], ad[1], bd[2]])])

    def infer_type(self) -> Attribute:
        a, b = self.tensor(self.a), self.tensor(self.b)
        return a.with_dims([a.dims[0], a.dims[1], b.dims[2]])

    def verify_(self) -> None:
        a, b = self.tensor(self.a), self.tensor(self.b)
        if (
            a.rank != 3
            or b.rank != 3
            or not same_dims([a.dims[0], a.dims[2]], [b.dims[0], b.dims[1]])
            or a.dtype != b.dtype
        ):
            raise VerifyException(f"prim.bmm: cannot multiply {a} by {b}")
        super().verify_()

    def reference(self, a, b):
        return torch.bmm(a, b)


@irdl_op_definition
class AddmmOp(TensorOp):
    """bias + a [m, k] × b [k, n] → [m, n], the bias broadcast to [m, n]: one library
    call (BLAS, cuBLAS) that adds the bias before rounding the product, as eager's
    addmm does (a product rounded to f16 and then added to rounds twice)."""

    name = "prim.addmm"
    bias = operand_def()
    a = operand_def()
    b = operand_def()
    result = result_def()

    def __init__(self, bias: SSAValue, a: SSAValue, b: SSAValue):
        super().__init__(operands=[bias, a, b], result_types=[a.type.with_dims([a.type.dims[0], b.type.dims[1]])])

    def infer_type(self) -> Attribute:
        a, b = self.tensor(self.a), self.tensor(self.b)
        return a.with_dims([a.dims[0], b.dims[1]])

    def verify_(self) -> None:
        bias, a, b = self.tensor(self.bias), self.tensor(self.a), self.tensor(self.b)
        out = [a.dims[0], b.dims[1]] if a.rank == 2 and b.rank == 2 else []
        if (
            not out
            or not same_dims([a.dims[1]], [b.dims[0]])
            or a.dtype != b.dtype
            or bias.dtype != a.dtype
            or bias.rank > 2
            or not all(sym(d) == 1 or same_dims([d], [o]) for d, o in zip(bias.dims[::-1], out[::-1]))
        ):
            raise VerifyException(f"prim.addmm: cannot add {bias} to the product of {a} and {b}")
        super().verify_()

    def reference(self, bias, a, b):
        return torch.addmm(bias, a, b)


VIEW_OPS = (BroadcastInDimOp, ReshapeOp, PermuteOp, SliceOp)

from strata.dialects.prim_random import RANDOM_OPS  # noqa: E402  (it builds on the classes above)
from strata.dialects.prim_convolution import ConvolutionOp, _convolution_dims  # noqa: E402, F401  (likewise)
from strata.dialects.prim_convolution_backward import CONVOLUTION_BACKWARD_OPS  # noqa: E402  (likewise)
from strata.dialects.prim_indexing import INDEXING_OPS  # noqa: E402  (likewise)
from strata.dialects.prim_scan import SCAN_OPS  # noqa: E402  (likewise)
from strata.dialects.prim_linalg import LINALG_OPS  # noqa: E402  (likewise)
from strata.dialects.prim_linalg_solve import SOLVE_OPS  # noqa: E402  (likewise)
from strata.dialects.prim_linalg_householder import HOUSEHOLDER_OPS  # noqa: E402  (likewise)
from strata.dialects.prim_linalg_eig import EIG_OPS  # noqa: E402  (likewise)
from strata.dialects.prim_distance import DISTANCE_OPS  # noqa: E402  (likewise)
from strata.dialects.prim_attention import ATTENTION_OPS  # noqa: E402  (likewise)
from strata.dialects.prim_attention_training import FUSED_ATTENTION_OPS  # noqa: E402  (likewise)
from strata.dialects.prim_complex import COMPLEX_OPS  # noqa: E402  (likewise)
from strata.dialects.prim_data_dependent import DATA_DEPENDENT_OPS  # noqa: E402  (likewise)
from strata.dialects.prim_collectives import COMMUNICATION_OPS  # noqa: E402  (likewise)

LIBRARY_OPS = (MmOp, BmmOp, AddmmOp, ConvolutionOp, *ATTENTION_OPS, *FUSED_ATTENTION_OPS)

Prim = Dialect(
    "prim",
    [
        *ELEMENTWISE_OPS.values(),
        WhereOp,
        ConvertElementTypeOp,
        BroadcastInDimOp,
        ReshapeOp,
        PermuteOp,
        SliceOp,
        CatOp,
        *REDUCTION_OPS.values(),
        FullOp,
        IotaOp,
        MmOp,
        BmmOp,
        AddmmOp,
        ConvolutionOp,
        *RANDOM_OPS,
        *CONVOLUTION_BACKWARD_OPS,
        *INDEXING_OPS,
        *SCAN_OPS,
        *LINALG_OPS,
        *SOLVE_OPS,
        *HOUSEHOLDER_OPS,
        *EIG_OPS,
        *DISTANCE_OPS,
        *ATTENTION_OPS,
        *FUSED_ATTENTION_OPS,
        *COMMUNICATION_OPS,
        *COMPLEX_OPS,
        *DATA_DEPENDENT_OPS,
    ],
)
