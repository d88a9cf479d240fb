"""The aten dialect: one op per Core ATen overload, plus `aten.call` for any other.

The op classes are built from the schema table in aten_ops_generated.py. Every op has
the same shape, so that one printer, parser, importer and eager fallback serve all:

    %r = aten.add.Tensor %a, %b {alpha = 1 : i64} : (T, T) -> T

- operands: the schema's tensor arguments in order (a `Tensor[]` contributes each
  element, an absent `Tensor?` nothing), then nothing else;
- properties: every non-tensor argument that is not at its default, as a builtin
  attribute (ints and SymInts: `i64` or a sympy string over shape symbols; floats:
  `f64`; bools: `i1`; dtypes: strata dtype names; lists: arrays);
- `segments` (only on ops with optional or list tensor arguments): how many operands
  each tensor argument took, and for `Tensor?[]` which list elements are present.

`aten.call {overload = "aten::foo.bar", arguments = {...}}` carries any other overload
the same way, its non-tensor arguments in one dictionary; its schema is looked up in
torch. Any aten op runs as the eager kernel (`call_eager`),
which is how the runtime falls back for an op no lowering covers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar

import sympy
from strata.dialects.lazy_torch import torch
from xdsl.dialects.builtin import (
    ArrayAttr,
    DenseArrayBase,
    DictionaryAttr,
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
    opt_prop_def,
    prop_def,
    var_operand_def,
    var_result_def,
)
from xdsl.utils.exceptions import VerifyException

from strata.dialects.aten_ops_generated import CORE_ATEN_SCHEMAS
from strata.dialects.types import DTYPES, TORCH_TO_DTYPE, concrete, sym

TENSOR_KINDS = ("Tensor", "Tensor?", "Tensor[]", "Tensor?[]")


@dataclass(frozen=True)
class Arg:
    """One schema argument: its name, kind (e.g. "Tensor?", "int[]", "ScalarType?") and default."""

    name: str
    kind: str
    default: Any
    kwarg_only: bool

    @property
    def is_tensor(self) -> bool:
        return self.kind in TENSOR_KINDS


@dataclass(frozen=True)
class Signature:
    qualified_name: str  # "aten::add.Tensor"
    args: tuple[Arg, ...]
    num_results: int | None  # None: one Tensor[] result of any length

    @property
    def op_name(self) -> str:  # "aten.add.Tensor"
        ns, rest = self.qualified_name.split("::")
        name, _, overload = rest.partition(".")
        return f"{ns}.{name}.{overload or 'default'}"

    @property
    def needs_segments(self) -> bool:
        return any(a.kind in ("Tensor?", "Tensor[]", "Tensor?[]") for a in self.args)


def _kind(t: Any) -> str:
    """The schema type as one short string ("Tensor?", "int[]", "ScalarType?", …)."""
    text = str(t)
    optional = text.startswith("Optional[") and text.endswith("]")
    if optional:
        text = text[len("Optional[") : -1]
        t = t.getElementType()
    base = {
        "Tensor": "Tensor",
        "int": "int",
        "SymInt": "int",
        "float": "float",
        "bool": "bool",
        "number": "Scalar",
        "str": "str",
        "Device": "Device",
        "Layout": "Layout",
        "ScalarType": "ScalarType",
        "MemoryFormat": "MemoryFormat",
        "Generator": "Generator",
    }
    if text.startswith("List["):
        inner = t.getElementType()
        inner_kind = _kind(inner)
        return inner_kind + "[]" + ("?" if optional else "")
    return base.get(text, text) + ("?" if optional else "")


def signature_of(schema: torch.FunctionSchema) -> Signature:
    args = []
    for a in schema.arguments:
        kind = _kind(a.real_type)
        args.append(Arg(a.name, kind, a.default_value, a.kwarg_only))
    name = schema.name + (f".{schema.overload_name}" if schema.overload_name else "")
    list_result = len(schema.returns) == 1 and str(schema.returns[0].type).startswith("List[")
    return Signature(name, tuple(args), None if list_result else len(schema.returns))


@cache
def torch_overload(qualified_name: str) -> torch._ops.OpOverload:
    ns, rest = qualified_name.split("::")
    name, _, overload = rest.partition(".")
    return getattr(getattr(getattr(torch.ops, ns), name), overload or "default")


# ---------------------------------------------------------------- value encoding
def encode(value: Any, kind: str) -> Attribute:
    """A non-tensor argument value as a builtin attribute."""
    base = kind.rstrip("?")
    if base.endswith("[]"):
        return ArrayAttr([encode(v, base[:-2]) for v in value])
    if base == "ScalarType":
        return StringAttr(TORCH_TO_DTYPE[value])
    if base in ("Layout", "Device", "MemoryFormat", "str") or base == "Any" and isinstance(value, str):
        return StringAttr(str(value))  # Any: a process group's name (_c10d_functional ops)
    if isinstance(value, torch.SymInt | torch.SymFloat | torch.SymBool):
        from strata.dialects.types import from_torch_sympy

        return StringAttr(sympy.sstr(from_torch_sympy(value.node.expr)))
    if isinstance(value, sympy.Expr) and not value.is_Number:  # over strata's symbols already
        return StringAttr(sympy.sstr(value))
    if isinstance(value, sympy.Integer):
        value = int(value)
    if isinstance(value, bool):
        return IntegerAttr(int(value), IntegerType(1))
    if isinstance(value, int):
        return IntegerAttr(value, i64)
    if isinstance(value, float):
        return FloatAttr(value, f64)
    raise ValueError(f"cannot encode {value!r} as an aten argument of kind {kind}")


def decode(attr: Attribute, kind: str, bindings: dict[str, int] | None = None) -> Any:
    """The Python value of an encoded argument; symbolic ints evaluate under `bindings`."""
    base = kind.rstrip("?")
    if base.endswith("[]"):
        return [decode(a, base[:-2], bindings) for a in attr.data]
    if isinstance(attr, StringAttr):
        if base == "ScalarType":
            return DTYPES[attr.data]
        if base == "Layout":
            return getattr(torch, attr.data.removeprefix("torch."))
        if base == "MemoryFormat":
            return getattr(torch, attr.data.removeprefix("torch."))
        if base == "Device":
            return torch.device(attr.data)
        if base in ("str", "Any"):
            return attr.data
        if bindings is not None and base in ("Scalar", "float"):
            return scalar_value(sym(attr.data), bindings)  # a float item() may be in it
        return concrete([sym(attr.data)], bindings)[0] if bindings is not None else sym(attr.data)
    if isinstance(attr, IntegerAttr):
        v = attr.value.data
        return bool(v) if attr.type == IntegerType(1) else v
    if isinstance(attr, FloatAttr):
        return attr.value.data
    raise ValueError(f"cannot decode {attr} as {kind}")


def scalar_value(expr: sympy.Expr, bindings: dict) -> int | float | bool:
    """A symbolic Scalar argument's value under the bindings: an int for sizes, a float
    where a float item() value takes part (an eager fallback's fill value `2*s + 1`)."""
    missing = sorted(s.name for s in expr.free_symbols if s.name not in bindings)
    if missing:
        raise ValueError(f"no value bound for symbol(s) {', '.join(missing)}")
    floats = any(isinstance(bindings[s.name], float) for s in expr.free_symbols)
    value = expr.xreplace({s: sympy.sympify(bindings[s.name]) for s in expr.free_symbols})
    if value.is_Boolean:
        return bool(value)
    # A float of sizes (a softmax scale 1/sqrt(E) of a symbolic E) is a float too.
    return float(value) if floats or (value.is_number and not value.is_Integer) else int(value)



# ---------------------------------------------------------------- the op classes
class AtenOp(IRDLOperation):
    """Base of every aten op; `signature` says how operands and properties map to the schema."""

    args = var_operand_def()
    outs = var_result_def()
    segments = opt_prop_def(DenseArrayBase)
    assembly_format = "operands attr-dict `:` functional-type(operands, results)"
    irdl_options = (ParsePropInAttrDict(),)

    SIGNATURE: ClassVar[Signature]

    @property
    def signature(self) -> Signature:
        return self.SIGNATURE

    @property
    def overload_name(self) -> str:
        return self.signature.qualified_name

    def bind(self) -> dict[str, Any]:
        """Schema argument name → SSAValue (tensors; lists of them; None) or attribute."""
        sig = self.signature
        operands = list(self.args)
        segs = list(self.segments.get_values()) if self.segments is not None else None
        out: dict[str, Any] = {}
        pos = 0
        seg_i = 0
        for a in sig.args:
            if a.is_tensor:
                if segs is None:
                    out[a.name] = operands[pos]
                    pos += 1
                    continue
                n = segs[seg_i]
                seg_i += 1
                if a.kind == "Tensor":
                    out[a.name] = operands[pos]
                elif a.kind == "Tensor?":
                    out[a.name] = operands[pos] if n else None
                elif a.kind == "Tensor[]":
                    out[a.name] = operands[pos : pos + n]
                else:  # Tensor?[]: n is the list length; a mask follows
                    mask = segs[seg_i : seg_i + n]
                    seg_i += n
                    items, k = [], pos
                    for present in mask:
                        items.append(operands[k] if present else None)
                        k += bool(present)
                    out[a.name] = items
                    n = sum(bool(m) for m in mask)
                pos += n
            else:
                out[a.name] = self.argument_attr(a.name)
        return out

    def argument_attr(self, name: str) -> Attribute | None:
        """The attribute holding a non-tensor argument, or None at its default."""
        return self.properties.get(name)

    def argument_names(self) -> set[str]:
        return set(self.properties) - {"segments"}

    def constant(self, name: str, bindings: dict[str, int] | None = None) -> Any:
        """A non-tensor argument's value (its default when absent)."""
        arg = next(a for a in self.signature.args if a.name == name)
        attr = self.argument_attr(name)
        if attr is None:
            return arg.default
        return decode(attr, arg.kind, bindings)

    def verify_(self) -> None:
        sig = self.signature
        known = {a.name for a in sig.args if not a.is_tensor}
        for name in self.argument_names():
            if name not in known:
                raise VerifyException(f"{self.name}: '{name}' is not an argument of {sig.qualified_name}")
        if sig.num_results is not None and len(self.outs) != sig.num_results:
            raise VerifyException(f"{self.name}: {sig.qualified_name} has {sig.num_results} results, not {len(self.outs)}")
        if sig.needs_segments != (self.segments is not None):
            raise VerifyException(f"{self.name}: 'segments' must be present exactly when the schema has optional or list tensors")
        try:
            self.bind()
        except IndexError:
            raise VerifyException(f"{self.name}: operands do not match the schema's tensor arguments") from None


def _op_class(schema_text: str) -> type[AtenOp]:
    sig = signature_of(torch._C.parse_schema(schema_text))
    cls_name = "Aten_" + sig.op_name.removeprefix("aten.").replace(".", "_")
    fields: dict[str, Any] = {
        "name": sig.op_name,
        "SIGNATURE": sig,
        "__annotations__": {"SIGNATURE": ClassVar[Signature]},
        "__qualname__": cls_name,
        "__module__": __name__,
    }
    for a in sig.args:
        if not a.is_tensor and a.name not in ("args", "outs", "segments", "name"):
            fields[a.name] = opt_prop_def(Attribute)
    return irdl_op_definition(type(cls_name, (AtenOp,), fields))


@cache
def _core_ops() -> dict[str, type[AtenOp]]:
    """The op class of each Core ATen overload, made from torch's schemas at the first
    use (`CORE_OPS`, `Aten`, `op_class_for`), so that importing this module, as the
    passes that meet leftover aten ops do, needs no torch (dialects/lazy_torch.py)."""
    ops: dict[str, type[AtenOp]] = {}
    for schema in CORE_ATEN_SCHEMAS:
        cls = _op_class(schema)
        ops[cls.SIGNATURE.qualified_name] = cls
    return ops


@irdl_op_definition
class CallOp(AtenOp):
    """Any ATen overload outside the core set, named by `overload`; runs eagerly."""

    name = "aten.call"
    overload = prop_def(StringAttr)
    arguments = prop_def(DictionaryAttr)

    @property
    def signature(self) -> Signature:
        return _signature_by_name(self.overload.data)

    def argument_attr(self, name: str) -> Attribute | None:
        return self.arguments.data.get(name)

    def argument_names(self) -> set[str]:
        return set(self.arguments.data)


@cache
def _signature_by_name(qualified_name: str) -> Signature:
    return signature_of(torch_overload(qualified_name)._schema)


def op_class_for(qualified_name: str) -> type[AtenOp]:
    return _core_ops().get(qualified_name, CallOp)


def build(
    qualified_name: str,
    values: dict[str, Any],
    result_types: Sequence[Attribute],
) -> AtenOp:
    """An aten op for `qualified_name` from schema argument name → value, where tensor
    arguments are SSAValues (None, or lists) and the rest are Python values."""
    cls = op_class_for(qualified_name)
    sig = _signature_by_name(qualified_name)
    operands: list[SSAValue] = []
    segs: list[int] = []
    props: dict[str, Attribute] = {}
    for a in sig.args:
        v = values.get(a.name, a.default)
        if a.is_tensor:
            if a.kind == "Tensor":
                operands.append(v)
                segs.append(1)
            elif a.kind == "Tensor?":
                operands.extend([v] if v is not None else [])
                segs.append(0 if v is None else 1)
            elif a.kind == "Tensor[]":
                operands.extend(v)
                segs.append(len(v))
            else:
                segs.append(len(v))
                segs.extend(0 if t is None else 1 for t in v)
                operands.extend(t for t in v if t is not None)
        elif v is not None and not _is_default(v, a):
            props[a.name] = encode(v, a.kind)
    if sig.needs_segments:
        props["segments"] = DenseArrayBase.from_list(i64, segs)
    if cls is CallOp:  # its arguments vary with the overload: one dictionary
        segments = props.pop("segments", None)
        props = {"overload": StringAttr(qualified_name), "arguments": DictionaryAttr(props)}
        if segments is not None:
            props["segments"] = segments
    return cls.create(operands=operands, result_types=list(result_types), properties=props)


def _is_default(value: Any, arg: Arg) -> bool:
    try:
        return type(value) is type(arg.default) and value == arg.default
    except Exception:  # a SymInt or tensor-like default compares oddly
        return False


# ---------------------------------------------------------------- eager execution
def call_eager(op: AtenOp, operand_values: Sequence[Any], bindings: dict[str, int]) -> list[Any]:
    """Runs the eager kernel of an aten op on concrete operand values."""
    env = dict(zip(op.args, operand_values))
    args, kwargs = [], {}
    for a in op.signature.args:
        bound = op.bind()[a.name]
        if a.is_tensor:
            if isinstance(bound, list):
                value = [None if v is None else env[v] for v in bound]
            else:
                value = None if bound is None else env[bound]
        else:
            value = a.default if bound is None else decode(bound, a.kind, bindings)
        if a.kwarg_only:
            kwargs[a.name] = value
        else:
            args.append(value)
    result = torch_overload(op.overload_name)(*args, **kwargs)
    if isinstance(result, tuple | list):
        return list(result)
    return [result]


@cache
def _dialect() -> Dialect:
    return Dialect("aten", [*_core_ops().values(), CallOp])


def __getattr__(name: str) -> Any:
    """CORE_OPS and the Aten dialect, made at their first use (_core_ops)."""
    if name == "CORE_OPS":
        return _core_ops()
    if name == "Aten":
        return _dialect()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
