"""Random prim programs: every prim op, with the explicit broadcasts and conversions
that the prim level needs (prim ops neither broadcast nor promote).

Integer divisors are guarded with where(y == 0, 1, y), shift amounts and integer
exponents masked with bitwise_and, and a float is made finite and small before it
is converted to an integer (C leaves NaN → int undefined), so that every program has
one meaning on every input.

A pass writer aims the generator at a pattern with `favour` (op names, such as
"prim.pow": the steps that make them are drawn more often, and within a step the
favoured op three times in four) and `constants` (the values a constant operand takes,
taken three times in four over an earlier value or a new input): see `prim_programs`, and
testing/reach.py to measure how often a pass then finds its pattern.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from xdsl.ir import Operation, SSAValue

from strata.dialects import prim
from strata.dialects.types import Dim, TensorType, is_float, symbol
from strata.testing.aten_programs import AMPLIFYING
from strata.testing.graphs import (
    FLOAT_DTYPES,
    GeneratorError,
    GraphBuilder,
    Program,
    axes,
    broadcast_dims,
    broadcastable_dims,
    dims_strategy,
    new_input,
    operand,
    pick,
    program,
    reshaped,
    same_dims,
    tensor_of,
)

EW = prim.ELEMENTWISE_OPS


@dataclass
class PrimGraph(GraphBuilder):
    favour: frozenset[str] = frozenset()  # op names drawn more often (prim_programs' favour)
    constants: tuple[Any, ...] = ()  # values constant operands take (prim_programs' constants)
    matmul_sizes: tuple[Dim, ...] = ()  # sizes a matrix product's m, k and n take (prim_programs' matmul_sizes)

    def emit(self, op: Operation) -> SSAValue:
        try:
            op.verify()
        except Exception as e:
            raise GeneratorError(f"a generated {op.name} does not verify: {e}") from e
        self.add(op)
        return op.results[0]

    def convert(self, x: SSAValue, dtype: str) -> SSAValue:
        return x if tensor_of(x).dtype == dtype else self.emit(prim.ConvertElementTypeOp(x, dtype))

    def full(self, dims: Sequence[Dim], value: Any, dtype: str) -> SSAValue:
        return self.emit(prim.FullOp(dims, bool(value) if dtype == "i1" else value, dtype))

    def full_like(self, x: SSAValue, value: Any) -> SSAValue:
        t = tensor_of(x)
        return self.full(t.dims, value, t.dtype)

    def broadcast(self, x: SSAValue, dims: Sequence[Dim]) -> SSAValue:
        t = tensor_of(x)
        if same_dims(t.dims, dims):
            return x
        return self.emit(prim.BroadcastInDimOp(x, dims, range(len(dims) - t.rank, len(dims))))

    def like(self, y: SSAValue, t: TensorType) -> SSAValue | None:
        """y converted to t's dtype and broadcast to its dims, if it broadcasts there."""
        shape = broadcast_dims(t.dims, tensor_of(y).dims)
        if shape is None or not same_dims(shape, t.dims):
            return None
        return self.broadcast(self.convert(y, t.dtype), t.dims)

    def allowed(self, name: str) -> bool:
        return self.float_dtype == "f32" or name not in AMPLIFYING

    def favoured(self, names: Sequence[str], op_name: Callable[[str], str] = lambda n: EW[n].name) -> list[str]:
        """The names among `names` whose op (`op_name` of it) is favoured."""
        return [n for n in names if op_name(n) in self.favour] if self.favour else []


def choose(draw, b: PrimGraph, names: Sequence[Any], op_name: Callable[[Any], str] = lambda n: EW[n].name,
           otherwise: Callable[[], st.SearchStrategy[Any]] | None = None) -> Any:
    """One of `names`: a favoured one three times in four where there is one, else
    `otherwise` (a uniform draw by default). A function of the step's `draw`, not a
    strategy of its own: without favoured names it draws just what `otherwise` draws,
    so that unaimed programs stay the programs drawn before aiming existed."""
    hits = b.favoured(names, op_name)
    if hits and draw(st.integers(0, 3)) > 0:
        return draw(st.sampled_from(hits))
    return draw(otherwise() if otherwise else st.sampled_from(list(names)))


def favoured_dtype(b: PrimGraph, arity: int) -> Callable[[TensorType], bool] | None:
    """Accepts the operands of a favoured elementwise op of `arity`, if there is one."""
    accepts = [a for n, (k, a, _, _) in prim.ELEMENTWISE.items() if k == arity and EW[n].name in b.favour]
    return (lambda t: any(a(t.dtype) for a in accepts)) if accepts else None


def accepting(b: PrimGraph, arity: int, dtype: str) -> list[str]:
    return [n for n, (a, accepts, _, _) in prim.ELEMENTWISE.items() if a == arity and accepts(dtype) and b.allowed(n)]


# The binary ops most programs are made of, drawn half of the time.
COMMON_BINARY = ("add", "sub", "mul", "div", "maximum", "minimum", "gt", "eq", "logical_and")


@st.composite
def second(draw, b: PrimGraph, x: SSAValue) -> SSAValue:
    """An operand of x's type: an earlier value converted and broadcast, a constant,
    or a new input."""
    t = tensor_of(x)
    if b.constants and draw(st.integers(0, 3)) > 0:
        value = draw(st.sampled_from(b.constants))
        if is_float(t.dtype) or float(value).is_integer():
            return b.full_like(x, value if is_float(t.dtype) else int(value))
    if draw(st.booleans()):
        y = draw(pick(b, lambda u: broadcast_dims(t.dims, u.dims) is not None))
        if y is not None and (z := b.like(y, t)) is not None:
            return z
    if draw(st.integers(0, 3)) == 0:
        return b.full_like(x, draw(st.sampled_from([0.5, -1.5, 2.0, 1.0, 0.0] if is_float(t.dtype) else [2, 1, 0, 3])))
    dims = draw(broadcastable_dims(list(t.dims)))
    y = draw(new_input(b, dims=dims, dtype=t.dtype if draw(st.booleans()) else None))
    return b.like(y, t) or b.full_like(x, 1)


def nonzero(b: PrimGraph, y: SSAValue) -> SSAValue:
    """where(y == 0, 1, y)."""
    return b.emit(prim.WhereOp(b.emit(EW["eq"](y, b.full_like(y, 0))), b.full_like(y, 1), y))


def without_nan(b: PrimGraph, x: SSAValue) -> SSAValue:
    """where(isnan(x), 0, x), for the ops that read a sign (signbit, copysign): the sign
    of a NaN that an invalid operation makes is the machine's, and torch's own kernels
    differ on it (sqrt(-1) is -nan in f16, +nan in f32)."""
    if not is_float(tensor_of(x).dtype):
        return x
    return b.emit(prim.WhereOp(b.emit(EW["isnan"](x)), b.full_like(x, 0.0), x))


def aimed_operand(draw, b: PrimGraph, arity: int) -> SSAValue:
    """An operand; where an elementwise op of this arity is favoured, three times in
    four one of the first dtype it accepts (the program's floating dtype, i64, i1)."""
    accept = favoured_dtype(b, arity)
    if accept is not None and draw(st.integers(0, 3)) > 0:
        dtype = next((d for d in b.dtypes if accept(TensorType([], d))), None)
        return draw(operand(b, lambda t: t.dtype == dtype, dtype=dtype))
    return draw(operand(b))


@st.composite
def unary(draw, b: PrimGraph) -> None:
    x = aimed_operand(draw, b, 1)
    name = choose(draw, b, accepting(b, 1, tensor_of(x).dtype))
    b.emit(EW[name](without_nan(b, x) if name == "signbit" else x))


@st.composite
def binary(draw, b: PrimGraph) -> None:
    x = aimed_operand(draw, b, 2)
    dtype = tensor_of(x).dtype
    names = accepting(b, 2, dtype)
    common = [n for n in COMMON_BINARY if n in names]
    if not names:
        return
    name = choose(draw, b, names,
                  otherwise=lambda: st.sampled_from(common if common and draw(st.booleans()) else names))
    y = draw(second(b, x))
    if name in ("div", "floordiv", "remainder", "fmod") and not is_float(dtype):
        y = nonzero(b, y)
    elif name in ("shift_left", "shift_right"):
        y = b.emit(EW["bitwise_and"](y, b.full_like(y, 7)))
    elif name == "pow" and not is_float(dtype):
        y = b.emit(EW["bitwise_and"](y, b.full_like(y, 3)))
    elif name == "copysign":
        y = without_nan(b, y)
    elif draw(st.integers(0, 3)) == 0:
        x, y = y, x  # the constant or new operand first: 1 - x, 0 - x, 1 / x
    b.emit(EW[name](x, y))


@st.composite
def where(draw, b: PrimGraph) -> None:
    x = draw(operand(b))
    t = tensor_of(x)
    c = draw(pick(b, lambda u: u.dtype == "i1" and broadcast_dims(t.dims, u.dims) is not None))
    cond = b.like(c, t.with_dtype("i1")) if c is not None else None
    if cond is None:
        cond = x if t.dtype == "i1" else b.emit(EW["gt"](x, b.full_like(x, 0)))
    b.emit(prim.WhereOp(cond, x, draw(second(b, x))))


@st.composite
def convert(draw, b: PrimGraph) -> None:
    x = draw(operand(b))
    t = tensor_of(x)
    target = draw(st.sampled_from(b.dtypes))
    if is_float(t.dtype) and not is_float(target) and target != "i1":
        # where(isnan(x), 0, clamp(x, -100, 100)) first: NaN, inf and values out of
        # range have no one integer (C leaves the conversion undefined)
        clamped = b.emit(EW["minimum"](b.emit(EW["maximum"](x, b.full_like(x, -100.0))), b.full_like(x, 100.0)))
        x = b.emit(prim.WhereOp(b.emit(EW["isnan"](x)), b.full_like(x, 0.0), clamped))
    b.emit(prim.ConvertElementTypeOp(x, target))


@st.composite
def view(draw, b: PrimGraph) -> None:
    views = {"reshape": "prim.reshape", "permute": "prim.permute", "broadcast": "prim.broadcast_in_dim",
             "slice": "prim.slice"}
    kind = choose(draw, b, list(views), views.__getitem__)
    x = draw(operand(b))
    t = tensor_of(x)
    dims = list(t.dims)
    if kind == "reshape":
        b.emit(prim.ReshapeOp(x, draw(reshaped(dims))))
    elif kind == "permute":
        b.emit(prim.PermuteOp(x, list(draw(st.permutations(range(t.rank))))))
    elif kind == "broadcast":
        lead = draw(st.lists(st.sampled_from([2, 1, symbol("s0"), 3]), max_size=2))
        grown = [draw(st.sampled_from([3, symbol("s1"), 1])) if d == 1 and draw(st.booleans()) else d for d in dims]
        b.emit(prim.BroadcastInDimOp(x, [*lead, *grown], range(len(lead), len(lead) + len(grown))))
    else:
        start: list[Dim] = []
        limit: list[Dim] = []
        step: list[int] = []
        for d in dims:
            if isinstance(d, int) and d >= 1 and draw(st.booleans()):
                a = draw(st.integers(0, d - 1))
                start.append(a)
                limit.append(draw(st.integers(a, d)))
                step.append(draw(st.sampled_from([1, 2, 3])))
            else:
                start.append(0)
                limit.append(d)
                step.append(1)
        b.emit(prim.SliceOp(x, start, limit, step))


@st.composite
def cat(draw, b: PrimGraph) -> None:
    x = draw(operand(b, lambda t: t.rank >= 1, dims=draw(st.integers(1, 3).flatmap(dims_strategy))))
    t = tensor_of(x)
    axis = draw(st.integers(0, t.rank - 1))
    parts = [x]
    for _ in range(draw(st.integers(1, 2))):
        dims = list(t.dims)
        dims[axis] = draw(st.sampled_from([1, 2, 0, symbol("s1")]))
        parts.append(draw(new_input(b, dims=dims, dtype=t.dtype)))
    b.emit(prim.CatOp(parts, axis))


@st.composite
def reduction(draw, b: PrimGraph) -> None:
    kind = choose(draw, b, list(prim.REDUCTION_OPS), lambda k: prim.REDUCTION_OPS[k].name)
    x = draw(operand(b, dtypes=b.numeric))  # bools too: sum is any, prod all
    t = tensor_of(x)
    # Empty dims too: every reduction, amax and amin included, gives its identity there
    # (prim.reduction_identity).
    dims = draw(axes(t.rank, at_least_one=False))
    if kind == "prod" and not b.allowed("pow"):
        return  # a product of many f16 values is a power, with its amplification
    b.emit(prim.REDUCTION_OPS[kind](x, dims))


@st.composite
def creation(draw, b: PrimGraph) -> None:
    if choose(draw, b, [True, False], lambda full: "prim.full" if full else "prim.iota", st.booleans):
        dims = draw(st.integers(0, 3).flatmap(dims_strategy))
        dtype = draw(st.sampled_from(b.dtypes))
        value = draw(st.sampled_from([1.5, -2.0, 0.0])) if is_float(dtype) else draw(st.sampled_from([1, 0, 3]))
        b.full(dims, value, dtype)
    else:
        length = draw(st.sampled_from([4, 1, 0, symbol("s0")]))
        start, step = draw(st.sampled_from([0, 2, -1])), draw(st.sampled_from([1, 2, -1]))
        b.emit(prim.IotaOp(length, start, step, draw(st.sampled_from(["i64", b.float_dtype]))))


@st.composite
def matmul(draw, b: PrimGraph) -> None:
    dtype = b.float_dtype
    size = st.sampled_from([2, 3, 1, symbol("s0"), 4])
    if b.matmul_sizes:  # aimed: these three times in four
        size = st.integers(0, 3).flatmap(lambda i: st.sampled_from(b.matmul_sizes) if i else size)
    m, k, n = draw(size), draw(size), draw(size)

    def matrix(dims: list[Dim]) -> SSAValue:
        return draw(operand(b, lambda t: t.dtype == dtype and same_dims(t.dims, dims), dims=dims, dtype=dtype))

    kind = choose(draw, b, ["mm", "addmm", "bmm"], lambda k: f"prim.{k}")
    if kind == "mm":
        b.emit(prim.MmOp(matrix([m, k]), matrix([k, n])))
    elif kind == "addmm":
        bias = draw(st.sampled_from([[n], [m, n], [1, n]]))
        b.emit(prim.AddmmOp(matrix(bias), matrix([m, k]), matrix([k, n])))
    else:
        batch = draw(size)
        b.emit(prim.BmmOp(matrix([batch, m, k]), matrix([batch, k, n])))


@st.composite
def convolution_shapes(draw, batch: Any) -> tuple[list[Dim], list[Dim], list[int], list[int], list[int], int]:
    """x dims, w dims, stride, padding, dilation and groups of a valid convolution:
    1 or 2 spatial dims of literal sizes that fit the kernel, channels divisible."""
    groups = draw(st.sampled_from([1, 2]))
    spatial = draw(st.integers(1, 2))
    kernel = [draw(st.sampled_from([1, 2, 3])) for _ in range(spatial)]
    dilation = [draw(st.sampled_from([1, 2])) for _ in range(spatial)]
    padding = [draw(st.sampled_from([0, 1])) for _ in range(spatial)]
    stride = [draw(st.sampled_from([1, 2])) for _ in range(spatial)]
    sizes = [d * (k - 1) + 1 + draw(st.integers(0, 3)) for k, d in zip(kernel, dilation)]
    c_in, c_out = groups * draw(st.sampled_from([1, 2])), groups * draw(st.sampled_from([1, 2]))
    x = [batch, c_in, *sizes]
    w = [c_out, c_in // groups, *kernel]
    return x, w, stride, padding, dilation, groups


def convolution_crashes(dtype: str) -> bool:
    """torch's CPU convolution in f16 and bf16 crashes (a segfault in oneDNN) on some
    shapes this generator draws ([2, 1, 1, 1] by [1, 1, 1, 1], dilation 2, padding 1,
    f16; [2, 4, 1] by [4, 2, 1], stride 2, dilation 2, padding 1, groups 2, bf16, under
    torch 2.11; [3, 2, 1] by [1, 2, 1], stride 2, dilation 2, padding 1, f16, under
    torch 2.13, on a host with AMX): no 16-bit convolutions are generated."""
    return dtype in ("f16", "bf16")


@st.composite
def convolution(draw, b: PrimGraph) -> None:
    if convolution_crashes(b.float_dtype):
        return
    x_dims, w_dims, stride, padding, dilation, groups = draw(convolution_shapes(draw(st.sampled_from([2, 1, symbol("s0"), 0]))))
    dtype = b.float_dtype
    x = draw(operand(b, lambda t: t.dtype == dtype and same_dims(t.dims, x_dims), dims=x_dims, dtype=dtype))
    w = draw(operand(b, lambda t: t.dtype == dtype and same_dims(t.dims, w_dims), dims=w_dims, dtype=dtype))
    b.emit(prim.ConvolutionOp(x, w, stride, padding, dilation, groups))


STEPS: dict[str, Callable[[PrimGraph], st.SearchStrategy[None]]] = {
    "unary": unary,
    "binary": binary,
    "where": where,
    "view": view,
    "reduction": reduction,
    "convert": convert,
    "cat": cat,
    "creation": creation,
    "matmul": matmul,
    "convolution": convolution,
}


# Elementwise ops are most of any program.
WEIGHTS = {"binary": 4, "unary": 2}


def _isnan_of_first(b: GraphBuilder) -> None:
    assert isinstance(b, PrimGraph)
    b.emit(EW["isnan"](b.pool[0]))


def step_ops() -> dict[str, frozenset[str]]:
    """The ops each step may make (beside the fulls, broadcasts and conversions that
    adapt its operands)."""
    arity = {n: a for n, (a, _, _, _) in prim.ELEMENTWISE.items()}
    return {
        "unary": frozenset(EW[n].name for n in EW if arity[n] == 1),
        "binary": frozenset(EW[n].name for n in EW if arity[n] == 2),
        "where": frozenset({prim.WhereOp.name}),
        "view": frozenset(op.name for op in prim.VIEW_OPS),
        "reduction": frozenset(op.name for op in prim.REDUCTION_OPS.values()),
        "convert": frozenset({prim.ConvertElementTypeOp.name}),
        "cat": frozenset({prim.CatOp.name}),
        "creation": frozenset({prim.FullOp.name, prim.IotaOp.name}),
        "matmul": frozenset({prim.MmOp.name, prim.AddmmOp.name, prim.BmmOp.name}),
        "convolution": frozenset({prim.ConvolutionOp.name}),
    }


def prim_programs(
    max_ops: int = 8,
    steps: Sequence[str] = tuple(STEPS),
    float_dtypes: Sequence[str] = FLOAT_DTYPES,
    favour: Sequence[str] = (),
    constants: Sequence[float | int] = (),
    matmul_sizes: Sequence[Dim] = (),
) -> st.SearchStrategy[Program]:
    """Random programs of prim ops; `steps` picks the kinds of ops (keys of STEPS).

    `favour` aims the programs at a pattern: op names ("prim.pow") whose steps are
    drawn four times as often, and which are chosen three times in four within their
    step, with operands of a dtype they accept; where one is drawn only in f32
    programs (AMPLIFYING), f32 is drawn three times in four. `constants` are values a
    constant operand of a binary op or a where takes three times in four (2.0 for
    pow(x, 2)). `matmul_sizes` are sizes a matrix product's m, k and n each take three
    times in four ((1,) for products of one row). Without them, the programs are those
    drawn before they existed. An op
    that `steps` do not make raises ValueError here."""
    favoured = frozenset(favour)
    ops = step_ops()
    makes = frozenset().union(*(ops[s] for s in steps))
    if favoured - makes:
        def hint(n: str) -> str:
            made_by = [s for s, o in ops.items() if n in o]
            if made_by:
                return f"{n} needs the step {made_by[0]!r}"
            close = difflib.get_close_matches(n, sorted(makes), 1)
            return f"{n}: did you mean {close[0]}?" if close else ""

        missing = sorted(favoured - makes)
        hints = "; ".join(h for h in map(hint, missing) if h)
        raise ValueError(f"prim_programs(steps={tuple(steps)}) makes no {', '.join(missing)}"
                         + (f" ({hints})" if hints else f"; it makes {', '.join(sorted(makes))}"))
    weights = {s: WEIGHTS.get(s, 1) * (4 if ops[s] & favoured else 1) for s in steps}
    f32_first = any(n.removeprefix("prim.") in AMPLIFYING for n in favoured) and "f32" in float_dtypes
    return _prim_programs(max_ops, tuple(steps), tuple(float_dtypes), favoured, tuple(constants), weights, f32_first,
                          tuple(matmul_sizes))


@st.composite
def _prim_programs(draw, max_ops: int, steps: tuple[str, ...], float_dtypes: tuple[str, ...], favour: frozenset[str],
                   constants: tuple[Any, ...], weights: dict[str, int], f32_first: bool,
                   matmul_sizes: tuple[Dim, ...] = ()) -> Program:
    dtypes = ["f32"] if f32_first and draw(st.integers(0, 3)) > 0 else list(float_dtypes)
    b = PrimGraph(float_dtype=draw(st.sampled_from(dtypes)), favour=favour, constants=constants, matmul_sizes=matmul_sizes)
    return draw(program(b, STEPS, steps, max_ops, "prim", _isnan_of_first, weights))
