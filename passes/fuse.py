"""fuse: groups prim ops into kernels and lowers the graph to the kernel dialect.

`func.func @graph` (prim ops, perhaps some aten ops left over) becomes a
`kernel.program @graph` of launches, library calls and eager fallbacks, beside one
`kernel.func` per kernel. passes/fusion/plan.py decides what is realized and which
kernel computes it; passes/fusion/lower.py writes each kernel's body. With
STRATA_LOGS=fusion each kernel formed is logged with the bytes it saves (estimates
from passes/fusion/traffic.py).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ArrayAttr, IntegerAttr, ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter

from strata.dialects import kernel as kd
from strata.dialects.aten import AtenOp
from strata.dialects.prim import dims_attr
from strata.dialects.prim import dims_of as prim_dims_of
from strata.dialects.prim_convolution import ConvolutionOp
from strata.dialects.types import TensorType
from strata.passes.fusion.bias import add_biases_in_kernels
from strata.passes.fusion.checked_indices import unchecked_indices
from strata.passes.fusion.decisions import domain_text, info_enabled, log
from strata.passes.fusion.indexing import contiguous_strides
from strata.dialects.attributes import (
    CHANNELS_LAST,
    LAYOUT_ATTR,
    RESULT_STRIDES_ATTR,
    SEQUENCE_MAJOR,
    STRIDES_ATTR,
    UPDATES_ATTR,
)
from strata.passes.fusion.layouts import (
    attention_layouts,
    choose_layouts,
    copy_convolution_inputs,
    eager_result_strides,
    on_cpu,
    result_layouts,
)
from strata.passes.fusion.fresh_results import copy_fresh_results
from strata.passes.fusion.lower import KernelBuilder
from strata.passes.fusion.scatter_stores import fold_scatters
from strata.passes.fusion.plan import (
    VIEW_OPS,
    Kernel,
    Plan,
    build_plan,
    dims_of,
    node_reads,
    reads,
)
from strata.passes.fusion.traffic import graph_bytes, human_bytes, op_bytes, program_bytes, values_bytes


@dataclass(frozen=True)
class FusePass(ModulePass):
    """`emulate_precision_casts`: round every f16/bf16 intermediate inside a kernel as
    eager does op by op (passes/fusion/lower.py); off, they stay in f32.
    `index_bounds_checks`: kernels check the indices a user gave (prim.check_index) and
    the launch raises where eager would; off, an index out of range reads the nearest
    element of its dim."""

    name = "fuse"
    emulate_precision_casts: bool = False
    index_bounds_checks: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for fn in [o for o in op.ops if isinstance(o, func.FuncOp)]:
            add_biases_in_kernels(fn)
            copy_convolution_inputs(fn)
            copy_fresh_results(fn)
            new_ops = lower_graph(fn, self.emulate_precision_casts, self.index_bounds_checks)
            Rewriter.replace_op(fn, new_ops)


def arg_strides(fn: func.FuncOp) -> dict[SSAValue, tuple]:
    out = {}
    attrs = fn.arg_attrs.data if fn.arg_attrs is not None else ()
    for arg, d in zip(fn.body.block.args, attrs):
        strides = d.data.get("strata.strides")
        if isinstance(strides, ArrayAttr):
            out[arg] = prim_dims_of(strides)
    return out


def arg_symbols(fn: func.FuncOp) -> list[str]:
    attrs = fn.arg_attrs.data if fn.arg_attrs is not None else ()
    out = []
    for arg, d in zip(fn.body.block.args, attrs):
        s = d.data.get("strata.symbol")
        out.append(s.data if isinstance(s, StringAttr) else "")
    out += [""] * (len(fn.body.block.args) - len(out))
    return out


def lower_graph(fn: func.FuncOp, emulate_precision_casts: bool = False, index_bounds_checks: bool = True) -> list[Operation]:
    block = fn.body.block
    ret = block.last_op
    assert isinstance(ret, func.ReturnOp), "func.func @graph must end in func.return"
    ops = [o for o in block.ops if o is not ret]
    outputs = list(ret.arguments)
    # Indices a kernel would check only in part run through a check of their own: its
    # result is stored like an output (and read by the gathers), never returned.
    checks = unchecked_indices(ops, outputs) if index_bounds_checks else []
    plan = build_plan(ops, outputs + checks)
    if not on_cpu(fn):
        fold_scatters(plan)
    stored = _stored_nodes(plan, ops, outputs + checks)
    given_strides = arg_strides(fn)
    wanted = eager_result_strides(fn, outputs)
    returned_layouts = result_layouts(outputs, wanted, plan, stored)
    layouts = choose_layouts(ops, outputs, plan, stored, on_cpu(fn), returned_layouts)  # returned ones included
    if not on_cpu(fn):
        layouts.update(attention_layouts(ops, outputs, plan))  # never a returned value
    for k in plan.schedule:  # a scatter stored by a kernel writes in its destination's layout
        for op, _ in k.scatters if isinstance(k, Kernel) else ():
            given = given_strides.get(op.x)
            if given is not None and list(given) != list(contiguous_strides(dims_of(op.x))):
                layouts[op.results[0]] = given

    def strides_of(v: SSAValue):
        return layouts.get(v) or given_strides.get(v) or contiguous_strides(dims_of(v))

    program = kd.ProgramOp(
        fn.sym_name.data,
        [a.type for a in block.args],
        [v.type for v in outputs],
        arg_symbols(fn),
        [strides_of(a) if isinstance(a.type, TensorType) else () for a in block.args],
    )
    env: dict[SSAValue, SSAValue] = dict(zip(block.args, program.block.args))
    kernels: list[Operation] = []
    report = info_enabled()
    for item in plan.schedule:
        if isinstance(item, Kernel):
            builder = KernelBuilder(item, plan, strides_of, stored, emulate_precision_casts, index_bounds_checks)
            if not builder.outputs and not item.scatters:
                continue  # it would store nothing (values of dead ops): nothing to launch
            name = f"k{len(kernels)}"
            kernels.append(builder.build(name))
            if report:
                _log_kernel(name, item, builder)
            outs = builder.outputs + [op.results[0] for op, _ in item.scatters]
            launch = kd.LaunchOp(name, [env[v] for v in builder.inputs], [v.type for v in outs])
            if any(v in layouts for v in outs):
                launch.attributes[STRIDES_ATTR] = ArrayAttr([dims_attr(strides_of(v)) for v in outs])
            if item.scatters:
                inputs = list(builder.inputs)
                updates = [-1] * len(builder.outputs) + [inputs.index(op.x) for op, _ in item.scatters]
                launch.attributes[UPDATES_ATTR] = ArrayAttr([IntegerAttr(j, 64) for j in updates])
            program.block.add_op(launch)
            env.update(zip(outs, launch.outs))
        else:
            operands = [_program_value(v, env, program) for v in item.operands]
            clone = item.clone(value_mapper=dict(zip(item.operands, operands)))
            if item.results and item.results[0] in layouts:
                kind = CHANNELS_LAST if isinstance(item, ConvolutionOp) else SEQUENCE_MAJOR
                clone.attributes[LAYOUT_ATTR] = StringAttr(kind)
            program.block.add_op(clone)
            env.update(zip(item.results, clone.results))
    results = [_program_value(v, env, program) for v in outputs]
    program.block.add_op(kd.ReturnOp(results))
    if any(w is not None for w in wanted):
        program.attributes[RESULT_STRIDES_ATTR] = ArrayAttr([dims_attr(w or ()) for w in wanted])
    if report:
        _log_summary(fn, ops, plan, program)
    return [*kernels, program]


def _log_kernel(name: str, k: Kernel, builder: KernelBuilder) -> None:
    """`k0: prim.amax, prim.sum, prim.div over [4] x reduce [6]: moves 192 B, unfused
    1.1 KiB (saves 960 B); from aten._softmax.default @ f.py:3 in f`."""
    fused = values_bytes(builder.inputs) + values_bytes(builder.outputs)
    unfused = sum((op_bytes(op) for op in builder.computed), sympy.Integer(0))
    nodes = [v.owner.name for v in k.nodes]
    kept = len(k.nodes) - len(builder.outputs)
    shown = ", ".join(nodes[:6]) + (f", +{len(nodes) - 6}" if len(nodes) > 6 else "")
    log.info(
        "%s: %s over %s, %d prim ops fused, %d of %d nodes kept in registers: moves %s, unfused %s (saves %s); from %s",
        name,
        shown,
        domain_text(k.domain),
        len(builder.computed),
        kept,
        len(k.nodes),
        human_bytes(fused),
        human_bytes(unfused),
        human_bytes(sympy.simplify(unfused - fused)),
        ", ".join(builder.sources),
    )


def _log_summary(fn: func.FuncOp, ops: list[Operation], plan: Plan, program: kd.ProgramOp) -> None:
    kernels = sum(isinstance(i, Kernel) for i in plan.schedule)
    externs = [i for i in plan.schedule if isinstance(i, Operation)]
    eager = sum(isinstance(o, AtenOp) for o in externs)
    unfused, fused = graph_bytes(fn), program_bytes(program)
    log.info(
        "%d ops -> %d kernels, %d library calls, %d eager fallbacks; estimated traffic %s, unfused %s",
        len(ops),
        kernels,
        len(externs) - eager,
        eager,
        human_bytes(fused),
        human_bytes(unfused),
    )


def _program_value(v: SSAValue, env: dict[SSAValue, SSAValue], program: kd.ProgramOp) -> SSAValue:
    """v in the program: a realized value, or views of one (applied by the runtime)."""
    if v in env:
        return env[v]
    op = v.owner
    if not isinstance(op, VIEW_OPS):
        raise AssertionError(f"fuse: {op.name if isinstance(op, Operation) else v} was not realized")
    base = _program_value(op.operands[0], env, program)
    clone = op.clone(value_mapper={op.operands[0]: base})
    program.block.add_op(clone)
    env[v] = clone.results[0]
    return env[v]


def _stored_nodes(plan: Plan, ops: list[Operation], outputs: list[SSAValue]) -> set[SSAValue]:
    """Nodes that something outside their own kernel reads."""
    stored: set[SSAValue] = set()
    for v in outputs:
        stored.add(plan.source_of(v))
    for op in plan.schedule:
        if isinstance(op, Operation):
            stored.update(plan.source_of(v) for v in op.operands)
    for v, k in plan.kernel_of.items():
        for value, _ in node_reads(v, k.domain, plan.realized):
            if value in plan.kernel_of and plan.kernel_of[value] is not k:
                stored.add(value)
    for k in plan.schedule:  # what a scatter stored by a kernel reads from others
        for op, index in k.scatters if isinstance(k, Kernel) else ():
            leaves = []
            reads(op.src, index, plan.realized, leaves)
            reads(op.index, index, plan.realized, leaves)
            stored.update(value for value, _ in leaves if plan.kernel_of.get(value) not in (None, k))
    return {v for v in stored if v in plan.kernel_of}
