"""Lowering one planned kernel to a `kernel.func`.

Each node of the kernel is computed at the index its domain gives it, by walking its
inline producers down to realized values, which become `kernel.load`s of input buffers.
Scalars of f16 and bf16 are computed in f32 (as eager's kernels do); a conversion to a
16-bit type rounds by converting there and back, except the rounding that only ends an
elementwise op's f32 computation (marked prim.OPMATH_ROUNDING by the decompositions): a
value that stays inside the kernel stays in f32 and is rounded where it is stored, as
TorchInductor does (one rounding for `x + a / b * v` where eager, op by op, makes
three). `emulate_precision_casts` keeps every rounding, bit for bit eager's. Walks are
memoized per (value, index), so a value read twice at one index is computed once.
`index_bounds_checks` (on by default): a user's index is checked in the kernel, as
eager checks it (passes/fusion/gather.py); off, it is only wrapped.

Each kernel lists its `sources`: the aten ops it computes, each with the user's
file:line where Dynamo recorded it; both code generators print them atop the kernel.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import sympy
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IntegerAttr, IntegerType
from xdsl.ir import Attribute, Block, Operation, SSAValue

from strata.dialects import kernel as kd
from strata.dialects import prim
from strata.dialects.attributes import CONVOLUTION_ATTR, DOT_ATTR
from strata.dialects.types import Dim, TensorType, is_float, scalar_type, sym
from strata.dialects.prim_indexing import CheckIndexOp, GatherOp, ScatterOp
from strata.dialects.prim_random import PHILOX_OPS
from strata.passes.fusion.contraction import Contractions
from strata.passes.fusion.gather import check_index_at, gather_at, load_op
from strata.passes.fusion.random import philox_at
from strata.passes.fusion.indexing import Index, contiguous_strides, empty_row_guard, offset
from strata.passes.fusion.plan import Kernel, Plan, dims_of, is_reduction, node_domain, node_index, operand_indices
from strata.passes.provenance import kernel_source_text

REDUCED_PRECISION = ("f16", "bf16")


def compute_dtype(dtype: str) -> str:
    return "f32" if dtype in REDUCED_PRECISION else dtype


def dtype_of(v: SSAValue) -> str:
    t = v.type
    assert isinstance(t, TensorType)
    return t.dtype


class KernelBuilder:
    """Builds the body of one kernel.func from its planned nodes."""

    def __init__(self, k: Kernel, plan: Plan, strides_of: Callable[[SSAValue], Sequence[Dim]], stored: set[SSAValue],
                 emulate_precision_casts: bool = False, index_bounds_checks: bool = True):
        self.k = k
        self.emulate_precision_casts = emulate_precision_casts
        self.index_bounds_checks = index_bounds_checks
        self.plan = plan
        self.strides_of = strides_of
        self.stored = stored
        self.block = Block()
        self.inputs: dict[SSAValue, SSAValue] = {}  # tensor value -> buffer argument
        self.outputs: list[SSAValue] = [v for v in k.nodes if v in stored]
        self.output_args: dict[SSAValue, SSAValue] = {}
        self.memo: dict[tuple[SSAValue, tuple[str, ...]], SSAValue] = {}
        self.node_scalars: dict[SSAValue, SSAValue] = {}
        self.computed: dict[Operation, None] = {}  # the graph's ops this kernel computes, in order
        self.contractions = Contractions(enabled=not emulate_precision_casts)

    # ------------------------------------------------------------ buffers
    def _buffer_type(self, v: SSAValue) -> kd.BufferType:
        return kd.BufferType(scalar_type(dtype_of(v)))

    def input_buffer(self, v: SSAValue) -> SSAValue:
        if v not in self.inputs:
            self.inputs[v] = self.block.insert_arg(self._buffer_type(v), len(self.inputs))
        return self.inputs[v]

    # ------------------------------------------------------------ emission
    def add(self, op: Operation) -> SSAValue:
        self.block.add_op(op)
        return op.results[0] if op.results else None

    def convert(self, x: SSAValue, dtype: str) -> SSAValue:
        if x.type == scalar_type(dtype):
            return x
        return self.add(prim.ConvertElementTypeOp(x, dtype))

    def constant(self, value, dtype: str) -> SSAValue:
        if dtype == "u8":  # arith.constant has no unsigned types
            return self.convert(self.constant(int(value), "i64"), "u8")
        t = scalar_type(dtype)
        if is_float(dtype):
            attr = FloatAttr(float(value), t)
        else:
            attr = IntegerAttr(int(bool(value)) if dtype == "i1" else int(value), t)
        return self.add(arith.ConstantOp(attr))

    def value_at(self, v: SSAValue, index: Index) -> SSAValue:
        """The scalar (in its compute dtype) of tensor value v at `index`."""
        key = (v, tuple(sympy.sstr(i) for i in index))
        if key in self.memo:
            return self.memo[key]
        if v in self.node_scalars and self.plan.kernel_of.get(v) is self.k:
            result = self.node_scalars[v]
        elif v in self.plan.realized or not isinstance(v.owner, Operation):
            result = self.load(v, index)
        else:
            result = self.inline(v.owner, index)
        self.memo[key] = result
        return result

    def load(self, v: SSAValue, index: Index) -> SSAValue:
        dims, strides = dims_of(v), self.strides_of(v)
        if any(d == 0 for d in dims):
            # No element to read, and no point that runs reads one: the row (or the
            # kernel's domain) is empty too. A load here would read outside the buffer
            # where views or strides of 0 left the loop variables out of its index.
            return self.constant(0, compute_dtype(dtype_of(v)))
        buf = self.input_buffer(v)
        idx = offset(index, dims, strides) + empty_row_guard(index, dims, strides)
        x = self.add(load_op(self, buf, idx))  # data-dependent under a gather
        return self.convert(x, compute_dtype(dtype_of(v)))

    def inline(self, op: Operation, index: Index) -> SSAValue:
        self.note_source(op)
        if isinstance(op, prim.FullOp):
            return self.constant(op.scalar, compute_dtype(op.dtype.data))
        if isinstance(op, prim.IotaOp):
            e = op.first + op.step.value.data * index[0]
            return self.convert(self.add(kd.IndexOp(e)), compute_dtype(op.dtype.data))
        if isinstance(op, GatherOp):
            return gather_at(self, op, index)
        if isinstance(op, PHILOX_OPS):
            return philox_at(self, op, index)
        args = [self.value_at(x, i) for x, i in zip(op.operands, operand_indices(op, index))]
        if isinstance(op, prim.VIEW_OPS):
            return args[0]
        out_dtype = dtype_of(op.results[0])
        if isinstance(op, prim.ConvertElementTypeOp):
            opmath = (prim.OPMATH_ROUNDING in op.attributes and not self.emulate_precision_casts
                      and op.results[0] not in self.plan.rounded)
            if opmath and args[0].type == scalar_type(compute_dtype(out_dtype)):
                return args[0]  # rounded where stored (emit_node)
            x = self.convert(args[0], out_dtype)
            return self.convert(x, compute_dtype(out_dtype))
        if isinstance(op, prim.WhereOp):
            return self.add(prim.WhereOp(*args))
        if isinstance(op, CheckIndexOp):
            return check_index_at(self, op, *args)
        assert isinstance(op, prim.ElementwiseOp), op.name
        result = self.add(type(op)(*args, result_type=scalar_type(compute_dtype(out_dtype))))
        self.contractions.built(op, result)
        return result

    def note_source(self, op: Operation) -> None:
        """Notes that this kernel computes `op` (its aten op: `sources`)."""
        self.computed[op] = None

    @property
    def sources(self) -> list[str]:
        """The aten ops this kernel computes, with the user's file:line where Dynamo
        recorded it (`aten.gelu.default @ model.py:12 in forward`), in the order the
        user's program runs them (the order the kernel met them in depends on which
        values it computes where it reads them)."""
        last = len(self.plan.order)
        ordered = sorted(self.computed, key=lambda op: self.plan.order.get(op, last))
        return list(dict.fromkeys(kernel_source_text(op) for op in ordered))

    # ------------------------------------------------------------ nodes
    def node_index(self, v: SSAValue) -> Index:
        index = node_index(self.k.domain, v)
        assert index is not None
        return index

    def emit_node(self, v: SSAValue) -> None:
        op = v.owner
        self.note_source(op)
        if is_reduction(op):
            row = self.value_at(op.x, self.k.domain.reduction_index(node_domain(v))[0])
            scalar = self.add(kd.ReduceOp(row, op.KIND))
            for attr in (DOT_ATTR, CONVOLUTION_ATTR):  # a matrix product's sum (passes/matmul_to_dot.py)
                if attr in op.attributes:
                    scalar.owner.attributes[attr] = op.attributes[attr]
            self.contractions.reduced(op, row, scalar.owner)
        else:
            scalar = self.inline(op, self.node_index(v))
        self.node_scalars[v] = scalar
        if v in self.stored:
            out = self.output_args[v]
            stored = self.convert(scalar, dtype_of(v))
            dims = dims_of(v)
            self.add(kd.StoreOp(stored, out, offset(self.node_index(v), dims, self.strides_of(v))))

    def emit_scatter(self, op: ScatterOp, index: Index) -> None:
        """Stores src's element at `index` into the scatter's result, at its position
        along `dim` loaded from the index (passes/fusion/scatter_stores.py)."""
        self.note_source(op)
        value = self.convert(self.value_at(op.src, index), dtype_of(op.results[0]))
        position = self.value_at(op.index, index)
        if position.type != scalar_type("i64"):
            position = self.add(prim.ConvertElementTypeOp(position, "i64"))
        target = list(index)
        target[op.dim.value.data] = sympy.Symbol("v0", integer=True)
        result = op.results[0]
        expr = offset(tuple(target), dims_of(result), self.strides_of(result))
        self.add(kd.StoreOp(value, self.output_args[result], expr, [position]))

    def build(self, name: str) -> kd.FuncOp:
        for v in self.outputs:
            self.output_args[v] = self.block.insert_arg(self._buffer_type(v), len(self.block.args))
        for op, _ in self.k.scatters:
            self.input_buffer(op.x)  # the operand its output updates (never read here)
        for op, _ in self.k.scatters:
            v = op.results[0]
            self.output_args[v] = self.block.insert_arg(self._buffer_type(v), len(self.block.args))
        for v in self.k.nodes:
            self.emit_node(v)
        for op, index in self.k.scatters:
            self.emit_scatter(op, index)
        d = self.k.domain
        symbols = sorted(_free_symbols(self.block, d), key=str)
        func = kd.FuncOp(
            name,
            [],
            len(self.inputs),
            d.pointwise_dims,
            d.reduction_dims,
            symbols,
            self.sources,
        )
        # Move the body built here into the kernel.func's region.
        func.body.detach_block(0)
        func.body.add_block(self.block)
        return func


def _free_symbols(block: Block, d) -> set[str]:
    names: set[str] = set()
    for dim in (*d.pointwise_dims, *d.reduction_dims):
        names |= {s.name for s in sym(dim).free_symbols}
    for op in block.ops:
        if isinstance(op, kd.IndexedOp):
            names |= {s.name for s in op.index_expr.free_symbols}
    return {n for n in names if not (n[0] in "xrv" and n[1:].isdigit())}
