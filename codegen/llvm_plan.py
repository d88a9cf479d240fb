"""What a kernel body does where, decided before any code is emitted: which values
are rows, which ops run in which stage, which loops over the reduction domain there are
and which row values they hand on to each other (BodyPlan, row_loops), and which loop
variable the vector lanes walk (choose_lanes), and whether a layout-changing kernel
walks its domain in tiles (choose_tile). codegen/llvm_kernel.py emits the code.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import sympy
from xdsl.dialects import arith
from xdsl.dialects.builtin import FloatAttr
from xdsl.ir import Operation, OpResult, SSAValue

from strata.codegen.errors import CodegenError
from strata.codegen.llvm_dtypes import dtype_of
from strata.codegen.llvm_special_loops import SPECIAL_LOOP_EMITTERS
from strata.codegen.llvm_igamma import IGAMMA_EMITTERS
from strata.codegen.llvm_vmath import FUNCTIONS as VECTOR_MATH
from strata.dialects.kernel import FuncOp, IndexedOp, LoadOp, ReduceOp, StoreOp, stride_along
from strata.dialects.kernel_random import PhiloxOp
from strata.dialects.prim import ElementwiseOp
from strata.dialects.prim_indexing import CheckIndexOp
from strata.dialects.types import itemsize, sym


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
        self.stage = stage
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

    def row_ops_for(self, values: list[SSAValue], stop: frozenset[SSAValue] = frozenset()) -> tuple[list[Operation], set[SSAValue]]:
        """The row ops that compute `values`, in program order, going no further up
        than the values in `stop`; and the values of `stop` reached."""
        needed: set[Operation] = set()
        reached: set[SSAValue] = set()
        pending = [v for v in values if v in self.rows]
        while pending:
            v = pending.pop()
            if v in stop:
                reached.add(v)
                continue
            op = v.owner
            if op not in needed:
                needed.add(op)
                pending.extend(u for u in op.operands if u in self.rows)
        return [op for op in self.ops if op in needed], reached

    def _is_row(self, op: Operation) -> bool:
        if isinstance(op, (ReduceOp, StoreOp)):
            return False
        return self._names_reduction_var(op) or any(v in self.rows for v in op.operands)

    def _names_reduction_var(self, op: Operation) -> bool:
        return isinstance(op, IndexedOp) and any(s.name in self._reduction_vars for s in op.index_expr.free_symbols)


# What recomputing an op costs, in units of a simple vector op (a load is one).
_EXPENSIVE = {"div": 4, "sqrt": 4, "rsqrt": 4, "reciprocal": 4, "fmod": 8, "remainder": 8, "pow": 8}
CACHE_WORTH = 4  # a cached row value costs a store and a load


def op_cost(op: Operation) -> int:
    if isinstance(op, ElementwiseOp):
        name = op.name.removeprefix("prim.")
        if name == "div" and _exact_reciprocal(op.args[1]):
            return 1  # LLVM multiplies by the reciprocal, exactly
        return _EXPENSIVE.get(name, 8 if name in VECTOR_MATH or name in _LIBM else 1)
    if isinstance(op, PhiloxOp):
        return 30  # ten rounds of two multiplies and four xors
    return 1


def _exact_reciprocal(v: SSAValue) -> bool:
    """Whether v is a float constant whose reciprocal is exact (a power of two)."""
    op = v.owner
    if not isinstance(op, arith.ConstantOp) or not isinstance(op.value, FloatAttr):
        return False
    mantissa, _ = math.frexp(op.value.value.data)
    return abs(mantissa) == 0.5


_LIBM = set(
    "expm1 log1p tan asin acos atan sinh cosh tanh asinh acosh atanh erf erfc erfcx lgamma atan2 hypot erfinv digamma sin cos".split()
) | set(SPECIAL_LOOP_EMITTERS) | set(IGAMMA_EMITTERS)


@dataclass
class RowLoop:
    """One loop over R: the rows it needs (`targets`), the row ops it runs, the row
    values it saves for later loops (`saves`) and those it reads back (`restores`)."""

    targets: list[SSAValue]
    ops: list[Operation]
    saves: list[SSAValue]
    restores: set[SSAValue]


def row_loops(plan: BodyPlan) -> list[RowLoop]:
    """The loops over R of a point (one per reduction stage, then the row stores), with
    the row values worth keeping from one loop to the next instead of recomputing them:
    a value a later loop needs whose recomputation costs at least CACHE_WORTH (an exp,
    a division) is written to a scratch row in the first loop that computes it."""
    targets = [[red.value for red in plan.reductions[k]] for k in range(1, plan.num_stages)]
    if plan.row_stores:
        targets.append([st.value for st in plan.row_stores])
    # A user's index checked on rows raises whether or not anything reads it (a gather
    # from a dim of size 1 reads its one element at any index): the first loop that
    # can compute it computes it.
    for op in plan.ops:
        if isinstance(op, CheckIndexOp) and op.result in plan.rows:
            if plan.stage[op] >= len(targets):
                raise CodegenError("an index checked on rows after the last loop over them")
            targets[plan.stage[op]].append(op.result)
    naive = [set(plan.row_ops_for(t)[0]) for t in targets]
    saved: set[SSAValue] = set()
    loops: list[RowLoop] = []
    for j, t in enumerate(targets):
        ops, restores = plan.row_ops_for(t, frozenset(saved))
        later = set().union(*naive[j + 1 :]) if j + 1 < len(targets) else set()
        cost: dict[SSAValue, int] = {}
        for op in ops:  # program order: operands first
            cost[op.results[0]] = op_cost(op) + sum(cost.get(u, 0) for u in op.operands if u in plan.rows and u not in saved)
        candidates = {op.results[0] for op in ops if op in later and not isinstance(op, LoadOp) and cost[op.results[0]] >= CACHE_WORTH}
        hit: set[SSAValue] = set()
        for k in range(j + 1, len(targets)):
            hit |= plan.row_ops_for(targets[k], frozenset(saved | candidates))[1]
        saves = [op.results[0] for op in ops if op.results[0] in candidates & hit]
        saved |= set(saves)
        loops.append(RowLoop(t, ops, saves, restores))
    return loops


@dataclass(frozen=True)
class Lanes:
    """The loop variable whose consecutive values are the vector lanes (None: scalar
    code), how many lanes, and whether it is a reduction variable. `across`: a second
    pointwise variable walked in tiles of `count` × `count` points (choose_tile)."""

    var: str | None
    count: int
    over_reduction: bool = False
    across: str | None = None


def choose_lanes(func: FuncOp, plan: BodyPlan, vector_bits: int) -> Lanes:
    """The variable along which most memory accesses are contiguous (ties: the last
    reduction variable, then the innermost pointwise one); in a pointwise kernel, most
    full-size accesses, stores counting more than loads."""
    accesses = [op for op in plan.ops if isinstance(op, (LoadOp, StoreOp))]
    candidates: list[tuple[str, bool]] = []
    if func.reduction_dims and sym(func.reduction_dims[-1]) != 1:
        candidates.append((f"r{len(func.reduction_dims) - 1}", True))
    for i in reversed(range(len(func.pointwise_dims))):
        if sym(func.pointwise_dims[i]) != 1:
            candidates.append((f"x{i}", False))
    if not candidates:
        return Lanes(None, 1)

    if not func.reduction_dims:
        # A pointwise kernel: the full-size accesses decide (a per-channel scale read
        # at x1 stays in cache whatever the lanes walk), and where a kernel changes the
        # layout, the lanes walk its stores contiguously. The weights' NCHW-to-NHWC
        # copy in the CPU suite's ResNet block took 0.14 ms with its lanes on the 3
        # columns of a 3x3 kernel, 0.06 ms on the 64 channels (docs/performance-history.md).
        walked = {sym(f"x{i}") for i, d in enumerate(func.pointwise_dims) if sym(d) != 1}
        accesses = [op for op in accesses if walked <= sym(op.index.data).free_symbols] or accesses

    def score(var: str) -> int:
        total = 0
        for op in accesses:
            weight = 2 if op.results and op.results[0] in plan.rows else 1
            if not func.reduction_dims:
                weight = 3 if isinstance(op, StoreOp) else 2
            step = stride_along(op.index.data, var)
            total += weight * (0 if step == 0 else 2 if step == 1 else -3)
        return total

    best = max(range(len(candidates)), key=lambda i: (score(candidates[i][0]), -i))
    var, over_reduction = candidates[best]
    wide = any(itemsize(dtype_of(func, a.type.element)) == 8 for a in func.block.args)
    vector = max(vector_bits // (64 if wide else 32), 1)
    count = vector * _vectors_per_step(func, plan, over_reduction)
    dims = func.reduction_dims if over_reduction else func.pointwise_dims
    extent = sym(dims[int(var[1:])])
    if extent.is_Integer and int(extent) < count:  # a short dim: no lanes that are always off
        count = max(4, 1 << (int(extent) - 1).bit_length())
    return Lanes(var, count, over_reduction)


# The body of a tiled kernel is emitted once per step of `across` in a tile (16 times
# for f32 with AVX-512): larger bodies keep the gathers (and their code size).
TILE_BODY_COST = 64


def choose_tile(func: FuncOp, plan: BodyPlan, lanes: Lanes, vector_bits: int) -> Lanes:
    """`lanes` tiled where a pointwise kernel changes the layout: where an access is
    contiguous along another pointwise variable and strided along the lanes (an
    NCHW-to-NHWC copy, `x.t().contiguous()`), the domain is walked in square tiles of
    that variable (`across`) and the lanes, and such accesses read or write whole rows
    of a tile, transposed in registers (`transposed_in_tile`), instead of one element a
    lane. A tile is one vector of the widest dtype a side (at most 16). Else `lanes`."""
    if func.reduction_dims or not lanes.var or lanes.over_reduction:
        return lanes
    if sum(op_cost(op) for op in plan.ops) > TILE_BODY_COST:
        return lanes
    stored = {op.buffer for op in plan.ops if isinstance(op, StoreOp)}
    if any(isinstance(op, LoadOp) and op.buffer in stored for op in plan.ops):
        return lanes  # a buffer read back: loads and stores keep their order
    widest = max((itemsize(dtype_of(func, a.type.element)) for a in func.block.args), default=4)
    count = min(max(vector_bits // (8 * widest), 4), 16)

    def short(var: str) -> bool:
        extent = sym(func.pointwise_dims[int(var[1:])])
        return extent.is_Integer and int(extent) < count

    if short(lanes.var):
        return lanes
    best: tuple[int, str] | None = None
    for i in range(len(func.pointwise_dims)):
        var = f"x{i}"
        if var == lanes.var or short(var):
            continue
        tiled = Lanes(lanes.var, count, False, var)
        n = sum(1 for op in plan.ops if isinstance(op, (LoadOp, StoreOp)) and transposed_in_tile(op, tiled))
        if n and (best is None or n > best[0]):
            best = (n, var)
    return lanes if best is None else Lanes(lanes.var, count, False, best[1])


def transposed_in_tile(op: LoadOp | StoreOp, lanes: Lanes) -> bool:
    """Whether a load or store of a tiled kernel moves whole rows along `across`
    (contiguous along it, not along the lanes), transposed in registers."""
    if not lanes.across or isinstance(op, LoadOp) and op.values:
        return False
    along_lanes = stride_along(op.index.data, lanes.var)
    return stride_along(op.index.data, lanes.across) == 1 and along_lanes != 0 and along_lanes != 1


def _vectors_per_step(func: FuncOp, plan: BodyPlan, over_reduction: bool) -> int:
    """How many vectors of lanes one step handles. More vectors mean independent
    partial results and more memory accesses in flight (a sum over a non-last dim
    reads a few hundred contiguous bytes per row instead of one vector), but every
    value of the body then takes that many registers: bodies with transcendental math
    or divisions keep to one or two, which their own instruction-level parallelism
    keeps busy. (Measured on the CPU suite's kernels, one thread.)"""
    heavy = any(op_cost(op) >= CACHE_WORTH for op in plan.ops)
    if not func.reduction_dims:
        return 2
    if heavy:
        return 1 if over_reduction else 2
    return 4 if over_reduction else 8
