"""The value-semantic tensor type shared by the aten and prim dialects.

`!strata.tensor<[4, "s0", "2*s1 + 1"], f32>`: each dim is an integer or a sympy
expression over shape symbols, kept in sympy's canonical printed form so that equal
shapes compare equal. There are no strides at this level: layout appears only in the
kernel dialect's index expressions.
"""

from __future__ import annotations

from typing import Any

import contextlib
import contextvars
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache

import sympy
from strata.dialects.lazy_torch import torch
from xdsl.dialects.builtin import (
    ArrayAttr,
    BFloat16Type,
    Float16Type,
    Float32Type,
    Float64Type,
    IndexType,
    IntAttr,
    IntegerType,
    Signedness,
    StringAttr,
)
from xdsl.ir import Attribute, Dialect, ParametrizedAttribute, TypeAttribute
from xdsl.irdl import irdl_attr_definition
from xdsl.parser import AttrParser
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

# dtype names used in the IR, with their torch dtypes' names.
_TORCH_NAMES = {
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "u8": "uint8",
    "i1": "bool",
    # Complex values exist at the aten level only: decompose represents a complex
    # tensor of dims S as a real one of dims S + [2] (view_as_real's layout; see
    # passes/decompositions/complex_values.py), so prim, kernels and code see reals.
    "c64": "complex64",
    "c128": "complex128",
}


class _LazyTable(Mapping):
    """A fixed table whose values need torch, built at its first read: the names are
    known (iteration, `in`) without importing torch (dialects/lazy_torch.py)."""

    def __init__(self, build: Callable[[], dict], keys: Callable[[], Iterable] | None = None):
        self._build, self._keys, self._table = build, keys, None

    def _load(self) -> dict:
        if self._table is None:
            self._table = self._build()
        return self._table

    def __getitem__(self, key):
        table = self._table
        return (table if table is not None else self._load())[key]

    def __contains__(self, key) -> bool:
        if self._keys is not None and self._table is None:
            return key in self._keys()
        return key in self._load()

    def __iter__(self):
        return iter(self._keys() if self._keys is not None and self._table is None else self._load())

    def __len__(self) -> int:
        return len(self._load())


# IR dtype name → torch dtype, and back.
DTYPES: Mapping[str, torch.dtype] = _LazyTable(lambda: {k: getattr(torch, v) for k, v in _TORCH_NAMES.items()},
                                               lambda: _TORCH_NAMES)
TORCH_TO_DTYPE: Mapping[torch.dtype, str] = _LazyTable(lambda: {getattr(torch, v): k for k, v in _TORCH_NAMES.items()})
# Bytes an element, without torch: fusion's byte counts run in strata-opt, which
# imports torch only where a program needs it (half of a FileCheck test's time was
# that import).
_ITEMSIZES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i8": 1, "i16": 2, "i32": 4, "i64": 8, "u8": 1, "i1": 1,
              "c64": 8, "c128": 16}
FLOAT_DTYPES = frozenset({"f16", "bf16", "f32", "f64"})
INT_DTYPES = frozenset({"i8", "i16", "i32", "i64", "u8"})
# Each complex dtype with the real dtype of its two parts.
COMPLEX_DTYPES = {"c64": "f32", "c128": "f64"}

Dim = int | sympy.Expr


def dtype_name(dtype: torch.dtype) -> str:
    """The IR name of a torch dtype; ValueError for one strata does not model."""
    try:
        return TORCH_TO_DTYPE[dtype]
    except KeyError:
        raise ValueError(f"strata has no tensor type for dtype {dtype}") from None


def itemsize(dtype: str) -> int:
    """Bytes an element of IR dtype `dtype` takes (torch's element_size)."""
    return _ITEMSIZES[dtype]


def is_float(dtype: str) -> bool:
    return dtype in FLOAT_DTYPES


# Built once: scalar_type is called for every op a kernel is generated from.
_SCALAR_TYPES: dict[str, Attribute] = {
    "f16": Float16Type(),
    "bf16": BFloat16Type(),
    "f32": Float32Type(),
    "f64": Float64Type(),
    "i8": IntegerType(8),
    "i16": IntegerType(16),
    "i32": IntegerType(32),
    "i64": IntegerType(64),
    "u8": IntegerType(8, Signedness.UNSIGNED),
    "i1": IntegerType(1),
}


def scalar_type(dtype: str) -> Attribute:
    """The builtin scalar type that kernel bodies use for one element of `dtype`."""
    return _SCALAR_TYPES[dtype]


_SCALAR_DTYPES: dict[Attribute, str] = {t: name for name, t in _SCALAR_TYPES.items()}


def scalar_dtype(t: Attribute) -> str:
    """Inverse of `scalar_type`; `index` counts as i64."""
    if isinstance(t, IndexType):
        return "i64"
    try:
        return _SCALAR_DTYPES[t]
    except (KeyError, TypeError):  # TypeError: an unhashable attribute
        raise ValueError(f"not a strata scalar type: {t}") from None


@lru_cache(maxsize=8192)
def _parse(text: str) -> sympy.Expr:
    _with_torch_functions(text)
    expr = sympy.sympify(text, locals=_SYMPY_FUNCS)
    return expr.xreplace({s: symbol(s.name) for s in expr.free_symbols})


def parse_dim(text: str) -> Dim:
    expr = _parse(text)
    return int(expr) if expr.is_Integer else expr


_SYMPY_FUNCS = {
    "floor": sympy.floor,
    "ceiling": sympy.ceiling,
    "Mod": sympy.Mod,
    "Max": sympy.Max,
    "Min": sympy.Min,
}
# torch's own functions in the expressions its ShapeEnv writes (a softmax scale
# 1/sqrt(E) of a symbolic head size is FloatPow(FloatTrueDiv(1.0, ...), 0.5)): parsed as
# themselves, they evaluate once their symbols have values. Added at the first text
# that names one (they are torch's: a program without them parses without torch).
_TORCH_SYMPY_NAMES = (
    "ToFloat", "FloatTrueDiv", "IntTrueDiv", "FloatPow", "PowByNatural", "TruncToFloat", "TruncToInt",
    "RoundToInt", "RoundDecimal", "CeilToInt", "FloorToInt", "Identity",
)


def _with_torch_functions(text: str) -> None:
    if _TORCH_SYMPY_NAMES[0] in _SYMPY_FUNCS or not any(n in text for n in _TORCH_SYMPY_NAMES):
        return
    import torch.utils._sympy.functions as torch_sympy

    _SYMPY_FUNCS.update((n, getattr(torch_sympy, n)) for n in _TORCH_SYMPY_NAMES if hasattr(torch_sympy, n))


# A symbol's assumptions follow from its name, so that IR text parses back to the same
# expressions: `n…` (`ns3`, `nu0`) is an int of either sign (a Python int argument, a
# value item() read), `m…` one torch's guards proved negative (`x[k]` traced at k = -3),
# `zf…`/`zuf…` a float (torch's names), and every other name a size or a loop index,
# never negative, which lets sympy simplify floor and Mod.
SIGNED_PREFIX = "n"
NEGATIVE_PREFIX = "m"
FLOAT_PREFIXES = ("zf", "zuf")


@lru_cache(maxsize=None)
def symbol(name: str) -> sympy.Symbol:
    """The sympy symbol strata uses for `name`, with the assumptions its name implies."""
    if name.startswith(SIGNED_PREFIX):
        return sympy.Symbol(name, integer=True)
    if name.startswith(NEGATIVE_PREFIX):
        return sympy.Symbol(name, integer=True, negative=True)
    if name.startswith(FLOAT_PREFIXES):
        return sympy.Symbol(name, real=True)
    return sympy.Symbol(name, integer=True, nonnegative=True)


def torch_symbol_name(name: str) -> str:
    """The name torch's ShapeEnv gave the symbol strata calls `name` (`ns3` → `s3`)."""
    return name[1:] if name.startswith((SIGNED_PREFIX, NEGATIVE_PREFIX)) else name


def is_signed(expr: sympy.Expr) -> bool:
    """Whether `expr` names a symbol that may be negative: an index computed from it
    needs floor division and modulo with Python's rounding, not the unsigned ones."""
    return any(s.name.startswith((SIGNED_PREFIX, NEGATIVE_PREFIX)) for s in expr.free_symbols)


def may_be_negative(expr: sympy.Expr) -> bool:
    """Whether sympy cannot prove `expr` never negative: a floor division or modulo of it
    needs Python's rounding, not the unsigned one. Offsets over loop indices and sizes
    are proved; a value such as `floor(-s0/5)` (a scalar a kernel computes) is not."""
    if is_signed(expr):
        return True
    expr = sympy.sympify(expr)
    if expr.is_nonnegative is True:
        return False
    bound = _floors_at_least(expr)  # floor(s/2 - 1/2) + 1, a convolution's output size
    return bound is None or bound.is_nonnegative is not True


def _floors_at_least(expr: sympy.Expr) -> sympy.Expr | None:
    """A lower bound of `expr` with each floor(p/q) (q a positive integer, p integral)
    taken at its least, (p - q + 1)/q, where it adds with a non-negative coefficient;
    None where some floor is not of that form."""
    terms = []
    for term in sympy.Add.make_args(expr):
        coeff, rest = term.as_coeff_Mul()
        if isinstance(rest, sympy.floor):
            p, q = sympy.fraction(sympy.together(rest.args[0]))
            if coeff < 0 or not (q.is_Integer and q > 0) or p.is_integer is not True or p.has(sympy.floor):
                return None
            terms.append(coeff * (p - q + 1) / q)
        elif rest.has(sympy.floor):
            return None
        else:
            terms.append(term)
    return sympy.Add(*terms)


def sym(text: str | int | sympy.Expr) -> sympy.Expr:
    """Parse an expression over shape symbols, with strata's symbol assumptions."""
    if isinstance(text, sympy.Basic):
        return text.xreplace({s: symbol(s.name) for s in text.free_symbols if s != symbol(s.name)})
    if isinstance(text, int):
        return sympy.Integer(text)
    return _parse(text)


def dim_attr(dim: Dim) -> IntAttr | StringAttr:
    if isinstance(dim, int):
        return IntAttr(dim)
    dim = flatten_floors(sympy.sympify(dim))
    if dim.is_Integer:
        return IntAttr(int(dim))
    return StringAttr(sympy.sstr(dim))


def flatten_floors(expr: sympy.Expr) -> sympy.Expr:
    """`floor(floor(b)/n + q)` as `floor(b/n + q)`, for a positive integer n and n·q an
    integer: (floor(b) + n·q) = floor(b + n·q), and floor(floor(x)/n) = floor(x/n).

    A size computed in two steps (two stride-2 convolutions: floor(floor(s/2 − 1/2)/2)
    + 1) and the same size as torch's ShapeEnv writes it (floor(s/4 − 1/4) + 1) then
    print alike, so that the types of the ops meeting there agree."""
    if not isinstance(expr, sympy.Basic) or len(expr.atoms(sympy.floor)) < 2:
        return expr
    return expr.replace(lambda e: isinstance(e, sympy.floor), _flatten_floor)


def _flatten_floor(f: sympy.Expr) -> sympy.Expr:
    inner = [t for t in sympy.Add.make_args(f.args[0]) if t.as_coeff_Mul()[1].func is sympy.floor]
    if len(inner) != 1:
        return f
    c, floor_b = inner[0].as_coeff_Mul()
    if not (c.is_Rational and c > 0 and c.p == 1):
        return f
    n, q = c.q, f.args[0] - inner[0]
    if (n * q).is_integer is not True:
        return f
    return sympy.floor(floor_b.args[0] / n + q)


def dim_from_attr(attr: Attribute) -> Dim:
    if isinstance(attr, IntAttr):
        return attr.data
    assert isinstance(attr, StringAttr)
    return parse_dim(attr.data)


def numel(dims: Iterable[Dim]) -> Dim:
    n: Dim = 1
    for d in dims:
        n = n * d
    return n


@irdl_attr_definition
class TensorType(ParametrizedAttribute, TypeAttribute):
    """A value-semantic tensor: dims (ints or sympy expressions) and a dtype name."""

    name = "strata.tensor"

    shape: ArrayAttr[IntAttr | StringAttr]
    element: StringAttr

    def __init__(self, dims: Sequence[Dim], dtype: str):
        super().__init__(ArrayAttr([dim_attr(d) for d in dims]), StringAttr(dtype))

    @property
    def dims(self) -> tuple[Dim, ...]:
        return tuple(dim_from_attr(a) for a in self.shape.data)

    @property
    def dtype(self) -> str:
        return self.element.data

    @property
    def rank(self) -> int:
        return len(self.shape.data)

    @property
    def torch_dtype(self) -> torch.dtype:
        return DTYPES[self.dtype]

    def with_dims(self, dims: Sequence[Dim]) -> TensorType:
        return TensorType(dims, self.dtype)

    def with_dtype(self, dtype: str) -> TensorType:
        return TensorType(self.dims, dtype)

    def verify(self) -> None:
        if self.element.data not in DTYPES:
            raise VerifyException(
                f"unknown dtype '{self.element.data}' in {self.name}; "
                f"expected one of {', '.join(DTYPES)}"
            )
        for a in self.shape.data:
            if isinstance(a, IntAttr) and a.data < 0:
                raise VerifyException(f"negative dim {a.data} in {self.name}")
            if isinstance(a, StringAttr):
                canonical = sympy.sstr(parse_dim(a.data))
                if canonical != a.data:
                    raise VerifyException(
                        f"dim '{a.data}' is not in canonical form; write '{canonical}'"
                    )

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():

            def parse_dim_attr() -> Attribute:
                text = parser.parse_optional_str_literal()
                if text is not None:
                    return dim_attr(parse_dim(text))
                return IntAttr(parser.parse_integer(allow_boolean=False))

            dims = parser.parse_comma_separated_list(
                parser.Delimiter.SQUARE, parse_dim_attr
            )
            parser.parse_punctuation(",")
            dtype = parser.parse_identifier()
        return (ArrayAttr(dims), StringAttr(dtype))

    def print_parameters(self, printer: Printer) -> None:
        def print_dim(a: Attribute) -> None:
            if isinstance(a, IntAttr):
                printer.print_string(str(a.data))
            else:
                printer.print_string_literal(a.data)

        with printer.in_angle_brackets():
            printer.print_string("[")
            printer.print_list(self.shape.data, print_dim)
            printer.print_string("], ")
            printer.print_string(self.element.data)


def tensor_type(t: Attribute) -> TensorType:
    if not isinstance(t, TensorType):
        raise VerifyException(f"expected a !strata.tensor, got {t}")
    return t


Strata = Dialect("strata", [], [TensorType])


# Values of shape symbols while a reference implementation or the runtime runs.
_BINDINGS: contextvars.ContextVar[dict[str, int]] = contextvars.ContextVar("strata_bindings", default={})


@contextlib.contextmanager
def bound_symbols(bindings: dict[str, int]):
    """Make `concrete` evaluate shape symbols with these values."""
    token = _BINDINGS.set(bindings)
    try:
        yield
    finally:
        _BINDINGS.reset(token)


def concrete(dims: Iterable[Dim], bindings: dict[str, int] | None = None) -> list[int]:
    """Dims as ints, under `bindings` or the ones `bound_symbols` set."""
    env = _BINDINGS.get() if bindings is None else bindings
    return [d if isinstance(d, int) else _value_of(d, env) for d in dims]


# A reference op of a graph with symbolic sizes evaluates its dims at every call, with
# the same few bindings each time: each dim's expression and symbols are parsed once,
# and its value is kept per binding of those symbols (sympy's subs, exact, costs
# tens of microseconds; a graph of a few hundred such ops spent most of its host time there).
_PARSED: dict[Any, tuple[sympy.Expr, tuple[str, ...]]] = {}
_VALUES: dict[tuple, int] = {}
_MAX_VALUES = 1 << 16


def _value_of(d: Dim, env: dict[str, int]) -> int:
    parsed = _PARSED.get(d)
    if parsed is None:
        e = sym(d)
        parsed = _PARSED[d] = (e, tuple(sorted(s.name for s in e.free_symbols)))
    e, names = parsed
    if not names:
        return int(e)
    try:
        values = tuple([env[n] for n in names])
    except KeyError:
        missing = [n for n in names if n not in env]
        raise ValueError(f"no value bound for shape symbol(s) {', '.join(missing)}") from None
    key = (d, values)
    v = _VALUES.get(key)
    if v is None:
        v = int(e.subs({s: env[s.name] for s in e.free_symbols}))
        if len(_VALUES) >= _MAX_VALUES:
            _VALUES.clear()
        _VALUES[key] = v
    return v


def from_torch_sympy(expr: sympy.Expr) -> sympy.Expr:
    """torch's ShapeEnv expression in plain sympy over strata's symbols: FloorDiv,
    ModularIndexing and friends become floor, Mod, Max, Min, which print and parse."""
    from torch.utils._sympy import functions as torch_sympy

    table = (
        # CleanDiv (an exact division) comes before FloorDiv, its base class.
        (torch_sympy.CleanDiv, lambda a, b: a / b),
        (torch_sympy.FloorDiv, lambda a, b: sympy.floor(a / b)),
        (torch_sympy.CeilDiv, lambda a, b: sympy.ceiling(a / b)),
        (torch_sympy.IntTrueDiv, lambda a, b: a / b),
        (torch_sympy.ModularIndexing, lambda x, d, m: sympy.Mod(sympy.floor(x / d), m)),
        (torch_sympy.PythonMod, sympy.Mod),
        (torch_sympy.Mod, sympy.Mod),
        (torch_sympy.Max, sympy.Max),
        (torch_sympy.Min, sympy.Min),
        (torch_sympy.PowByNatural, sympy.Pow),
        (torch_sympy.Identity, lambda x: x),
    )
    expr = _exact_divisions(expr)
    for cls, plain in table:
        if expr.has(cls):
            expr = expr.replace(cls, plain)
    return expr.xreplace({s: _strata_symbol(s) for s in expr.free_symbols})


def _compiling_shape_env():
    """The ShapeEnv of the compile in progress (Dynamo's tracing context), or None."""
    from torch._guards import TracingContext

    context = TracingContext.try_get()
    fake_mode = getattr(context, "fake_mode", None)
    return getattr(fake_mode, "shape_env", None)


def _strata_symbol(s: sympy.Symbol) -> sympy.Symbol:
    """strata's symbol for one of torch's, named by the sign that torch's assumptions,
    or the value range its ShapeEnv proved under guards, give it: a size keeps its name,
    an int proved negative is `m…`, any other int `n…`; floats and strata's own
    names keep theirs."""
    if s.name.startswith((SIGNED_PREFIX, NEGATIVE_PREFIX, *FLOAT_PREFIXES)) or s.is_nonnegative:
        return symbol(s.name)
    known = getattr(_compiling_shape_env(), "var_to_range", {}).get(s)
    if known is not None and known.lower >= 0:
        return symbol(s.name)
    if known is not None and known.upper < 0:
        return symbol(NEGATIVE_PREFIX + s.name)
    return symbol(SIGNED_PREFIX + s.name)


def _exact_divisions(expr: sympy.Expr) -> sympy.Expr:
    """FloorDiv(a, b) as the exact a/b where the ShapeEnv knows b divides a: a guard
    (`s0 % 4 == 0`, from `x.view(-1, 4)`) recorded it after the size was written.
    The test is the one torch's own ShapeEnv.simplify makes."""
    from torch.utils._sympy.functions import CleanDiv, FloorDiv, Mod

    shape_env = _compiling_shape_env()
    if not getattr(shape_env, "divisible", None) or not expr.has(FloorDiv):
        return expr

    def exact(e: sympy.Expr) -> sympy.Expr:
        return CleanDiv(*e.args) if shape_env.replace(Mod(*e.args)) in shape_env.divisible else e

    return expr.replace(lambda e: type(e) is FloorDiv, exact)
