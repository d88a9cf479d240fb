"""What the program generators share: dims, types, layouts, input specs, and the
builder of a `func.func @graph` whose inputs may be added while ops are drawn.

Each generated program computes in one floating dtype (f32, f16 or bf16, drawn once),
beside i64 and i1: a value rounded to f16 and then read by f32 ops would be judged by
f32's tolerance for an error f16 made (see testing/checks.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import sympy
from hypothesis import strategies as st
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IndexType, ModuleOp, StringAttr
from xdsl.ir import Block, Operation, Region, SSAValue

from strata.dialects.prim import dims_attr
from strata.dialects.types import Dim, TensorType, sym, symbol
from strata.testing.inputs import InputSpec

SYMBOLS = ("s0", "s1")
LITERAL_DIMS = (1, 2, 3, 4, 0, 5)
FLOAT_DTYPES = ("f32", "f16", "bf16")
SIZES_BOUND = (2, 1, 3, 0, 4, 6)


class GeneratorError(Exception):
    """The generator built something torch or the verifier rejects: a bug in it."""


@dataclass
class Program:
    """A generated module (`func.func @graph`) and the inputs to run it on."""

    module: ModuleOp
    spec: InputSpec
    level: str

    @property
    def text(self) -> str:
        return str(self.module)

    def command(self, options: str) -> str:
        """The strata-opt command line that reproduces a check of this program."""
        return f"strata-opt program.mlir {options} --check-values {self.spec}"

    def __repr__(self) -> str:
        ops = sum(1 for _ in self.module.walk()) - 3  # module, func, return
        return f"<{self.level} program of {ops} ops, inputs {self.spec}>"

    def _repr_pretty_(self, printer, cycle) -> None:  # how hypothesis prints an example
        printer.text(repr(self))


# ---------------------------------------------------------------- dims, types, layouts
def dims_strategy(rank: int, symbolic: bool = True) -> st.SearchStrategy[list[Dim]]:
    """`rank` dims, each a small literal (0 and 1 among them) or a shape symbol."""
    choices: list[Dim] = list(LITERAL_DIMS) + ([symbol(s) for s in SYMBOLS] if symbolic else [])
    return st.lists(st.sampled_from(choices), min_size=rank, max_size=rank)


def tensor_types(
    max_rank: int = 4, dtypes: Sequence[str] = ("f32", "i64", "i1", "f16", "bf16"), symbolic: bool = True
) -> st.SearchStrategy[TensorType]:
    """Tensor types of rank 0..max_rank with literal and symbolic dims."""
    return st.builds(
        TensorType,
        st.integers(0, max_rank).flatmap(lambda r: dims_strategy(r, symbolic)),
        st.sampled_from(list(dtypes)),
    )


def canonical(d: Any) -> Dim:
    e = sym(d)
    return int(e) if e.is_Integer else e


def contiguous_strides(dims: Sequence[Dim]) -> list[Dim]:
    out: list[Dim] = []
    step: sympy.Expr = sympy.Integer(1)
    for d in reversed(dims):
        out.append(canonical(sympy.expand(step)))
        step = step * sym(d)
    return out[::-1]


@st.composite
def layouts(draw, dims: Sequence[Dim]) -> list[Dim] | None:
    """Strides for a tensor of `dims`: None (contiguous), a permutation's, with a gap
    after each element (stride 2 innermost), or one broadcast (stride 0) dim."""
    rank = len(dims)
    kind = draw(st.sampled_from(["contiguous", "permuted", "gaps", "broadcast"] if rank else ["contiguous"]))
    if kind == "contiguous":
        return None
    if kind == "permuted":
        perm = draw(st.permutations(range(rank)))
        permuted = contiguous_strides([dims[p] for p in perm])
        strides: list[Dim] = [0] * rank
        for i, p in enumerate(perm):
            strides[p] = permuted[i]
        return strides
    if kind == "gaps":
        return [canonical(sympy.expand(2 * sym(s))) for s in contiguous_strides(dims)]
    strides = contiguous_strides(dims)
    strides[draw(st.integers(0, rank - 1))] = 0
    return strides


def input_specs(symbols: Sequence[str] = SYMBOLS) -> st.SearchStrategy[InputSpec]:
    """A seed, special values or not, and a size for each of `symbols` (0 and 1 among
    the sizes)."""
    return st.builds(
        lambda seed, special, sizes: InputSpec(seed, special, tuple(sorted(zip(symbols, sizes)))),
        st.integers(0, 2**16),
        st.booleans(),
        st.lists(st.sampled_from(SIZES_BOUND), min_size=len(symbols), max_size=len(symbols)),
    )


def broadcast_dims(*shapes: Sequence[Dim]) -> list[Dim] | None:
    """torch's broadcast of `shapes` where it holds for every value of the symbols
    (a literal 1 stretches, equal dims match), else None."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[Dim] = []
    for i in range(rank):
        ds = [s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0]
        others = [d for d in ds if not (isinstance(d, int) and d == 1)]
        if not others:
            out.append(1)
        elif any(sym(d) != sym(others[0]) for d in others[1:]):
            return None
        else:
            out.append(others[0])
    return out


def same_dims(a: Sequence[Dim], b: Sequence[Dim]) -> bool:
    return len(a) == len(b) and all(sym(x) == sym(y) for x, y in zip(a, b))


# ---------------------------------------------------------------- the graph
@dataclass
class GraphBuilder:
    """A func.func @graph under construction. `pool` holds the tensor values ops may
    read; `float_dtype` is the program's one floating dtype."""

    float_dtype: str = "f32"
    block: Block = field(default_factory=Block)
    arg_attrs: list[DictionaryAttr] = field(default_factory=list)
    pool: list[SSAValue] = field(default_factory=list)
    ops: int = 0

    @property
    def dtypes(self) -> tuple[str, ...]:
        return (self.float_dtype, "i64", "i1")

    @property
    def numeric(self) -> tuple[str, ...]:
        return (self.float_dtype, "i64")

    def add_input(self, t: TensorType, strides: Sequence[Dim] | None) -> SSAValue:
        arg = self.block.insert_arg(t, len(self.block.args))
        strides = strides if strides is not None else contiguous_strides(t.dims)
        self.arg_attrs.append(DictionaryAttr({"strata.strides": dims_attr(strides)}))
        self.pool.append(arg)
        return arg

    def add(self, op: Operation) -> Operation:
        self.block.add_op(op)
        self.ops += 1
        self.pool.extend(r for r in op.results if isinstance(r.type, TensorType))
        return op

    def bind_symbols(self, as_index: Callable[[str], bool]) -> None:
        """Every shape symbol must be bound by an input where it is a dim by itself,
        as in a traced graph: for each one that is not, add an `index` argument
        carrying it (a SymInt input, as the importer writes it) or a tensor of that
        size."""
        used: set[str] = set()
        bound: set[str] = set()
        args = set(self.block.args)
        for v in [*self.block.args, *(r for op in self.block.ops for r in op.results)]:
            if isinstance(v.type, TensorType):
                for d in v.type.dims:
                    if not isinstance(d, int):
                        used |= {s.name for s in d.free_symbols}
                        if v in args and isinstance(d, sympy.Symbol):
                            bound.add(d.name)
        for name in sorted(used - bound):
            if as_index(name):
                self.block.insert_arg(IndexType(), len(self.block.args))
                self.arg_attrs.append(DictionaryAttr({"strata.symbol": StringAttr(name)}))
            else:
                self.add_input(TensorType([symbol(name)], self.float_dtype), None)

    def symbols(self) -> list[str]:
        """The shape symbols the inputs bind."""
        names: set[str] = set()
        for a in self.block.args:
            if isinstance(a.type, TensorType):
                for d in a.type.dims:
                    if not isinstance(d, int):
                        names |= {s.name for s in d.free_symbols}
        for d in self.arg_attrs:
            if "strata.symbol" in d.data:
                names.add(d.data["strata.symbol"].data)
        return sorted(names)

    def finish(self, outputs: Sequence[SSAValue]) -> ModuleOp:
        self.block.add_op(func.ReturnOp(*outputs))
        fn = func.FuncOp(
            "graph",
            ([a.type for a in self.block.args], [v.type for v in outputs]),
            Region(self.block),
            arg_attrs=ArrayAttr(self.arg_attrs),
        )
        module = ModuleOp([fn])
        try:
            module.verify()
        except Exception as e:
            raise GeneratorError(f"a generated module does not verify: {e}\n{module}") from e
        return module


def tensor_of(v: SSAValue) -> TensorType:
    assert isinstance(v.type, TensorType), v.type
    return v.type


# ---------------------------------------------------------------- drawing operands
@st.composite
def pick(draw, b: GraphBuilder, accept: Callable[[TensorType], bool] = lambda t: True) -> SSAValue | None:
    """An earlier value that `accept`s, later ones first (so that chains form), or
    None. Any value may be picked again: fan-out and reuse."""
    candidates = [v for v in reversed(b.pool) if accept(tensor_of(v))]
    if not candidates:
        return None
    return candidates[draw(st.integers(0, len(candidates) - 1))]


@st.composite
def new_input(
    draw, b: GraphBuilder, dims: Sequence[Dim] | None = None, dtype: str | None = None,
    dtypes: Sequence[str] | None = None, max_rank: int = 3,
) -> SSAValue:
    """A new argument of the graph, with a random layout."""
    if dims is None:
        dims = draw(st.integers(0, max_rank).flatmap(dims_strategy))
    if dtype is None:
        dtype = draw(st.sampled_from(list(dtypes or b.dtypes)))
    t = TensorType(dims, dtype)
    return b.add_input(t, draw(layouts(list(t.dims))))


@st.composite
def operand(draw, b: GraphBuilder, accept: Callable[[TensorType], bool] = lambda t: True, **new: Any) -> SSAValue:
    """An earlier value that `accept`s, or a new input (drawn with `new`'s arguments)."""
    return draw(pick(b, accept)) or draw(new_input(b, **new))


@st.composite
def broadcastable_dims(draw, dims: Sequence[Dim]) -> list[Dim]:
    """Dims that broadcast with `dims`: a suffix of them, some replaced by 1."""
    keep = draw(st.integers(0, len(dims)))
    suffix = list(dims[len(dims) - keep :])
    return [1 if draw(st.integers(0, 3)) == 0 else d for d in suffix]


@st.composite
def partner(draw, b: GraphBuilder, x: SSAValue, dtypes: Sequence[str] | None = None) -> SSAValue:
    """A second operand for x: an earlier value that broadcasts with it, or a new
    input that does."""
    xt = tensor_of(x)
    dtypes = dtypes or b.dtypes

    def fits(t: TensorType) -> bool:
        return t.dtype in dtypes and broadcast_dims(xt.dims, t.dims) is not None

    if draw(st.booleans()):
        y = draw(pick(b, fits))
        if y is not None:
            return y
    dims = draw(broadcastable_dims(list(xt.dims)))
    dtype = xt.dtype if xt.dtype in dtypes and draw(st.booleans()) else draw(st.sampled_from(list(dtypes)))
    return draw(new_input(b, dims=dims, dtype=dtype))


@st.composite
def axes(draw, rank: int, at_least_one: bool = True) -> list[int]:
    """Sorted distinct dims of a tensor of `rank`."""
    if rank == 0:
        return []
    return sorted(set(draw(st.lists(st.integers(0, rank - 1), min_size=1 if at_least_one else 0, max_size=rank))))


@st.composite
def reshaped(draw, dims: list[Dim]) -> list[Dim]:
    """A shape with the same number of elements: adjacent dims merged, literal dims
    split, ones inserted or dropped."""
    out = list(dims)
    for _ in range(draw(st.integers(1, 2))):
        move = draw(st.sampled_from(["merge", "split", "one", "drop_one"]))
        if move == "merge" and len(out) >= 2:
            i = draw(st.integers(0, len(out) - 2))
            out[i : i + 2] = [canonical(sym(out[i]) * sym(out[i + 1]))]
        elif move == "split":
            splittable = [i for i, d in enumerate(out) if isinstance(d, int) and d >= 4 and d % 2 == 0]
            if splittable:
                i = draw(st.sampled_from(splittable))
                out[i : i + 1] = [2, out[i] // 2]
        elif move == "one":
            out.insert(draw(st.integers(0, len(out))), 1)
        elif move == "drop_one" and 1 in out:
            out.remove(1)
    return out


@st.composite
def outputs(draw, b: GraphBuilder) -> list[SSAValue]:
    """The last value computed, and perhaps earlier ones (which later ops may also
    read: fan-out to the results)."""
    computed = [v for v in b.pool if isinstance(v.owner, Operation)] or b.pool[-1:]
    chosen = [computed[-1]]
    chosen += [v for v in computed[:-1] if draw(st.integers(0, 3)) == 0]
    return chosen


@st.composite
def program(
    draw, builder: GraphBuilder, steps: dict[str, Callable], names: Sequence[str], max_ops: int, level: str,
    fallback: Callable[[GraphBuilder], None], weights: dict[str, int] | None = None,
) -> Program:
    """Draws a first input, 1 to `max_ops` steps (each a strategy that adds ops, or
    none where torch refuses what it drew), the outputs, the inputs that bind the
    shape symbols, and an input spec. A step is drawn `weights[name]` times as often
    as one of weight 1; `fallback` adds an op if no step did."""
    draw(new_input(builder))
    weighted = [n for n in names for _ in range((weights or {}).get(n, 1))]
    for _ in range(draw(st.integers(1, max_ops))):
        draw(steps[draw(st.sampled_from(weighted))](builder))
    if builder.ops == 0:
        fallback(builder)
    results = draw(outputs(builder))
    builder.bind_symbols(lambda name: draw(st.booleans()))
    return Program(builder.finish(results), draw(input_specs(builder.symbols())), level)
