"""What every decomposition rule needs: building prim ops at the aten op's position,
torch's own type promotion, explicit broadcasting, and scalars as tensors.

The builder only collects ops; the pass inserts them when the rule succeeds, so a rule
that declines halfway leaves nothing behind.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import sympy
import torch
from torch._prims_common import ELEMENTWISE_TYPE_PROMOTION_KIND, elementwise_dtypes
from xdsl.dialects.builtin import UnitAttr
from xdsl.ir import Attribute, Operation, SSAValue

from strata.dialects import prim
from strata.dialects.aten import AtenOp
from strata.dialects.types import DTYPES, Dim, TensorType, dtype_name, is_float, sym

Scalar = int | float | bool | sympy.Expr
Operand = SSAValue | Scalar



class Decline(Exception):
    """A rule leaves its aten op as it is (it then runs eagerly); the message says why."""


def tensor_of(v: SSAValue) -> TensorType:
    if not isinstance(v.type, TensorType):
        raise Decline(f"expected a tensor, got {v.type}")
    return v.type


def broadcast_dims(what: str, *shapes: Sequence[Dim]) -> list[Dim]:
    """The shape `shapes` broadcast to (trailing dims aligned, 1 stretches); symbolic
    dims must agree as expressions, else the decomposition declines naming `what`."""
    out: list[Dim] = []
    for i in range(1, max((len(s) for s in shapes), default=0) + 1):
        picked: Dim = 1
        for s in shapes:
            d = s[-i] if i <= len(s) else 1
            if sym(d) == 1:
                continue
            if sym(picked) == 1:
                picked = d
            elif sym(picked) != sym(d):
                raise Decline(f"{what} of shapes {[list(s) for s in shapes]}, which do not broadcast")
        out.append(picked)
    return out[::-1]


def wrap_dim(d: int, rank: int) -> int:
    """`d` as an index in [0, rank), as torch reads negative dims; a 0-d tensor
    accepts 0 and -1 (and has no dim to index, which callers handle)."""
    n = max(rank, 1)
    if not -n <= d < n:
        raise Decline(f"dim {d} is out of range for rank {rank}")
    return d % n


def reduced_dims(dims: Sequence[int] | None, rank: int) -> list[int]:
    """The dims a reduction reduces: None or [] means all of them, as in torch."""
    if not dims:
        return list(range(rank))
    wrapped = sorted({wrap_dim(d, rank) for d in dims})
    return wrapped if rank > 0 else []


def accumulator(dtype: str) -> str:
    """The dtype eager's kernels accumulate reductions of `dtype` in."""
    return "f32" if dtype in ("f16", "bf16") else dtype


def promote(kind: str, *args: Operand) -> tuple[str, str]:
    """(computation dtype, result dtype) of an elementwise op, by torch's own rules:
    0-d tensors and Python scalars take part as torch says, and f16/bf16 compute in
    f32 (torch's opmath) where the kind asks for it."""
    compute, result = elementwise_dtypes(
        *(_promotion_stand_in(a) for a in args),
        type_promotion_kind=ELEMENTWISE_TYPE_PROMOTION_KIND[kind],
    )
    try:
        return dtype_name(compute), dtype_name(result)
    except ValueError as e:
        raise Decline(str(e)) from None


def _promotion_stand_in(a: Operand) -> Any:
    """What promotion needs of an operand: a meta tensor of its dtype, 0-d or not, or
    the Python scalar (a symbolic one counts as an int or a float)."""
    if isinstance(a, SSAValue):
        t = tensor_of(a)
        return torch.empty(() if t.rank == 0 else (1,), dtype=t.torch_dtype, device="meta")
    if isinstance(a, sympy.Expr):
        from strata.passes.decompositions.data_dependent import is_float_symbolic

        return 1 if a.is_integer and not is_float_symbolic(a) else 1.0
    return a


def _check_fits(value: int | float | bool, dtype: str) -> None:
    """Eager refuses scalars the dtype cannot hold; so do we, by declining."""
    if dtype == "i1" or isinstance(value, bool):
        return
    if is_float(dtype):
        limit = torch.finfo(DTYPES[dtype]).max
        if abs(value) > limit and abs(value) != float("inf"):
            raise Decline(f"{value} overflows {dtype}")
        return
    if isinstance(value, float) and not value.is_integer():
        raise Decline(f"{value} is not an integer, as {dtype} needs")
    info = torch.iinfo(DTYPES[dtype])
    if not info.min <= value <= info.max:
        raise Decline(f"{value} overflows {dtype}")


class PrimBuilder:
    """Collects the prim ops that replace one aten op, each tagged with its source.
    `index_bounds_checks`: the option's value (off, an int index out of range reads
    the nearest element instead of raising)."""

    def __init__(self, op: AtenOp, index_bounds_checks: bool = True):
        self.op = op
        self.index_bounds_checks = index_bounds_checks
        self.ops: list[Operation] = []
        self._bound = op.bind()
        self._source = op.attributes.get("strata.source")

    @classmethod
    def for_rewrite(cls, source: Attribute | None) -> PrimBuilder:
        """A builder for a pass's rewrite of prim ops (no aten op: `arg` and `out` have
        nothing to give), tagging what it builds with `source`."""
        b = cls.__new__(cls)
        b.op, b.index_bounds_checks, b.ops, b._bound, b._source = None, True, [], {}, source
        return b

    def tag(self, source: Attribute | None) -> None:
        """Tags the ops added from now on with `source` (a rewrite that merges ops of
        several sources names each where its part is built)."""
        self._source = source

    # ------------------------------------------------------------ the aten op
    def arg(self, name: str) -> Any:
        """A schema argument: the SSAValue(s) of a tensor argument, else the constant
        (a sympy expression where it is symbolic); None where this overload has no
        such argument (aten::sum has no `dim`), so that one rule serves overloads."""
        if name not in self._bound:
            return None
        value = self._bound[name]
        if isinstance(value, SSAValue | list) or value is None and self._is_tensor(name):
            return value
        return self.op.constant(name)

    def _is_tensor(self, name: str) -> bool:
        return next(a for a in self.op.signature.args if a.name == name).is_tensor

    def out(self, i: int = 0) -> TensorType:
        """The declared type of result i, which the replacement must have."""
        return tensor_of(self.op.results[i])

    # ------------------------------------------------------------ building
    def add_checked(self, op: Operation) -> list[SSAValue]:
        """All of op's results, declined where their types are not the ones torch traced
        (a library call's shape rule disagreeing with torch's meta function)."""
        for i, r in enumerate(op.results):
            if not prim.types_match(r.type, self.out(i)):
                raise Decline(f"{op.name} gives {r.type} where the aten op declares {self.out(i)}")
        self.add(op)
        return list(op.results)

    def add(self, op: Operation) -> SSAValue:
        if self._source is not None:
            op.attributes["strata.source"] = self._source
        self.ops.append(op)
        return op.results[0]

    def ew(self, name: str, *xs: SSAValue) -> SSAValue:
        """prim.<name> on operands of one type; declines a dtype the prim op refuses."""
        cls = prim.ELEMENTWISE_OPS[name]
        dtype = tensor_of(xs[0]).dtype
        if not cls.ACCEPTS(dtype):
            raise Decline(f"prim.{name} does not take {dtype}")
        return self.add(cls(*xs))

    def convert(self, x: SSAValue, dtype: str) -> SSAValue:
        if tensor_of(x).dtype == dtype:
            return x
        return self.add(prim.ConvertElementTypeOp(x, dtype))

    def broadcast(self, x: SSAValue, dims: Sequence[Dim]) -> SSAValue:
        """x broadcast to `dims` the way torch broadcasts: trailing dims line up."""
        t = tensor_of(x)
        if t.rank > len(dims):
            raise Decline(f"cannot broadcast {list(t.dims)} to {list(dims)}")
        if t.dims == tuple(dims):
            return x
        lead = len(dims) - t.rank
        return self.add(prim.BroadcastInDimOp(x, dims, range(lead, len(dims))))

    def reshape(self, x: SSAValue, dims: Sequence[Dim]) -> SSAValue:
        if tensor_of(x).dims == tuple(dims):
            return x
        return self.add(prim.ReshapeOp(x, dims))

    def permute(self, x: SSAValue, perm: Sequence[int]) -> SSAValue:
        if list(perm) == list(range(len(perm))):
            return x
        return self.add(prim.PermuteOp(x, perm))

    def reduce(self, kind: str, x: SSAValue, dims: Sequence[int]) -> SSAValue:
        """prim.<kind> over `dims` (which leave the shape); over none it is x."""
        if not dims:
            return x
        return self.add(prim.REDUCTION_OPS[kind](x, dims))

    def unreduce(self, v: SSAValue, dims: Sequence[Dim], reduced: Sequence[int]) -> SSAValue:
        """A reduction's result broadcast back over the `reduced` dims of `dims`."""
        kept = [i for i in range(len(dims)) if i not in set(reduced)]
        if len(kept) == len(dims):
            return v
        return self.add(prim.BroadcastInDimOp(v, dims, kept))

    def where(self, cond: SSAValue, a: SSAValue, b: SSAValue) -> SSAValue:
        return self.add(prim.WhereOp(cond, a, b))

    def full(self, dims: Sequence[Dim], value: Scalar, dtype: str) -> SSAValue:
        """A tensor of `dims` filled with `value`, which may be a sympy expression."""
        if isinstance(value, sympy.Basic) and not isinstance(value, sympy.Expr):  # a symbolic bool
            source = self._item_source(value)
            if source is None:
                raise Decline(f"no prim op holds the symbolic bool {value}")
            return self.broadcast(self.convert(source, dtype), dims)
        if isinstance(value, sympy.Expr):
            if not value.is_number:
                source = self._item_source(value)
                if source is not None:  # an item() value: the tensor it was read from
                    return self.broadcast(self.convert(source, dtype), dims)
                return self.broadcast(self.convert(self._symbolic_scalar(value), dtype), dims)
            value = int(value) if value.is_integer else float(value)
        _check_fits(value, dtype)
        return self.add(prim.FullOp(dims, bool(value) if dtype == "i1" else value, dtype))

    def _item_source(self, e: sympy.Expr) -> SSAValue | None:
        from strata.passes.decompositions.data_dependent import item_source

        return item_source(self.op, e)

    def _symbolic_scalar(self, e: sympy.Expr) -> SSAValue:
        """A 0-d i64 tensor holding the value of an integer expression over symbols
        (of either sign): prim.full takes only numbers, prim.iota a symbolic start."""
        if not e.is_integer:
            raise Decline(f"no prim op holds the symbolic scalar {e}")
        return self.reshape(self.add(prim.IotaOp(1, e, 1, "i64")), [])

    def operand(self, a: Operand, dims: Sequence[Dim], dtype: str) -> SSAValue:
        """A tensor operand or a scalar as a tensor of `dims` and `dtype`."""
        if isinstance(a, SSAValue):
            return self.broadcast(self.convert(a, dtype), dims)
        return self.full(dims, a, dtype)

    def pointwise(
        self,
        kind: str,
        args: Sequence[Operand],
        body: Callable[..., SSAValue],
        exact_scalar: bool = False,
    ) -> SSAValue:
        """An elementwise op in eager's manner: promote `args` by `kind`, round each
        to the common dtype, broadcast them to the result's shape, compute `body` in
        the computation dtype (f32 for f16/bf16) and convert to the result dtype.

        `exact_scalar`: a second operand that is a scalar or 0-d tensor skips the
        rounding, as eager's CPU mul and div read it at computation precision (add,
        sub and the rest round it: `x_bf16 + 0.7` adds bf16(0.7))."""
        out = self.out()
        compute, result = promote(kind, *args)
        if result != out.dtype:
            raise Decline(f"promotion gives {result}, the op declares {out.dtype}")
        # Comparisons compute in their operands' common dtype, not their result's.
        common = promote("NO_OPMATH", *args)[1] if kind == "ALWAYS_BOOL" else result
        xs = []
        for j, a in enumerate(args):
            exact = exact_scalar and j == 1 and (not isinstance(a, SSAValue) or tensor_of(a).rank == 0)
            xs.append(self.operand(a if exact else self.round_to(a, common), out.dims, compute))
        y = self.convert(body(*xs), result)
        if compute != result and isinstance(y.owner, prim.ConvertElementTypeOp):
            y.owner.attributes[prim.OPMATH_ROUNDING] = UnitAttr()
        return y

    def round_to(self, a: Operand, dtype: str) -> Operand:
        """a as eager's TensorIterator casts it to the common dtype."""
        if isinstance(a, SSAValue):
            return self.convert(a, dtype)
        if isinstance(a, sympy.Expr) and is_float(dtype):
            source = self._item_source(a)
            if source is not None:  # an item() value rounds as its Python number would
                return self.convert(source, dtype)
        if isinstance(a, sympy.Expr) or not is_float(dtype):
            return a  # sizes, and integer scalars, are exact
        _check_fits(a, dtype)
        return torch.tensor(a, dtype=DTYPES[dtype]).item()

    def size_like(self, x: SSAValue, size: Dim) -> SSAValue:
        """A tensor's size (an int or an expression) as a tensor of x's type."""
        t = tensor_of(x)
        if isinstance(size, int) or sym(size).is_number:
            return self.full(t.dims, int(sym(size)), t.dtype)
        return self.broadcast(self.convert(self._symbolic_scalar(sym(size)), t.dtype), t.dims)

    def constant_like(self, x: SSAValue, value: Scalar) -> SSAValue:
        """`value` as a tensor of x's type: for the constants inside a formula."""
        t = tensor_of(x)
        return self.full(t.dims, value, t.dtype)
