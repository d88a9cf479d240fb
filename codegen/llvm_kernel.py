"""A kernel.func as an LLVM module: loop nests over its domain around scalar code.

The generated code walks the pointwise domain in a loop nest (x0 outermost, the last
dim innermost) and, at each point, runs the body in *stages*: stage 0 is every op that
needs no reduction; stage k > 0 starts with one loop over the reduction domain R that
accumulates each kernel.reduce whose row needs results of stage k - 1 at most, followed
by the scalar ops that need those results. A last loop over R stores the rows. Inside
a loop over R, the row ops that a reduction or a store needs are recomputed from the
loads. A softmax thus becomes: loop (amax), loop (sum of exp(x - max)), loop (store
exp(x - max) / sum).

Two functions are emitted: `<entry>.body(ptr noalias %in0, …, i64 %s0, …)` holds the
loops (its buffers never alias: inputs are only read and outputs are fresh
allocations), and the entry point `<entry>(ptr %buffers, ptr %symbols)` unpacks two
arrays into a call of it, so that Python calls every kernel the same way.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import ExitStack, contextmanager

from llvmlite import ir
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr, IntegerAttr
from xdsl.ir import Attribute, Operation, OpResult, SSAValue

from strata.codegen.errors import CodegenError
from strata.codegen.llvm_dtypes import (
    I64,
    constant,
    convert,
    itemsize,
    load_value,
    memory_type,
    register_type,
    store_value,
)
from strata.codegen.llvm_index import lower_index
from strata.codegen.llvm_reductions import accumulator_dtype, combine, identity
from strata.codegen.llvm_scalar_ops import emit_elementwise
from strata.dialects.kernel import FuncOp, IndexedOp, IndexOp, LoadOp, ReduceOp, StoreOp
from strata.dialects.prim import ConvertElementTypeOp, ElementwiseOp, WhereOp
from strata.dialects.types import scalar_dtype, sym

PTR = ir.PointerType()
Values = MutableMapping[SSAValue, ir.Value]
Env = Mapping[str, ir.Value]


def entry_point(func: FuncOp) -> str:
    """The symbol of the function Python calls (dotted, so never a libm name)."""
    return f"strata.kernel.{func.sym_name.data}"


def build_module(func: FuncOp) -> ir.Module:
    """The LLVM module of `func`, with its entry point."""
    module = ir.Module(name=func.sym_name.data)
    body = _BodyEmitter(func, module).function
    _define_entry_point(func, module, body)
    return module


# ---------------------------------------------------------------- analysis
class BodyPlan:
    """Which values of a kernel body are rows, and in which stage each op runs."""

    def __init__(self, func: FuncOp):
        self.ops = list(func.block.ops)
        self._reduction_vars = {f"r{i}" for i in range(len(func.reduction_dims))}
        self.rows: set[SSAValue] = set()
        stage: dict[Operation, int] = {}
        for op in self.ops:
            before = max((stage[v.op] for v in op.operands if isinstance(v, OpResult)), default=0)
            stage[op] = before + 1 if isinstance(op, ReduceOp) else before
            if self._is_row(op):
                self.rows.update(op.results)
            if isinstance(op, StoreOp) and op.value in self.rows and not self._names_reduction_var(op):
                raise CodegenError(
                    f"kernel.store of a row at index '{op.index.data}', which names no reduction variable"
                )
        self.num_stages = 1 + max(stage.values(), default=0)
        self.reductions: list[list[ReduceOp]] = [[] for _ in range(self.num_stages)]
        self.scalar_ops: list[list[Operation]] = [[] for _ in range(self.num_stages)]
        self.row_stores: list[StoreOp] = []
        for op in self.ops:
            if isinstance(op, ReduceOp):
                self.reductions[stage[op]].append(op)
            elif isinstance(op, StoreOp) and self._names_reduction_var(op):
                self.row_stores.append(op)
            elif not any(r in self.rows for r in op.results):
                self.scalar_ops[stage[op]].append(op)

    def row_ops_for(self, values: list[SSAValue]) -> list[Operation]:
        """The row ops that compute `values`, in program order."""
        needed: set[Operation] = set()
        pending = [v for v in values if v in self.rows]
        while pending:
            op = pending.pop().owner
            if op not in needed:
                needed.add(op)
                pending.extend(v for v in op.operands if v in self.rows)
        return [op for op in self.ops if op in needed]

    def _is_row(self, op: Operation) -> bool:
        if isinstance(op, (ReduceOp, StoreOp)):
            return False
        return self._names_reduction_var(op) or any(v in self.rows for v in op.operands)

    def _names_reduction_var(self, op: Operation) -> bool:
        return isinstance(op, IndexedOp) and any(s.name in self._reduction_vars for s in op.index_expr.free_symbols)


# ---------------------------------------------------------------- code
@contextmanager
def counted_loop(b: ir.IRBuilder, count: ir.Value, name: str) -> Iterator[ir.Value]:
    """`for name in range(count)`: yields the i64 counter with `b` in the loop body,
    and leaves `b` after the loop."""
    before = b.block
    header = b.append_basic_block(f"{name}.header")
    body = b.append_basic_block(f"{name}.body")
    after = b.append_basic_block(f"{name}.end")
    b.branch(header)
    b.position_at_end(header)
    i = b.phi(I64, name)
    i.add_incoming(ir.Constant(I64, 0), before)
    b.cbranch(b.icmp_signed("<", i, count), body, after)
    b.position_at_end(body)
    yield i
    i.add_incoming(b.add(i, ir.Constant(I64, 1), flags=("nuw", "nsw")), b.block)
    b.branch(header)
    b.position_at_end(after)


class _BodyEmitter:
    """Emits `<entry>.body`: the loops and the scalar code of one kernel.func."""

    def __init__(self, func: FuncOp, module: ir.Module):
        self.func = func
        self.plan = BodyPlan(func)
        self.function = self._declare(module)
        self.buffers = dict(zip(func.block.args, self.function.args))
        symbols = dict(zip(func.symbol_names, self.function.args[len(func.block.args) :]))

        # Accumulators are allocas in the entry block, which SROA turns into registers.
        self.allocas = ir.IRBuilder(self.function.append_basic_block("entry"))
        start = self.function.append_basic_block("start")
        self.allocas.position_before(self.allocas.branch(start))
        b = ir.IRBuilder(start)
        self.reduction_sizes = [lower_index(b, sym(d), symbols) for d in func.reduction_dims]
        pointwise_sizes = [lower_index(b, sym(d), symbols) for d in func.pointwise_dims]
        with ExitStack() as loops:
            xs = {f"x{i}": loops.enter_context(counted_loop(b, n, f"x{i}")) for i, n in enumerate(pointwise_sizes)}
            self._emit_point(b, {**symbols, **xs})
        b.ret_void()

    def _declare(self, module: ir.Module) -> ir.Function:
        func = self.func
        buffers, symbols = func.block.args, func.symbol_names
        fnty = ir.FunctionType(ir.VoidType(), [PTR] * len(buffers) + [I64] * len(symbols))
        fn = ir.Function(module, fnty, entry_point(func) + ".body")
        fn.linkage = "internal"
        fn.attributes.add("alwaysinline")
        fn.attributes.add("nounwind")
        for arg, value in zip(fn.args, buffers):
            arg.name = value.name_hint or "buffer"
            arg.add_attribute("noalias")
        for arg, name in zip(fn.args[len(buffers) :], symbols):
            arg.name = name
        return fn

    def _emit_point(self, b: ir.IRBuilder, env: Env) -> None:
        """The body at one point of the pointwise domain, stage by stage."""
        values: Values = {}
        for stage in range(self.plan.num_stages):
            if stage:
                self._emit_reduction_loop(b, env, values, self.plan.reductions[stage])
            for op in self.plan.scalar_ops[stage]:
                self._emit_op(b, op, env, values)
        if self.plan.row_stores:
            with self._reduction_loops(b, env) as row_env:
                rows = ChainMap({}, values)
                for op in self.plan.row_ops_for([s.value for s in self.plan.row_stores]):
                    self._emit_op(b, op, row_env, rows)
                for store in self.plan.row_stores:
                    self._emit_op(b, store, row_env, rows)

    @contextmanager
    def _reduction_loops(self, b: ir.IRBuilder, env: Env) -> Iterator[Env]:
        """The loop nest over R; yields `env` extended with r0, r1, …"""
        with ExitStack() as loops:
            rs = {
                f"r{i}": loops.enter_context(counted_loop(b, n, f"r{i}"))
                for i, n in enumerate(self.reduction_sizes)
            }
            yield {**env, **rs}

    def _emit_reduction_loop(self, b: ir.IRBuilder, env: Env, values: Values, reductions: list[ReduceOp]) -> None:
        """One loop over R accumulating `reductions`; their results join `values`."""
        accumulators = [_Accumulator(red, self.allocas) for red in reductions]
        for acc in accumulators:
            acc.reset(b)
        with self._reduction_loops(b, env) as row_env:
            rows = ChainMap({}, values)
            for op in self.plan.row_ops_for([red.value for red in reductions]):
                self._emit_op(b, op, row_env, rows)
            for acc in accumulators:
                acc.add(b, rows[acc.op.value])
        for acc in accumulators:
            values[acc.op.result] = acc.result(b)

    def _emit_op(self, b: ir.IRBuilder, op: Operation, env: Env, values: Values) -> None:
        if isinstance(op, LoadOp):
            dtype = _dtype(op, op.result.type)
            loaded = b.load(self._address(b, op, env, dtype), typ=memory_type(dtype), align=itemsize(dtype))
            values[op.result] = load_value(b, loaded, dtype)
        elif isinstance(op, StoreOp):
            dtype = _dtype(op, op.value.type)
            stored = store_value(b, values[op.value], dtype)
            b.store(stored, self._address(b, op, env, dtype), align=itemsize(dtype))
        elif isinstance(op, IndexOp):
            index = lower_index(b, op.index_expr, env)
            values[op.result] = convert(b, index, "i64", _dtype(op, op.result.type))
        elif isinstance(op, arith.ConstantOp):
            values[op.result] = _constant(op)
        elif isinstance(op, ElementwiseOp):
            args = [values[a] for a in op.args]
            name = op.name.removeprefix("prim.")
            values[op.result] = emit_elementwise(b, name, _dtype(op, op.args[0].type), args)
        elif isinstance(op, WhereOp):
            values[op.result] = b.select(values[op.cond], values[op.a], values[op.b])
        elif isinstance(op, ConvertElementTypeOp):
            src = _dtype(op, op.x.type)
            values[op.result] = convert(b, values[op.x], src, _dtype(op, op.result.type))
        else:
            raise CodegenError(f"{op.name} is not supported by the LLVM CPU code generator")

    def _address(self, b: ir.IRBuilder, op: LoadOp | StoreOp, env: Env, dtype: str) -> ir.Value:
        index = lower_index(b, op.index_expr, env)
        return b.gep(self.buffers[op.buffer], [index], inbounds=True, source_etype=memory_type(dtype))


class _Accumulator:
    """The running value of one kernel.reduce, in a stack slot of its accumulator dtype."""

    def __init__(self, op: ReduceOp, allocas: ir.IRBuilder):
        self.op = op
        self.kind = op.kind.data
        self.dtype = _dtype(op, op.result.type)
        self.acc_dtype = accumulator_dtype(self.kind, self.dtype)
        self.slot = allocas.alloca(register_type(self.acc_dtype))

    def reset(self, b: ir.IRBuilder) -> None:
        b.store(identity(self.kind, self.acc_dtype), self.slot)

    def add(self, b: ir.IRBuilder, element: ir.Value) -> None:
        element = convert(b, element, self.dtype, self.acc_dtype)
        b.store(combine(b, self.kind, self.acc_dtype, b.load(self.slot), element), self.slot)

    def result(self, b: ir.IRBuilder) -> ir.Value:
        return convert(b, b.load(self.slot), self.acc_dtype, self.dtype)


def _dtype(op: Operation, t: Attribute) -> str:
    """The dtype name of a scalar type that `op` handles."""
    try:
        return scalar_dtype(t)
    except ValueError:
        raise CodegenError(f"{op.name} on {t} is not supported by the LLVM CPU code generator") from None


def _constant(op: arith.ConstantOp) -> ir.Constant:
    attr = op.value
    if not isinstance(attr, (FloatAttr, IntegerAttr)):
        raise CodegenError(f"arith.constant {attr} is not supported by the LLVM CPU code generator (scalars only)")
    return constant(_dtype(op, op.result.type), attr.value.data)


def _define_entry_point(func: FuncOp, module: ir.Module, body: ir.Function) -> None:
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [PTR, PTR]), entry_point(func))
    fn.attributes.add("nounwind")
    buffers, symbols = fn.args
    buffers.name, symbols.name = "buffers", "symbols"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    args = [_element(b, buffers, i, PTR) for i in range(len(func.block.args))]
    args += [_element(b, symbols, i, I64) for i in range(len(func.symbol_names))]
    b.call(body, args)
    b.ret_void()


def _element(b: ir.IRBuilder, array: ir.Value, i: int, t: ir.Type) -> ir.Value:
    return b.load(b.gep(array, [ir.Constant(I64, i)], source_etype=t), typ=t)
