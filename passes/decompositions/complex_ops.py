"""Complex arithmetic, conversions and views → real prim ops on (real, imag) pairs.

See complex_values.py for the representation. A real operand of a complex op takes
part as r + 0i and the full complex formula runs, as eager's promotion makes it run,
so that infinities and NaNs combine as eager's do (inf * (2 + 0i) has a NaN
imaginary part there too). Formulas are c10/util/complex.h's, which eager's CPU and
CUDA kernels use.
"""

from __future__ import annotations

import sympy
from xdsl.ir import SSAValue

from strata.dialects import prim
from strata.dialects.aten import AtenOp
from strata.dialects.types import COMPLEX_DTYPES, numel, sym
from strata.passes.decompositions.builder import Decline, PrimBuilder, reduced_dims, tensor_of, wrap_dim
from strata.passes.decompositions.complex_values import (
    as_pairs,
    complex_of,
    decomposes_complex,
    imag_part,
    is_complex,
    pack,
    pairs,
    part_dtype,
    real_part,
)
from strata.passes.decompositions.conversion import on_graph_device
from strata.passes.decompositions.padding import _pairs as pads_by_dim
from strata.passes.decompositions.padding import _padded
from strata.passes.decompositions.shape import _slice_bounds, _slice_dim, select_start


def _operand(b: PrimBuilder, name: str, dtype: str) -> SSAValue:
    """Argument `name` (a tensor, or a real Python number) as pairs of `dtype`,
    broadcast to the result's dims."""
    v = b.arg(name)
    if not isinstance(v, SSAValue):
        if isinstance(v, complex) or not isinstance(v, int | float | bool | sympy.Expr):
            raise Decline(f"a {type(v).__name__} scalar operand")
        v = b.full([], v, dtype)
    return b.broadcast(as_pairs(b, v, dtype), [*b.out().dims, 2])


def _parts(b: PrimBuilder, p: SSAValue) -> tuple[SSAValue, SSAValue]:
    return real_part(b, p), imag_part(b, p)


def _times_real(b: PrimBuilder, p: SSAValue, alpha, dtype: str) -> SSAValue:
    """p * (alpha + 0i) by the full complex product, as eager's add and sub scale
    `other` by alpha (even alpha = 1: an infinite part then gives a NaN there too)."""
    if isinstance(alpha, complex):
        raise Decline("a complex alpha")
    re, im = _parts(b, p)
    zero, a = b.full(tensor_of(re).dims, 0, dtype), b.full(tensor_of(re).dims, alpha, dtype)
    return pack(b, b.ew("sub", b.ew("mul", re, a), b.ew("mul", im, zero)), b.ew("add", b.ew("mul", re, zero), b.ew("mul", im, a)))


def _divided(b: PrimBuilder, a: SSAValue, bi: SSAValue, c: SSAValue, d: SSAValue) -> SSAValue:
    """(a + bi) / (c + di) as pairs, by c10::complex's operator/= (numpy's scaled
    division): the larger of |c|, |d| divides first, so that c² + d² never overflows."""
    dtype = tensor_of(a).dtype
    dims = tensor_of(a).dims
    one, zero = b.full(dims, 1, dtype), b.full(dims, 0, dtype)
    abs_c, abs_d = b.ew("abs", c), b.ew("abs", d)
    # |c| >= |d|: rat = d / c, scl = 1 / (c + d rat), ((a + b rat) scl, (b - a rat) scl)
    rat = b.ew("div", d, c)
    scl = b.ew("div", one, b.ew("add", c, b.ew("mul", d, rat)))
    re_c = b.ew("mul", b.ew("add", a, b.ew("mul", bi, rat)), scl)
    im_c = b.ew("mul", b.ew("sub", bi, b.ew("mul", a, rat)), scl)
    # both zero: (a / |c|, b / |d|), an infinity or NaN as eager gives
    both_zero = b.ew("logical_and", b.ew("eq", abs_c, zero), b.ew("eq", abs_d, zero))
    re_c = b.where(both_zero, b.ew("div", a, abs_c), re_c)
    im_c = b.where(both_zero, b.ew("div", bi, abs_d), im_c)
    # |c| < |d| (or a NaN): rat = c / d, scl = 1 / (d + c rat), ((a rat + b) scl, (b rat - a) scl)
    rat2 = b.ew("div", c, d)
    scl2 = b.ew("div", one, b.ew("add", d, b.ew("mul", c, rat2)))
    re_d = b.ew("mul", b.ew("add", b.ew("mul", a, rat2), bi), scl2)
    im_d = b.ew("mul", b.ew("sub", b.ew("mul", bi, rat2), a), scl2)
    c_first = b.ew("ge", abs_c, abs_d)
    return pack(b, b.where(c_first, re_c, re_d), b.where(c_first, im_c, im_d))


# ---------------------------------------------------------------- arithmetic
@decomposes_complex("aten::add.Tensor", "aten::add.Scalar", "aten::sub.Tensor", "aten::sub.Scalar")
def add_sub(op: AtenOp, b: PrimBuilder) -> SSAValue:
    dtype = part_dtype(b.out())
    alpha = 1 if b.arg("alpha") is None else b.arg("alpha")
    alpha = alpha if op.overload_name.startswith("aten::add") else -alpha  # sub: self + (-alpha) other
    x, y = _operand(b, "self", dtype), _times_real(b, _operand(b, "other", dtype), alpha, dtype)
    return complex_of(b, b.ew("add", x, y))


@decomposes_complex("aten::mul.Tensor", "aten::mul.Scalar")
def mul(op: AtenOp, b: PrimBuilder) -> SSAValue:
    # (a + bi)(c + di) = (ac - bd) + (ad + bc)i
    dtype = part_dtype(b.out())
    (a, bi), (c, d) = _parts(b, _operand(b, "self", dtype)), _parts(b, _operand(b, "other", dtype))
    re = b.ew("sub", b.ew("mul", a, c), b.ew("mul", bi, d))
    im = b.ew("add", b.ew("mul", a, d), b.ew("mul", bi, c))
    return complex_of(b, pack(b, re, im))


@decomposes_complex("aten::div.Tensor", "aten::div.Scalar")
def div(op: AtenOp, b: PrimBuilder) -> SSAValue:
    if b.arg("rounding_mode") is not None:
        raise Decline("a rounding mode on complex values")  # an error in eager
    dtype = part_dtype(b.out())
    (a, bi), (c, d) = _parts(b, _operand(b, "self", dtype)), _parts(b, _operand(b, "other", dtype))
    return complex_of(b, _divided(b, a, bi, c, d))


@decomposes_complex("aten::neg")
def neg(op: AtenOp, b: PrimBuilder) -> SSAValue:
    return complex_of(b, b.ew("neg", pairs(b, b.arg("self"))))


@decomposes_complex("aten::_conj", "aten::conj", "aten::conj_physical", "aten::_conj_physical")
def conj(op: AtenOp, b: PrimBuilder) -> SSAValue:
    re, im = _parts(b, pairs(b, b.arg("self")))
    return complex_of(b, pack(b, re, b.ew("neg", im)))


@decomposes_complex("aten::abs")
def abs_(op: AtenOp, b: PrimBuilder) -> SSAValue:
    # std::abs of a complex number: hypot(re, im)
    re, im = _parts(b, pairs(b, b.arg("self")))
    return b.ew("hypot", re, im)


@decomposes_complex("aten::angle")
def angle(op: AtenOp, b: PrimBuilder) -> SSAValue:
    # std::arg: atan2(im, re)
    re, im = _parts(b, pairs(b, b.arg("self")))
    return b.ew("atan2", im, re)


@decomposes_complex("aten::where.self")
def where(op: AtenOp, b: PrimBuilder) -> SSAValue:
    dtype = part_dtype(b.out())
    full = [*b.out().dims, 2]
    cond = b.broadcast(b.arg("condition"), b.out().dims)
    cond = b.add(prim.BroadcastInDimOp(cond, full, range(len(full) - 1)))
    return complex_of(b, b.where(cond, _operand(b, "self", dtype), _operand(b, "other", dtype)))


# ---------------------------------------------------------------- reductions
@decomposes_complex("aten::sum.dim_IntList", "aten::sum", "aten::mean.dim", "aten::mean")
def sum_mean(op: AtenOp, b: PrimBuilder) -> SSAValue:
    out = b.out()
    dtype = part_dtype(out)
    x = b.arg("self")
    if not is_complex(x):
        raise Decline("a complex sum of a real tensor")
    t = tensor_of(x)
    dims = reduced_dims(b.arg("dim"), t.rank)
    p = b.convert(pairs(b, x), dtype)
    total = b.reduce("sum", p, dims)
    if op.overload_name.startswith("aten::mean"):  # eager divides the sum by n + 0i
        n = numel([t.dims[d] for d in dims])
        re, im = _parts(b, total)
        size = tensor_of(re).dims
        total = _divided(b, re, im, b.full(size, n, dtype), b.full(size, 0, dtype))
    return complex_of(b, b.reshape(total, [*out.dims, 2]))


# ---------------------------------------------------------------- conversions
@decomposes_complex("aten::_to_copy", "aten::copy")
def to_copy(op: AtenOp, b: PrimBuilder) -> SSAValue:
    out = b.out()
    x = b.arg("src") if op.overload_name == "aten::copy" else b.arg("self")
    if b.arg("device") is not None and not on_graph_device(op, b.arg("device")):
        raise Decline("a device transfer")
    layout = b.arg("layout")
    if layout is not None and str(layout) != "torch.strided":
        raise Decline(f"layout {layout}")
    if out.dtype in COMPLEX_DTYPES:
        return complex_of(b, b.broadcast(as_pairs(b, x, part_dtype(out)), [*out.dims, 2]))
    re, im = _parts(b, pairs(b, x))
    if out.dtype == "i1":  # nonzero: either part
        zero = b.full(tensor_of(re).dims, 0, tensor_of(re).dtype)
        value = b.ew("logical_or", b.ew("ne", re, zero), b.ew("ne", im, zero))
    else:  # the real part, as c10's cast from complex takes it
        value = b.convert(re, out.dtype)
    return b.broadcast(value, out.dims)


@decomposes_complex(
    "aten::clone", "aten::alias", "aten::resolve_conj", "aten::resolve_neg", "aten::lift_fresh_copy"
)
def identity(op: AtenOp, b: PrimBuilder) -> SSAValue:
    return complex_of(b, pairs(b, b.arg("self")))


@decomposes_complex("aten::view_as_real")
def view_as_real(op: AtenOp, b: PrimBuilder) -> SSAValue:
    return pairs(b, b.arg("self"))


@decomposes_complex("aten::view_as_complex")
def view_as_complex(op: AtenOp, b: PrimBuilder) -> SSAValue:
    p = b.arg("self")
    if tensor_of(p).dtype not in COMPLEX_DTYPES.values():
        raise Decline(f"view_as_complex of {tensor_of(p).dtype}")
    return complex_of(b, p)


@decomposes_complex("aten::real", "aten::imag")
def real_imag(op: AtenOp, b: PrimBuilder) -> SSAValue:
    p = pairs(b, b.arg("self"))
    return real_part(b, p) if op.overload_name == "aten::real" else imag_part(b, p)


# ---------------------------------------------------------------- views
@decomposes_complex(
    "aten::view",
    "aten::_unsafe_view",
    "aten::reshape",
    "aten::squeeze",
    "aten::squeeze.dim",
    "aten::squeeze.dims",
    "aten::unsqueeze",
)
def reshape(op: AtenOp, b: PrimBuilder) -> SSAValue:
    return complex_of(b, b.reshape(pairs(b, b.arg("self")), [*b.out().dims, 2]))


@decomposes_complex("aten::expand")
def expand(op: AtenOp, b: PrimBuilder) -> SSAValue:
    return complex_of(b, b.broadcast(pairs(b, b.arg("self")), [*b.out().dims, 2]))


@decomposes_complex("aten::permute")
def permute(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x = b.arg("self")
    rank = tensor_of(x).rank
    perm = [wrap_dim(d, rank) for d in b.arg("dims")]
    return complex_of(b, b.permute(pairs(b, x), [*perm, rank]))


@decomposes_complex("aten::t", "aten::transpose.int")
def transpose(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x = b.arg("self")
    rank = tensor_of(x).rank
    if op.overload_name == "aten::t":
        if rank > 2:
            raise Decline("t of a tensor of rank above 2 is an error in eager")
        d0, d1 = 0, max(rank - 1, 0)
    else:
        d0, d1 = (wrap_dim(b.arg(n), rank) for n in ("dim0", "dim1"))
    perm = list(range(rank + 1))
    if rank >= 2:
        perm[d0], perm[d1] = perm[d1], perm[d0]
    return complex_of(b, b.permute(pairs(b, x), perm))


@decomposes_complex("aten::slice.Tensor")
def slice_(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x = b.arg("self")
    t = tensor_of(x)
    d = wrap_dim(b.arg("dim"), t.rank)
    step = b.arg("step")
    if not isinstance(step, int) or step <= 0:
        raise Decline(f"slice step {step}")
    start, end = _slice_bounds(b.arg("start"), b.arg("end"), t.dims[d], step, b.out().dims[d])
    return complex_of(b, _slice_dim(b, pairs(b, x), d, start, end, step))


@decomposes_complex("aten::select.int")
def select(op: AtenOp, b: PrimBuilder) -> SSAValue:
    x = b.arg("self")
    t = tensor_of(x)
    d = wrap_dim(b.arg("dim"), t.rank)
    start = select_start(b, b.arg("index"), t.dims[d], d)
    one = _slice_dim(b, pairs(b, x), d, start, start + 1)
    return complex_of(b, b.reshape(one, [*b.out().dims, 2]))


@decomposes_complex("aten::cat")
def cat(op: AtenOp, b: PrimBuilder) -> SSAValue:
    out = b.out()
    dtype = part_dtype(out)
    # Eager skips 1-d empty tensors (a legacy rule) and promotes to one dtype.
    xs = [x for x in b.arg("tensors") if tensor_of(x).dims != (0,)] or list(b.arg("tensors"))
    ps = [as_pairs(b, x, dtype) for x in xs]
    if len(ps) == 1:
        return complex_of(b, b.reshape(ps[0], [*out.dims, 2]))
    return complex_of(b, b.add(prim.CatOp(ps, wrap_dim(b.arg("dim"), out.rank))))


@decomposes_complex("aten::constant_pad_nd")
def constant_pad_nd(op: AtenOp, b: PrimBuilder) -> SSAValue:
    # Each part padded as a real tensor is (padding.py): the real one with the value,
    # the imaginary one with 0.
    x, out = b.arg("self"), b.out()
    dtype = part_dtype(out)
    value = b.arg("value")
    value = 0 if value is None else value
    if isinstance(value, complex):
        raise Decline("a complex padding value")
    low = pads_by_dim(b.arg("pad"), tensor_of(x).rank)
    re, im = _parts(b, pairs(b, x))
    if any(sym(d) == 0 for d in [*out.dims, *(tensor_of(x).dims[d] for d in low)]):
        return complex_of(b, pack(b, b.full(out.dims, value, dtype), b.full(out.dims, 0, dtype)))
    (re, inside), (im, _) = _padded(b, re, low, lambda j, n: j), _padded(b, im, low, lambda j, n: j)
    if inside is not None:
        re = b.where(inside, re, b.full(out.dims, value, dtype))
        im = b.where(inside, im, b.full(out.dims, 0, dtype))
    return complex_of(b, pack(b, re, im))
