"""infer-shapes: recomputes every result type, in sympy, from the operand types.

prim ops answer with their own `infer_type`. aten ops run torch's meta functions: the
overload is called on fake tensors under `FakeTensorMode` with a `ShapeEnv` that holds
one backed symbolic size per strata shape symbol, and the result sizes map back to
sympy expressions over strata's symbols.

A backed size has a hint, a made-up value here, and a meta function that branches on a
relation the symbols alone do not decide (`s1 <= s2`) guards on the hints. Such a
result holds only under an assumption torch made with real sizes when it traced, so
it cannot overrule a declared type; a result reached without guards is exact, and a
declared type that disagrees with it is an error, reported with the op and shapes.

A function the importer marks `strata.traced` holds aten ops whose types torch's own
trace gave, with the graph's real ShapeEnv, under the guards that protect the compiled
graph: more exact than a rerun on made-up hints, and a rerun costs a fake-tensor
dispatch per op (several seconds for a GPT block with symbolic sizes). Its aten ops
keep their types unless the pass is run with `trust_traced=false`, which cross-checks
them (tests/test_infer_shapes.py does). A pass that adds aten ops to a traced function
gives them their types.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import sympy
import torch
from torch._dynamo.source import ConstantSource
from torch._subclasses.fake_tensor import (
    DataDependentOutputException,
    DynamicOutputShapeException,
    FakeTensorMode,
    UnsupportedOperatorException,
)
from torch.fx.experimental.symbolic_shapes import DimDynamic, GuardOnDataDependentSymNode, ShapeEnv
from torch.utils._sympy import functions as torch_sympy
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import PassFailedException

from strata.dialects.attributes import graph_device
from strata.dialects.aten import AtenOp, decode, torch_overload
from strata.dialects.prim import PrimOp, types_match
from strata.dialects.types import TensorType, dtype_name, from_torch_sympy, sym
from strata.passes.provenance import blame

log = logging.getLogger(__name__)

# Torch cannot say what these produce without data; the declared types stand.
_UNKNOWABLE = (
    DataDependentOutputException,
    DynamicOutputShapeException,
    GuardOnDataDependentSymNode,
    UnsupportedOperatorException,
)


@dataclass(frozen=True)
class InferShapesPass(ModulePass):
    name = "infer-shapes"
    trust_traced: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in op.ops:
            if isinstance(fn, func.FuncOp):
                if log.isEnabledFor(logging.DEBUG):
                    before = [(o, list(o.result_types)) for o in fn.body.walk()]
                    infer_function(fn, self.trust_traced)
                    changed = sum(list(o.result_types) != types for o, types in before)
                    log.debug("%d of %d ops got result types rewritten to the inferred (canonical) form", changed, len(before))
                else:
                    infer_function(fn, self.trust_traced)


TRACED = "strata.traced"  # the function's aten types are torch's trace's (see above)


def infer_function(fn: func.FuncOp, trust_traced: bool = True) -> None:
    # Meta functions differ by device (CUDA's layer norm keeps f32 statistics).
    meta = MetaShapes(device=graph_device(fn) or "cpu")
    for t in fn.function_type.inputs:
        meta.note_symbols(t)
    rerun_aten = not (trust_traced and TRACED in fn.attributes)
    for op in fn.body.walk():
        try:
            if isinstance(op, PrimOp):
                _reconcile(op, [_prim_type(op)], exact=True)
            elif isinstance(op, AtenOp) and rerun_aten:
                types, exact = meta.result_types(op)
                _reconcile(op, types, exact)
        except Exception as e:
            blame(e, op)  # the error message names the op and its source
            raise
        if isinstance(op, func.ReturnOp):
            fn.function_type = FunctionType.from_lists(
                fn.function_type.inputs.data, [v.type for v in op.arguments]
            )


def _prim_type(op: PrimOp) -> Attribute:
    try:
        return op.infer_type()
    except Exception as e:
        raise PassFailedException(f"infer-shapes: {op.name} cannot take operands {_operand_types(op)}: {e}") from e


def _reconcile(op: Operation, types: Sequence[Attribute | None], exact: bool) -> None:
    for i, (result, inferred) in enumerate(zip(op.results, types)):
        if inferred is None or inferred == result.type:
            continue
        if types_match(result.type, inferred):
            Rewriter.replace_value_with_new_type(result, inferred)  # the canonical form
        elif exact:
            source = op.attributes.get("strata.source")
            raise PassFailedException(
                f"infer-shapes: {op.name} declares result {i} as {result.type}, but its operands "
                f"{_operand_types(op)} give {inferred}"
                + (f" (from {source.data})" if source is not None else "")
            )


def _operand_types(op: Operation) -> str:
    return "(" + ", ".join(str(v.type) for v in op.operands) + ")"


# ---------------------------------------------------------------- torch's meta functions
@dataclass
class MetaShapes:
    """Result types of aten ops from torch's meta functions. Every strata symbol gets
    a distinct hint, increasing in order of first appearance (inputs first), so that
    sizes listed later are larger, as masks and caches usually are."""

    device: str = "cpu"
    hints: dict[str, int] = field(default_factory=dict)
    cache: dict[Any, tuple[list[Attribute | None], bool]] = field(default_factory=dict)

    def note_symbols(self, t: Attribute) -> None:
        if isinstance(t, TensorType):
            for d in t.dims:
                self.note_dim(d)

    def note_dim(self, d: Any) -> None:
        if isinstance(d, sympy.Basic):
            for s in sorted(d.free_symbols, key=lambda s: s.name):
                self.hints.setdefault(s.name, _hint(len(self.hints)))

    def result_types(self, op: AtenOp) -> tuple[list[Attribute | None], bool]:
        """The result types (None where torch cannot tell) and whether they hold
        without assumptions."""
        key = (op.overload_name, tuple(sorted(op.properties.items())), tuple(op.operand_types))
        if key not in self.cache:
            self.cache[key] = self._run(op)
        return self.cache[key]

    def _run(self, op: AtenOp) -> tuple[list[Attribute | None], bool]:
        for t in op.operand_types:
            self.note_symbols(t)
        env = _FakeEnv(self)
        with env.mode, _quiet(_FAKE_TENSOR_LOG):
            try:
                args, kwargs = env.arguments(op)
            except Exception:
                return [None] * len(op.results), False  # sizes torch cannot represent
            try:
                out = torch_overload(op.overload_name)(*args, **kwargs)
            except _UNKNOWABLE:
                return [None] * len(op.results), False
            except Exception as e:
                if env.guarded:
                    return [None] * len(op.results), False
                raise PassFailedException(
                    f"infer-shapes: torch's shape function for {op.name} rejects operands "
                    f"{_operand_types(op)}: {e}"
                ) from e
        values = [v for v in (out if isinstance(out, list | tuple) else [out]) if v is not None]
        if len(values) != len(op.results) or not all(isinstance(v, torch.Tensor) for v in values):
            return [None] * len(op.results), False
        types = [env.tensor_type(v) for v in values]
        return types, not env.guarded and None not in types


def _to_torch_sympy(expr: sympy.Expr) -> sympy.Expr:
    """The inverse, for the functions strata's dims use: the ShapeEnv reasons about
    FloorDiv and friends, not about sympy's floor of a fraction."""
    def division(kind):
        return lambda arg: kind(*sympy.fraction(sympy.together(arg)))

    return expr.replace(sympy.floor, division(torch_sympy.FloorDiv)).replace(
        sympy.ceiling, division(torch_sympy.CeilDiv)
    ).replace(sympy.Mod, torch_sympy.PythonMod).replace(sympy.Max, torch_sympy.Max).replace(
        sympy.Min, torch_sympy.Min
    )


# It logs, as an error with a traceback, every meta function that raises: for us a
# normal outcome (a guarded check on made-up hints, or the shape error we report).
_FAKE_TENSOR_LOG = logging.getLogger("torch._subclasses.fake_tensor")


@contextlib.contextmanager
def _quiet(logger: logging.Logger):
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def _hint(i: int) -> int:
    """Distinct primes from 17 on: never 0 or 1 (which torch specializes), and unlikely
    to make a divisibility test that is false in general come out true."""
    return int(sympy.prime(i + 7))


class _FakeEnv:
    """One ShapeEnv and FakeTensorMode for one op, so that guards one op adds do not
    shape another's result."""

    def __init__(self, meta: MetaShapes):
        self.meta = meta
        self.shape_env = ShapeEnv()
        self.mode = FakeTensorMode(shape_env=self.shape_env)
        self.to_env: dict[sympy.Symbol, sympy.Symbol] = {}
        self.from_env: dict[sympy.Symbol, sympy.Symbol] = {}

    @property
    def guarded(self) -> bool:
        return bool(self.shape_env.guards)

    def _symbol(self, s: sympy.Symbol) -> sympy.Symbol:
        if s not in self.to_env:
            self.meta.note_dim(s)
            e = self.shape_env.create_symbol(
                self.meta.hints[s.name], ConstantSource(s.name), dynamic_dim=DimDynamic.DYNAMIC
            )
            self.to_env[s], self.from_env[e] = e, s
        return self.to_env[s]

    def symbolic(self, value: Any) -> Any:
        """A strata sympy value as a SymInt or SymFloat of this env; others as they are."""
        if isinstance(value, list):
            return [self.symbolic(v) for v in value]
        if not isinstance(value, sympy.Basic):
            return value
        expr = sym(value)
        if expr.is_number:
            return int(expr) if expr.is_integer else float(expr)
        env_expr = _to_torch_sympy(expr.xreplace({s: self._symbol(s) for s in expr.free_symbols}))
        hint = expr.subs({s: self.meta.hints[s.name] for s in expr.free_symbols})
        if expr.is_integer:
            return self.shape_env.create_symintnode(env_expr, hint=int(hint))
        return self.shape_env.create_symfloatnode(env_expr, hint=float(hint))

    def fake(self, t: Attribute) -> torch.Tensor:
        if not isinstance(t, TensorType):
            raise PassFailedException(f"infer-shapes: expected a tensor operand, got {t}")
        return torch.empty([self.symbolic(d) for d in t.dims], dtype=t.torch_dtype, device=self.meta.device)

    def arguments(self, op: AtenOp) -> tuple[list[Any], dict[str, Any]]:
        """The overload's arguments as fake tensors and symbolic sizes, assembled as
        `call_eager` assembles real ones."""
        bound = op.bind()
        args, kwargs = [], {}
        for a in op.signature.args:
            v = bound[a.name]
            if isinstance(v, list) and a.is_tensor:
                value = [None if x is None else self.fake(x.type) for x in v]
            elif a.is_tensor:
                value = None if v is None else self.fake(v.type)
            else:
                value = a.default if v is None else self.symbolic(decode(v, a.kind))
            if a.kwarg_only:
                kwargs[a.name] = value
            else:
                args.append(value)
        return args, kwargs

    def tensor_type(self, t: torch.Tensor) -> TensorType | None:
        dims = []
        for d in t.shape:
            if not isinstance(d, torch.SymInt):
                dims.append(int(d))
                continue
            expr = d.node.expr
            if not expr.free_symbols <= self.from_env.keys():
                return None  # a size torch made up (unbacked): data-dependent
            dims.append(from_torch_sympy(expr.xreplace(self.from_env)))
        try:
            return TensorType(dims, dtype_name(t.dtype))
        except ValueError:
            return None
