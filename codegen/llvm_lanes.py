"""Scalars and vectors of lanes in LLVM IR: types, splats, intrinsic names, lane by lane.

Kernel code is emitted for `lanes` consecutive points at once (codegen/llvm_kernel.py):
a value that differs between those points is an LLVM vector `<lanes x T>`, one that is
the same for all of them stays a scalar `T` and is splatted where it meets a vector.
The helpers here let one emitter serve both: `like(T, v)` is T with v's lanes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from llvmlite import ir

I1 = ir.IntType(1)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
PTR = ir.PointerType()


def lanes_of(v: ir.Value | ir.Type) -> int | None:
    """The number of lanes of a vector value (or type), None for a scalar."""
    t = v if isinstance(v, ir.Type) else v.type
    return t.count if isinstance(t, ir.VectorType) else None


def element_type(t: ir.Type) -> ir.Type:
    return t.element if isinstance(t, ir.VectorType) else t


def with_lanes(t: ir.Type, lanes: int | None) -> ir.Type:
    """Scalar type `t` as a vector of `lanes` (itself when lanes is None)."""
    t = element_type(t)
    return ir.VectorType(t, lanes) if lanes else t


def like(t: ir.Type, v: ir.Value) -> ir.Type:
    """Scalar type `t` with the lanes of `v`."""
    return with_lanes(t, lanes_of(v))


def const_like(v: ir.Value, value: float | int) -> ir.Constant:
    """`value` as a constant of v's type (splatted over its lanes)."""
    return ir.Constant(v.type, value)


def splat(b: ir.IRBuilder, v: ir.Value, lanes: int) -> ir.Value:
    """Scalar `v` in every one of `lanes` lanes (a vector stays as it is)."""
    if lanes_of(v):
        return v
    t = ir.VectorType(v.type, lanes)
    if isinstance(v, ir.Constant) and not isinstance(v.type, ir.PointerType):
        return ir.Constant(t, [v] * lanes)
    one = b.insert_element(ir.Constant(t, ir.Undefined), v, ir.Constant(I32, 0))
    return b.shuffle_vector(one, ir.Constant(t, ir.Undefined), ir.Constant(ir.VectorType(I32, lanes), [0] * lanes))


def unify(b: ir.IRBuilder, values: Sequence[ir.Value]) -> list[ir.Value]:
    """`values` splatted to the lanes of the widest of them."""
    lanes = max((lanes_of(v) or 0 for v in values), default=0)
    if not lanes:
        return list(values)
    return [splat(b, v, lanes) for v in values]


def iota(lanes: int, t: ir.Type = I64) -> ir.Constant:
    """<0, 1, …, lanes-1>."""
    return ir.Constant(ir.VectorType(t, lanes), list(range(lanes)))


def mangle(t: ir.Type) -> str:
    """The suffix that names an overloaded intrinsic for type t (f32, v16f32, i64, …)."""
    if isinstance(t, ir.VectorType):
        return f"v{t.count}{mangle(t.element)}"
    if isinstance(t, ir.IntType):
        return f"i{t.width}"
    if isinstance(t, ir.PointerType):
        return "p0"
    return {ir.FloatType: "f32", ir.DoubleType: "f64", ir.HalfType: "f16"}[type(t)]


def intrinsic(module: ir.Module, name: str, ret: ir.Type, args: Sequence[ir.Type], overloads: Sequence[ir.Type]) -> ir.Function:
    """The declaration of `llvm.<name>.<overloads…>` in `module`."""
    full = ".".join([f"llvm.{name}", *(mangle(t) for t in overloads)])
    fn = module.globals.get(full)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(ret, list(args)), full)
    return fn


def call_intrinsic(b: ir.IRBuilder, name: str, args: Sequence[ir.Value], *extra: ir.Value) -> ir.Value:
    """`llvm.<name>` overloaded on the type of `args` (scalars or vectors alike), which is
    also the result type; `extra` are trailing non-overloaded operands."""
    args = unify(b, args)
    t = args[0].type
    fn = intrinsic(b.module, name, t, [a.type for a in (*args, *extra)], [t])
    return b.call(fn, [*args, *extra])


def lane_by_lane(b: ir.IRBuilder, fn: Callable[..., ir.Value], args: Sequence[ir.Value]) -> ir.Value:
    """fn (an emitter on scalars) applied to each lane of `args`; scalars pass through."""
    args = unify(b, args)
    lanes = lanes_of(args[0]) if args else None
    if not lanes:
        return fn(*args)
    out = None
    for i in range(lanes):
        k = ir.Constant(I32, i)
        r = fn(*[b.extract_element(a, k) for a in args])
        if out is None:
            out = ir.Constant(ir.VectorType(r.type, lanes), ir.Undefined)
        out = b.insert_element(out, r, k)
    return out


def vector_gep(b: ir.IRBuilder, base: ir.Value, index: ir.Value, etype: ir.Type) -> ir.Value:
    """<lanes x ptr>: base + index[i] elements of etype, for gathers and scatters."""
    g = b.gep(base, [index], inbounds=True, source_etype=etype)
    g.type = ir.VectorType(PTR, lanes_of(index))  # llvmlite types a vector GEP as a scalar ptr
    return g


def transpose(b: ir.IRBuilder, rows: Sequence[ir.Value]) -> list[ir.Value]:
    """The n × n matrix whose rows are the n vectors `rows` (n a power of two),
    transposed: log2(n) rounds of interleaving row i with row i + n/2, low halves then
    high halves (x86 unpack and lane shuffles)."""
    n = len(rows)
    half = n // 2
    low = ir.Constant(ir.VectorType(I32, n), [j for i in range(half) for j in (i, i + n)])
    high = ir.Constant(ir.VectorType(I32, n), [j for i in range(half, n) for j in (i, i + n)])
    rows = list(rows)
    for _ in range(n.bit_length() - 1):
        rows = [
            v
            for i in range(half)
            for v in (b.shuffle_vector(rows[i], rows[i + half], low), b.shuffle_vector(rows[i], rows[i + half], high))
        ]
    return rows
