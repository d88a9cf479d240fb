"""Imports an ATen-level FX graph (from AOTAutograd) into the aten dialect.

The graph becomes `func.func @graph`: placeholders become arguments (tensors with
torch's shapes as sympy dims and torch's dtypes; SymInt placeholders become `index`
arguments), each ATen call one aten op, the output node `func.return`. Shapes come from
the FakeTensors in `node.meta["val"]`, so a symbolic size is the ShapeEnv's own symbol
(`s77`). Graph inputs keep their strides as the argument attribute `strata.strides`,
since kernels index inputs in place. Nodes that only compute SymInts (sym_size, size
arithmetic) produce no op: their consumers record the sympy expression instead.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import sympy
import torch
import torch.fx
from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols
from xdsl.builder import Builder
from xdsl.rewriter import InsertPoint
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, DictionaryAttr, IndexType, ModuleOp, StringAttr, UnitAttr
from xdsl.ir import Attribute, Block, Region, SSAValue

from strata.dialects import aten
from strata.dialects.attributes import DEVICE_ATTR
from strata.dialects.prim import dims_attr
from strata.dialects.types import TensorType, dtype_name, from_torch_sympy, is_signed
from strata.frontend.capture.int_expressions import int_expression, misrecorded
from strata.frontend.capture.storage_offsets import storage_offset_attr
from strata.passes.fusion.fresh_results import RESULT_BASES, result_bases_attr
from strata.passes.infer_shapes import TRACED
from strata.passes.provenance import parse_source


class UnsupportedGraph(Exception):
    """The graph uses something strata cannot represent; the caller runs it eagerly."""


@dataclass
class ImportedGraph:
    module: ModuleOp
    # Tensors that the graph reads through get_attr nodes; passed after the inputs.
    constants: list[torch.Tensor] = field(default_factory=list)
    # For each `index` argument, the shape symbol it carries (or None).
    arg_symbols: list[str | None] = field(default_factory=list)
    # What the graph returns, in order: an int is the index of a result of @graph;
    # None is None (a gradient nobody asked for); a sympy expression is a size that
    # the caller evaluates from the inputs' sizes (AOTAutograd saves sizes for backward);
    # an ItemResult is an int the graph computed from a value item() read.
    outputs: list[int | None | sympy.Expr | ItemResult] = field(default_factory=list)
    # The arguments that are effect tokens, None at run time (frontend/capture/effects.py).
    effect_tokens: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class ItemResult:
    """An int output computed from values item() read, which only the running program
    knows: @graph returns it as the 0-d i64 tensor at `index` (aten.scalar_tensor)."""

    index: int


@dataclass(frozen=True)
class IntComputation:
    """An int output the graph computes from its int inputs and sizes with Python's
    operators, run as its FX nodes say: the expression torch records for it may be
    simplified wrongly for negative ints (`(k // -3) // -3` is recorded as `k // 9`)."""

    nodes: tuple[torch.fx.Node, ...]  # the output's ancestors and itself, in graph order
    arguments: dict[torch.fx.Node, int]  # each placeholder among them: its argument's index

    @staticmethod
    def of(v: torch.fx.Node) -> IntComputation | None:
        """v's computation, where every node it depends on is a graph input or computes
        an int, float or bool (not a tensor); else None."""
        seen: set[torch.fx.Node] = set()
        stack = [v]
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            if n.op == "placeholder":
                continue
            if n.op != "call_function" or isinstance(n.meta.get("val"), torch.Tensor):
                return None
            stack.extend(n.all_input_nodes)
        if v.op == "placeholder":
            return None
        placeholders = [n for n in v.graph.nodes if n.op == "placeholder"]
        return IntComputation(
            tuple(n for n in v.graph.nodes if n in seen),
            {n: placeholders.index(n) for n in seen if n.op == "placeholder"},
        )

    def __call__(self, args: list) -> int:
        values: dict[torch.fx.Node, Any] = {}
        for n in self.nodes:
            if n.op == "placeholder":
                values[n] = args[self.arguments[n]]
            else:
                values[n] = n.target(*torch.fx.node.map_arg(n.args, values.__getitem__),
                                     **torch.fx.node.map_arg(n.kwargs, values.__getitem__))
        return int(values[self.nodes[-1]])


def tensor_type_of(val: Any) -> TensorType:
    if not isinstance(val, torch.Tensor):
        raise UnsupportedGraph(f"expected a tensor value, got {type(val).__name__}")
    try:
        dtype = dtype_name(val.dtype)
    except ValueError as e:
        raise UnsupportedGraph(str(e)) from None
    return TensorType([_dim(d) for d in val.shape], dtype)


@dataclass(frozen=True)
class OpaqueArgument:
    """An output that is the graph's argument `index`, an opaque object (a device mesh
    AOTAutograd saves for the backward), returned as it was passed."""

    index: int


def is_opaque(val: Any) -> bool:
    """Whether val is a torchbind object (or the fake one tracing made of it)."""
    return isinstance(val, torch.ScriptObject) or type(val).__name__ == "FakeScriptObject"


def process_group_name(val: Any) -> str | None:
    """The registered name of the process group `val` is (a ProcessGroup, or the fake
    script object tracing made of one), None for anything else."""
    real = getattr(val, "real_obj", val)
    name = getattr(real, "group_name", None)
    if isinstance(name, str) and type(real).__name__ == "ProcessGroup":
        return name
    return None


def _dim(d: Any) -> int | sympy.Expr:
    if isinstance(d, torch.SymInt):
        expr = from_torch_sympy(d.node.expr)
        return int(expr) if expr.is_Integer else expr
    return int(d)


def _strides_attr(val: torch.Tensor) -> ArrayAttr:
    return dims_attr([_dim(s) for s in val.stride()])


def _result_attrs(graph: torch.fx.Graph, output_spec: list, results: int) -> list[DictionaryAttr]:
    """Each result's strides as eager makes them (`strata.strides`), which strata's
    results keep (passes/fusion/layouts.py): channels-last stays channels-last."""
    output = next(n for n in graph.nodes if n.op == "output")
    strides: dict[int, DictionaryAttr] = {}
    for v, spec in zip(_flatten(output.args[0]), output_spec):
        val = v.meta.get("val") if isinstance(v, torch.fx.Node) else None
        if isinstance(spec, int) and isinstance(val, torch.Tensor):
            strides.setdefault(spec, DictionaryAttr({"strata.strides": _strides_attr(val)}))
    return [strides.get(i, DictionaryAttr({})) for i in range(results)]


def import_graph(gm: torch.fx.GraphModule) -> ImportedGraph:
    """The aten-dialect module of an ATen FX graph."""
    graph = gm.graph
    wrong = misrecorded(graph)
    if wrong:
        raise UnsupportedGraph(wrong)
    placeholders = [n for n in graph.nodes if n.op == "placeholder"]
    constants_nodes = [n for n in graph.nodes if n.op == "get_attr"]
    constants = [_fetch_attr(gm, n.target) for n in constants_nodes]

    arg_types: list[Attribute] = []
    arg_attrs: list[DictionaryAttr] = []
    arg_symbols: list[str | None] = []
    opaque: dict[torch.fx.Node, str | OpaqueArgument] = {}
    for n in [*placeholders, *constants_nodes]:
        val = n.meta.get("val") if n.op == "placeholder" else _fetch_attr(gm, n.target)
        if isinstance(val, torch.SymInt):
            arg_types.append(IndexType())
            expr = from_torch_sympy(val.node.expr)
            name = expr.name if isinstance(expr, sympy.Symbol) else None
            arg_attrs.append(DictionaryAttr({"strata.symbol": StringAttr(name)} if name else {}))
            arg_symbols.append(name)
        elif isinstance(val, int):
            raise UnsupportedGraph("an int graph input without a symbolic size")
        elif is_opaque(val):
            # a torchbind object (DTensor's device mesh, a process group): passed through
            # to the results, or read by a functional collective as its group's name
            arg_types.append(IndexType())
            arg_attrs.append(DictionaryAttr({}))
            arg_symbols.append(None)
            opaque[n] = process_group_name(val) or OpaqueArgument(len(arg_types) - 1)
        else:
            arg_types.append(tensor_type_of(val))
            arg_attrs.append(DictionaryAttr({"strata.strides": _strides_attr(val), **storage_offset_attr(n)}))
            arg_symbols.append(None)

    block = Block(arg_types=arg_types)
    env: dict[torch.fx.Node, Any] = {}
    for n, arg in zip([*placeholders, *constants_nodes], block.args):
        env[n] = opaque.get(n, arg)
        arg.name_hint = _name_hint(n.name)

    builder = Builder(InsertPoint.at_end(block))
    outputs: list[SSAValue] = []
    output_spec: list[int | None | sympy.Expr] = []
    for n in graph.nodes:
        if n.op in ("placeholder", "get_attr"):
            continue
        if n.op == "output":
            for v in _flatten(n.args[0]):
                spec = _output_spec(builder, env, v, outputs)
                output_spec.append(spec)
            break
        if n.op != "call_function":
            raise UnsupportedGraph(f"FX node kind '{n.op}' ({n.target})")
        try:
            _import_call(builder, env, n)
        except UnsupportedGraph as e:  # name the user's line, where Dynamo recorded it
            where = parse_source(_source_of(n)).location
            raise UnsupportedGraph(f"{e} (at {where})" if where else str(e)) from None

    builder.insert(func.ReturnOp(*outputs))
    fn = func.FuncOp(
        "graph",
        (arg_types, [v.type for v in outputs]),
        Region(block),
        arg_attrs=ArrayAttr(arg_attrs),
        res_attrs=ArrayAttr(_result_attrs(graph, output_spec, len(outputs))),
    )
    fn.attributes[DEVICE_ATTR] = StringAttr(_graph_device([*placeholders, *gm.graph.nodes]))
    output_node = next(n for n in graph.nodes if n.op == "output")
    tensors = [v for v in _flatten(output_node.args[0]) if isinstance(v, torch.fx.Node) and isinstance(env.get(v), SSAValue)]
    fn.attributes[RESULT_BASES] = result_bases_attr(_result_bases(tensors))
    fn.attributes[TRACED] = UnitAttr()  # infer-shapes keeps the types torch traced
    from strata.frontend.capture.effects import token_positions

    return ImportedGraph(ModuleOp([fn]), constants, arg_symbols, output_spec, token_positions(placeholders))


def _result_bases(results: list[torch.fx.Node]) -> list[tuple[int, bool]]:
    """For each tensor result, what eager's result is a view of: -1 for a graph input
    (its base, under a chain of view ops, is a placeholder), else the number of its base
    node (results with one base share a number); and whether the result is that base
    itself. View ops are those whose schema says the result aliases its argument
    (`Tensor(a)`); see passes/fusion/fresh_results.py."""
    numbers: dict[torch.fx.Node, int] = {}
    out = []
    for n in results:
        base = _view_base(n)
        number = -1 if base.op in ("placeholder", "get_attr") else numbers.setdefault(base, len(numbers))
        out.append((number, base is n))
    return out


def _view_base(n: torch.fx.Node) -> torch.fx.Node:
    while n.op == "call_function" and n.args and isinstance(n.args[0], torch.fx.Node):
        if n.target is operator.getitem:  # one result of a multi-result op: a view if it is
            n = n.args[0]
            continue
        schema = getattr(n.target, "_schema", None)
        returns = schema.returns if schema is not None else ()
        if not returns or returns[0].alias_info is None or returns[0].alias_info.is_write:
            return n
        n = n.args[0]
    return n


def _graph_device(nodes) -> str:
    """The device type of the graph's tensors ("cpu", "cuda"): meta functions and
    decompositions depend on it. The inputs' first; a graph with no tensor input
    (torch.arange(n, device="cuda")) has it from the tensors it makes."""
    for n in nodes:
        for val in _flatten(n.meta.get("val")):
            if isinstance(val, torch.Tensor):
                return val.device.type
    return "cpu"


def _flatten(v: Any) -> list[Any]:
    if isinstance(v, list | tuple):
        return [x for item in v for x in _flatten(item)]
    return [v]


def _output_spec(builder: Builder, env: dict, v: Any, outputs: list[SSAValue]) -> int | None | sympy.Expr | ItemResult | IntComputation:
    """How the graph returns v; tensors are appended to `outputs`."""
    if v is None:
        return None
    if isinstance(v, torch.fx.Node):
        if isinstance(env.get(v), SSAValue):
            outputs.append(env[v])
            return len(outputs) - 1
        if isinstance(env.get(v), OpaqueArgument):
            return env[v]
        meta = v.meta.get("val")
        if isinstance(meta, torch.SymInt) and free_unbacked_symbols(meta):
            # arithmetic on what item() read: as the graph's operators compute it, not as
            # torch recorded it (frontend/capture/int_expressions.py)
            s = int_expression(v)
            op = aten.build("aten::scalar_tensor", {"s": meta if s is None else s, "dtype": torch.int64}, [TensorType([], "i64")])
            builder.insert(op)
            outputs.append(op.results[0])
            return ItemResult(len(outputs) - 1)
        if isinstance(meta, torch.SymInt):
            expr = from_torch_sympy(meta.node.expr)
            # over sizes alone torch's expression is exact, and cheaper to evaluate
            return (is_signed(expr) and IntComputation.of(v)) or expr
    if isinstance(v, int) and not isinstance(v, bool):
        return sympy.Integer(v)
    raise UnsupportedGraph(f"graph output {v} is neither a tensor, a size nor None")


def _import_call(builder: Builder, env: dict, n: torch.fx.Node) -> None:
    val = n.meta.get("val")
    if n.target is operator.getitem:
        env[n] = env[n.args[0]][n.args[1]]
        return
    from strata.frontend.capture.data_dependent import TARGETS, UnsupportedValue, import_data_dependent

    if n.target in TARGETS:  # item() and torch's checks on unbacked values
        try:
            return import_data_dependent(builder, env, n, _source_of(n))
        except UnsupportedValue as e:
            raise UnsupportedGraph(str(e)) from None
    if isinstance(val, torch.SymInt | torch.SymFloat | torch.SymBool | int | float):
        return  # size arithmetic: consumers read the expression from meta["val"]
    if n.target is torch.ops.higher_order.with_effects:  # an effect token threaded through
        from strata.frontend.capture.effects import import_effect

        return import_effect(builder, env, n, _source_of(n))
    if not isinstance(n.target, torch._ops.OpOverload):
        raise UnsupportedGraph(f"call of {n.target}, which is not an ATen overload")

    schema = _scalar_overload(n) or n.target._schema
    sig = aten.signature_of(schema)
    values = _bind_arguments(schema, n, env)
    for a in sig.args:  # a Python number where a tensor goes: a 0-d tensor
        if a.kind == "Tensor" and isinstance(values.get(a.name), int | float | bool):
            values[a.name] = _scalar_tensor(builder, values[a.name])
    results = _flatten(val) if isinstance(val, list | tuple) else [val]
    result_types = _result_types(sig, results)
    try:
        op = aten.build(sig.qualified_name, values, result_types)
    except Exception as e:
        raise UnsupportedGraph(f"{sig.qualified_name}: {e} ({values})") from e
    op.attributes["strata.source"] = StringAttr(_source_of(n))
    builder.insert(op)
    if isinstance(val, list | tuple):
        if len(op.outs) == len(results):  # absent results have placeholders
            env[n] = [o if r is not None else None for o, r in zip(op.outs, results)]
        else:
            it = iter(op.outs)
            env[n] = [next(it) if r is not None else None for r in results]
    else:
        env[n] = op.outs[0] if op.outs else None  # an op of no result


def _result_types(sig: aten.Signature, results: list[Any]) -> list[TensorType]:
    """The types of an op's results. A result the op does not compute (convolution_backward
    with output_mask [False, True, True] gives None for the input's gradient) is still a
    result of the schema: it gets a placeholder type of no elements, and the eager kernel
    gives None there, which nothing reads."""
    present = [tensor_type_of(r) for r in results if r is not None]
    if len(present) == len(results) or sig.num_results != len(results) or not present:
        return present
    placeholder = TensorType([0], present[0].dtype)
    return [tensor_type_of(r) if r is not None else placeholder for r in results]


def _scalar_overload(n: torch.fx.Node) -> torch.FunctionSchema | None:
    """`mul.Tensor(x, 2)` carries a Python number as a tensor: its `.Scalar` overload
    (same arguments, the number kept as a Scalar) keeps torch's promotion rules."""
    if not any(isinstance(a, int | float | bool) or _symbolic_scalar(a) for a in n.args[1:2]):
        return None
    overload = n.target._overloadname
    alternative = {"Tensor": "Scalar", "Tensor_Tensor": "Tensor_Scalar"}.get(overload)
    packet = n.target._overloadpacket
    if alternative and alternative in packet.overloads():
        return getattr(packet, alternative)._schema
    return None


def _symbolic_scalar(a: Any) -> bool:
    """A node of a SymInt or SymFloat (a size, or a value item() read)."""
    return isinstance(a, torch.fx.Node) and isinstance(a.meta.get("val"), torch.SymInt | torch.SymFloat)


def _scalar_tensor(builder: Builder, value: int | float | bool) -> SSAValue:
    dtype = torch.tensor(value).dtype
    op = aten.build(
        "aten::scalar_tensor", {"s": value, "dtype": dtype}, [TensorType([], dtype_name(dtype))]
    )
    builder.insert(op)
    return op.outs[0]


def _bind_arguments(schema: torch.FunctionSchema, n: torch.fx.Node, env: dict) -> dict[str, Any]:
    """Schema argument name → SSAValue(s) for tensors, Python value otherwise."""
    values: dict[str, Any] = {}
    for i, a in enumerate(schema.arguments):
        if i < len(n.args) and not a.kwarg_only:
            raw = n.args[i]
        elif a.name in n.kwargs:
            raw = n.kwargs[a.name]
        else:
            continue
        values[a.name] = _value(raw, env)
    return values


def _value(raw: Any, env: dict) -> Any:
    if isinstance(raw, torch.fx.Node):
        meta = raw.meta.get("val")
        if isinstance(meta, torch.SymInt | torch.SymFloat | torch.SymBool):
            return meta  # encoded as its sympy expression, over symbols named by sign
        v = env.get(raw)
        if v is not None:
            return v
        raise UnsupportedGraph(f"argument {raw} has no value strata can represent")
    if isinstance(raw, list | tuple):
        return [_value(x, env) for x in raw]
    return raw


def _source_of(n: torch.fx.Node) -> str:
    """The aten overload, and the user's source line where Dynamo recorded it."""
    text = str(n.target)
    trace = n.meta.get("stack_trace")
    if trace:
        lines = [ln.strip() for ln in trace.strip().splitlines() if ln.strip().startswith("File ")]
        if lines:
            text += " @ " + lines[-1].removeprefix("File ")
    return text


def _fetch_attr(gm: torch.fx.GraphModule, target: str) -> Any:
    obj: Any = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


def _name_hint(name: str) -> str | None:
    clean = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return clean if clean and not clean[0].isdigit() else None
