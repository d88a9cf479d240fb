"""prim.check_index in CPU kernels: a user's index checked where the kernel reads it,
and the call raising IndexOutOfBounds afterwards, as eager raises.

Each check op of a kernel.func is a *site*, numbered in body order. In the loops a site
costs two integer ops a vector, no more than the clamp of an unchecked gather, and
nothing calls out. Its index (wrapped where it may count from the end) is read as
*unsigned*, so that a negative one is a huge number: the op's value is the unsigned
minimum of the index and size - 1 (the load that follows stays inside the tensor
whatever the index held), and a running unsigned maximum of the indices, an alloca per
site that SROA keeps in a register, remembers the largest. At the end of a chunk (the
share of work items one call of `<entry>.impl` runs, one thread's) a site whose
maximum is not below the size writes it and the size into two i64 slots past the shape
symbols in the symbols array (`atomicrmw`: the threads of a parallel kernel end their
chunks at once), so the entry point's signature stays the same. Python passes that
array with the slots zeroed and, once the call returns, raises for the first site that
wrote (llvm_cpu.py); an index out of range is never below the size, which is never 0
there (a call where it would be raises before the launch), so a written slot is never 0.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import sympy
from llvmlite import ir
from xdsl.dialects import arith

from strata.codegen.llvm_lanes import I64, call_intrinsic, intrinsic, lanes_of, splat
from strata.dialects import kernel as kd
from strata.dialects.kernel import FuncOp, parse_index
from strata.dialects.kernel_text import Kernel, KernelText, as_func
from strata.dialects.prim_indexing import CheckIndexOp, IndexOutOfBounds
from strata.dialects.types import sym
from strata.runtime.index_values import evaluate

SLOTS_PER_SITE = 2  # the largest out-of-range index (0: none), the size


def check_ops(func: FuncOp) -> list[CheckIndexOp]:
    return [op for op in func.block.ops if isinstance(op, CheckIndexOp)]


def site_count(kernel: Kernel) -> int:
    """How many check sites a kernel has, without parsing a KernelText."""
    if isinstance(kernel, KernelText):
        return kernel.text.count(f"{CheckIndexOp.name} ")
    return len(check_ops(kernel))


class CheckSites:
    """The accumulators of one `<entry>.impl`: `check` emits a site's check in the loops,
    `report` the writes to the slots at the end of the chunk."""

    def __init__(self, func: FuncOp, allocas: ir.IRBuilder, lanes: int | None):
        self.sites = {op: k for k, op in enumerate(check_ops(func))}
        self.lanes = lanes
        acc_type = ir.VectorType(I64, lanes) if lanes else I64
        self.largest = {}
        self.sizes = {}
        for op in self.sites:
            self.largest[op] = allocas.alloca(acc_type)
            allocas.store(ir.Constant(acc_type, 0), self.largest[op])
            self.sizes[op] = allocas.alloca(I64)
            allocas.store(ir.Constant(I64, 1), self.sizes[op])  # a site that never ran: 0 < 1

    def check(self, b: ir.IRBuilder, op: CheckIndexOp, index: ir.Value, size: ir.Value, mask: ir.Value | None) -> ir.Value:
        """The index op names, wrapped into [0, size) (size - 1 where out of range), its
        check accumulated. `mask`: the lanes that are points of the domain."""
        if lanes_of(size):  # one size for every point: lane 0's
            size = b.extract_element(size, ir.Constant(ir.IntType(32), 0))
        n = splat(b, size, lanes_of(index)) if lanes_of(index) else size
        if op.wraps_negative:
            index = b.select(b.icmp_signed("<", index, ir.Constant(index.type, 0)), b.add(index, n), index)
        seen = index if mask is None or not lanes_of(index) else b.select(mask, index, ir.Constant(index.type, 0))
        largest = self.largest[op]
        b.store(call_intrinsic(b, "umax", [b.load(largest), splat(b, seen, self.lanes) if self.lanes else seen]), largest)
        b.store(size, self.sizes[op])
        return call_intrinsic(b, "umin", [index, b.sub(n, ir.Constant(index.type, 1))])

    def report(self, b: ir.IRBuilder, errors: ir.Value) -> None:
        """At the end of the chunk: each site's largest index, where it is out of range,
        and its size, into its slots of `errors`."""
        for op, k in self.sites.items():
            largest = b.load(self.largest[op])
            if self.lanes:
                reduce = intrinsic(b.module, "vector.reduce.umax", I64, [largest.type], [largest.type])
                largest = b.call(reduce, [largest])
            size = b.load(self.sizes[op])
            with b.if_then(b.icmp_unsigned(">=", largest, size), likely=False):
                slot = b.gep(errors, [ir.Constant(I64, SLOTS_PER_SITE * k)], inbounds=True, source_etype=I64)
                b.atomic_rmw("umax", slot, largest, "monotonic")
                size_slot = b.gep(errors, [ir.Constant(I64, SLOTS_PER_SITE * k + 1)], inbounds=True, source_etype=I64)
                b.atomic_rmw("xchg", size_slot, size, "monotonic")


def _uniform_size(op: CheckIndexOp) -> sympy.Expr | None:
    """The size a check compares with, where it is one value for the whole kernel."""
    owner = op.size.owner
    if isinstance(owner, arith.ConstantOp):
        return sympy.Integer(owner.value.value.data)
    if isinstance(owner, kd.IndexOp):
        size = parse_index(owner.index.data)
        return size if not any(re.fullmatch(r"[xr]\d+", s.name) for s in size.free_symbols) else None
    return None


def error_slots(b: ir.IRBuilder, symbols: ir.Value, func: FuncOp) -> ir.Value:
    """Where a chunk's sites write: the symbols array, past the shape symbols."""
    return b.gep(symbols, [ir.Constant(I64, len(func.symbol_names))], inbounds=True, source_etype=I64)


class OutOfBoundsReport:
    """The Python side: the slots a call of a kernel with `sites` check sites needs past
    its `symbols` shape symbols, and the error a call that wrote them raises.

    A dim whose size is symbolic may be empty at a call: then every index into it is
    out of range, and the kernel's loads would read an empty tensor (a null pointer).
    `raise_if_empty_dim` raises before such a launch."""

    def __init__(self, kernel: Kernel, symbols: int, sites: int):
        self.kernel = kernel
        self.first = symbols
        self.sites = sites
        func = as_func(kernel)
        self._symbol_names = list(func.symbol_names)
        self._domain = [sym(d) for d in (*func.pointwise_dims, *func.reduction_dims)]
        self.may_be_empty = [(k, size) for k, op in enumerate(check_ops(func))
                             if (size := _uniform_size(op)) is not None and size.is_positive is not True]

    def raise_if_empty_dim(self, symbols: Sequence[int]) -> None:
        env = dict(zip(self._symbol_names, symbols))
        for k, size in self.may_be_empty:
            if evaluate(size, env) == 0 and all(evaluate(d, env) > 0 for d in self._domain):
                op = check_ops(as_func(self.kernel))[k]
                raise IndexOutOfBounds(op.message(None, 0))

    def slots(self) -> int:
        return SLOTS_PER_SITE * self.sites

    def raise_if_written(self, array: Sequence[int]) -> None:
        first = self.first
        for k in range(self.sites):
            if array[first + SLOTS_PER_SITE * k]:
                self._raise(k, array[first + SLOTS_PER_SITE * k], array[first + SLOTS_PER_SITE * k + 1])

    def _raise(self, site: int, wrapped: int, size: int) -> None:
        op = check_ops(as_func(self.kernel))[site]
        # The slot holds the index as wrapped: a negative one was i + size.
        index = wrapped - size if wrapped < 0 and op.wraps_negative else wrapped
        raise IndexOutOfBounds(op.message(index, size))
