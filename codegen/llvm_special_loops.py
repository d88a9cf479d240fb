"""LLVM scalar functions for the prim ops of dialects/prim_special_loops.py: Hurwitz
zeta and the orthogonal polynomials, each an internal function with a real loop
(basic blocks and phis) whose trip count depends on the element, as ATen's.

They follow aten/src/ATen/native/Math.h (torch 2.13) step by step: `zeta` (Cephes'
Euler–Maclaurin summation, in double as ATen's CPU kernel computes it for float too)
and the `*_polynomial_*_forward` functions, in the operands' own type, with `a*b - c*d`
as one fma of the first product, which is how eager's build contracts them (checked
bit for bit on f32). The degree n is truncated to int64 as x86 does: NaN and values
out of range give INT64_MIN, a negative degree.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from llvmlite import ir

from strata.codegen.llvm_dtypes import I1, I64
from strata.codegen.llvm_lanes import call_intrinsic, lane_by_lane
from strata.codegen.llvm_math import F64, call_libm

INT64_MIN = -(2**63)


class FloatOps:
    """Arithmetic in one float type T, with C++'s int64 → T conversions."""

    def __init__(self, b: ir.IRBuilder, t: ir.Type):
        self.b, self.t = b, t

    def c(self, v: float) -> ir.Constant:
        return ir.Constant(self.t, v)

    def i(self, v: int) -> ir.Constant:
        return ir.Constant(I64, v)

    def of_int(self, v: ir.Value) -> ir.Value:
        return self.b.sitofp(v, self.t)

    def add(self, a, b):
        return self.b.fadd(a, b)

    def sub(self, a, b):
        return self.b.fsub(a, b)

    def mul(self, a, b):
        return self.b.fmul(a, b)

    def div(self, a, b):
        return self.b.fdiv(a, b)

    def fma(self, a, b, c):
        return call_intrinsic(self.b, "fma", [a, b, c])

    def abs(self, a):
        return call_intrinsic(self.b, "fabs", [a])

    def fn(self, name: str, a):
        return call_libm(self.b, name, [a])

    def cmp(self, op: str, a, b):
        return self.b.fcmp_ordered(op, a, b)

    def icmp(self, op: str, a, b):
        return self.b.icmp_signed(op, a, b)

    def even(self, n):
        return self.b.icmp_signed("==", self.b.and_(n, self.i(1)), self.i(0))

    def select(self, cond, a, b):
        return self.b.select(cond, a, b)

    def sign_by(self, cond, v):
        """cond ? v : -v."""
        return self.b.select(cond, v, self.b.fneg(v))


@dataclass
class Recurrence:
    """`for (k = start; k <cmp> bound && !(stop_on_nan && isnan(q)); k += inc)
    { r = step(k, p, q); p = q; q = r; }`, from p = 1 and q = q0; gives r (q0 if the
    loop never runs: ATen leaves r unset there, which only a NaN q0 reaches)."""

    q0: ir.Value
    start: int
    cmp: str
    bound: ir.Value
    step: Callable[[ir.Value, ir.Value, ir.Value], ir.Value]
    inc: int = 1
    stop_on_nan: bool = True


# A polynomial: (ops, x, n) → the special cases in ATen's order, (condition, value),
# and the recurrence that runs when none holds.
Polynomial = Callable[[FloatOps, ir.Value, ir.Value], tuple[list[tuple[ir.Value, ir.Value]], Recurrence]]


def _degree(b: ir.IRBuilder, n: ir.Value) -> ir.Value:
    """static_cast<int64_t>(n), as x86's cvttsd2si: INT64_MIN where n is NaN or out of range."""
    in_range = b.fcmp_ordered("<", call_intrinsic(b, "fabs", [n]), ir.Constant(n.type, 2.0**63))
    whole = b.fptosi(b.select(in_range, n, ir.Constant(n.type, 0.0)), I64)
    return b.select(in_range, whole, ir.Constant(I64, INT64_MIN))


def _define_polynomial(fn: ir.Function, body: Polynomial) -> None:
    x, n_float = fn.args
    entry, loop, step, done = (fn.append_basic_block(s) for s in ("entry", "loop", "step", "done"))
    b = ir.IRBuilder(entry)
    o = FloatOps(b, x.type)
    n = _degree(b, n_float)
    cases, rec = body(o, x, n)
    special = ir.Constant(I1, 0)
    for cond, _ in cases:
        special = b.or_(special, cond)
    b.branch(loop)

    b.position_at_end(loop)
    k, p, q = b.phi(I64, "k"), b.phi(x.type, "p"), b.phi(x.type, "q")
    k.add_incoming(o.i(rec.start), entry)
    p.add_incoming(o.c(1.0), entry)
    q.add_incoming(rec.q0, entry)
    go = b.and_(b.not_(special), b.icmp_signed(rec.cmp, k, rec.bound))
    if rec.stop_on_nan:
        go = b.and_(go, b.fcmp_ordered("ord", q, q))
    b.cbranch(go, step, done)

    b.position_at_end(step)
    r = rec.step(k, p, q)
    k.add_incoming(b.add(k, o.i(rec.inc)), step)
    p.add_incoming(q, step)
    q.add_incoming(r, step)
    b.branch(loop)

    b.position_at_end(done)
    result = q  # the last r, or q0 when the loop did not run
    for cond, value in reversed(cases):
        result = b.select(cond, value, result)
    b.ret(result)


# ---------------------------------------------------------------- the polynomials
def _chebyshev_step(o: FloatOps, two_x):
    return lambda k, p, q: o.fma(two_x, q, o.b.fneg(p))


def _chebyshev(kind: str, shifted: bool) -> Polynomial:
    """chebyshev_polynomial_{t,u,v,w}_forward and their shifted_ forms, whose argument
    is y = 2x - 1 (with ATen's own grouping of each sum)."""

    def body(o: FloatOps, x, n):
        one = o.c(1.0)
        even = o.even(n)
        n1 = o.of_int(o.b.add(n, o.i(1)))  # (n + 1), in T
        n21 = o.of_int(o.b.add(o.b.add(n, n), o.i(1)))  # (n + n + 1), in T
        y = o.sub(o.add(x, x), one) if shifted else x
        yy = o.add(y, y)
        acos = o.fn("acos", y)
        half = o.div(acos, o.c(2.0))
        n_half = o.add(o.of_int(n), o.c(0.5))
        if kind == "t":
            ends = (one, o.sign_by(even, one))
            trig = o.fn("cos", o.mul(o.of_int(n), acos))
            q0 = y
        elif kind == "u":
            ends = (n1, o.sign_by(even, n1))
            s = o.fn("sin", acos)
            trig = o.select(
                o.b.fcmp_unordered("!=", s, o.c(0.0)),
                o.div(o.fn("sin", o.mul(n1, acos)), s),
                o.div(o.mul(n1, o.fn("cos", o.mul(n1, acos))), y),
            )
            q0 = yy
        elif kind == "v":
            ends = (one, o.sign_by(even, n21))
            trig = o.select(
                o.b.fcmp_unordered("!=", o.fn("sin", half), one),
                o.div(o.fn("cos", o.mul(n_half, acos)), o.fn("cos", half)),
                o.sign_by(even, n21),
            )
            q0 = o.sub(yy, one)
        else:
            ends = (n21, o.sign_by(even, one))
            trig = o.select(
                o.b.fcmp_unordered("!=", o.fn("cos", half), one),
                o.div(o.fn("sin", o.mul(n_half, acos)), o.fn("sin", half)),
                # ATen's values where cos(acos(y) / 2) rounds to 1, y just below 1
                o.sign_by(even, one) if shifted else o.select(o.cmp(">", y, o.c(0.0)), n21, o.sign_by(even, one)),
            )
            q0 = o.add(yy, one)
        negative = (o.icmp("<", n, o.i(0)), o.c(0.0))
        if shifted:
            # x == 1 and x == 0 are y == 1 and y == -1
            ends_cases = [(o.cmp("==", x, one), ends[0]), (o.cmp("==", x, o.c(0.0)), ends[1])]
        else:
            # (for t and u, `x > 0 || n % 2 == 0 ? v : -v` is this with ends[1] = ±v)
            ends_cases = [(o.cmp("==", o.abs(x), one), o.select(o.cmp(">", x, o.c(0.0)), ends[0], ends[1]))]
        threshold = {"t": 6, "u": 8, "v": 8, "w": 8}[kind]
        if shifted:
            threshold = 4 if kind == "w" else 6
        trig_case = (o.b.and_(o.icmp(">", n, o.i(threshold)), o.cmp("<", o.abs(y), one)), trig)
        cases = [negative, *ends_cases, trig_case, (o.icmp("==", n, o.i(0)), one), (o.icmp("==", n, o.i(1)), q0)]
        return cases, Recurrence(q0, 2, "<=", n, _chebyshev_step(o, yy))

    return body


def _hermite(physicists: bool, limit: int) -> Polynomial:
    """hermite_polynomial_h_forward (physicists: H) and _he_forward; NaN past the
    type's limit (ATen's getHermitianLimit), and no NaN test in the loop."""

    def body(o: FloatOps, x, n):
        one = o.c(1.0)
        a = o.add(x, x) if physicists else x
        cases = [
            (o.icmp("<", n, o.i(0)), o.c(0.0)),
            (o.icmp("==", n, o.i(0)), one),
            (o.icmp("==", n, o.i(1)), a),
            (o.icmp(">", n, o.i(limit)), o.c(math.nan)),
        ]

        def step(k, p, q):
            return o.fma(a, q, o.b.fneg(o.mul(o.of_int(k), p)))

        if physicists:
            return cases, Recurrence(a, 2, "<", o.b.add(n, n), step, inc=2, stop_on_nan=False)
        return cases, Recurrence(a, 1, "<", n, step, stop_on_nan=False)

    return body


def _laguerre(o: FloatOps, x, n):
    one = o.c(1.0)
    one_minus_x = o.sub(one, x)
    cases = [
        (o.icmp("<", n, o.i(0)), o.c(0.0)),
        (o.cmp("==", o.abs(x), o.c(0.0)), one),
        (o.icmp("==", n, o.i(0)), one),
        (o.icmp("==", n, o.i(1)), one_minus_x),
    ]

    def step(k, p, q):
        a = o.add(o.of_int(o.b.add(k, k)), one_minus_x)
        return o.div(o.fma(a, q, o.b.fneg(o.mul(o.of_int(k), p))), o.of_int(o.b.add(k, o.i(1))))

    return cases, Recurrence(one_minus_x, 1, "<", n, step)


def _legendre(o: FloatOps, x, n):
    one = o.c(1.0)
    even = o.even(n)
    cases = [
        (o.icmp("<", n, o.i(0)), o.c(0.0)),
        (o.cmp("==", o.abs(x), one), o.select(o.b.or_(o.cmp(">", x, o.c(0.0)), even), one, o.c(-1.0))),
        (o.icmp("==", n, o.i(0)), one),
        (o.icmp("==", n, o.i(1)), x),
    ]

    def step(k, p, q):
        a = o.mul(o.of_int(o.b.add(o.b.add(k, k), o.i(1))), x)
        return o.div(o.fma(a, q, o.b.fneg(o.mul(o.of_int(k), p))), o.of_int(o.b.add(k, o.i(1))))

    return cases, Recurrence(x, 1, "<", n, step)


POLYNOMIALS: dict[str, Callable[[ir.Type], Polynomial]] = {
    **{f"chebyshev_polynomial_{k}": (lambda k: lambda t: _chebyshev(k, False))(k) for k in "tuvw"},
    **{f"shifted_chebyshev_polynomial_{k}": (lambda k: lambda t: _chebyshev(k, True))(k) for k in "tuvw"},
    "hermite_polynomial_h": lambda t: _hermite(True, 512 if t == F64 else 128),
    "hermite_polynomial_he": lambda t: _hermite(False, 512 if t == F64 else 128),
    "laguerre_polynomial_l": lambda t: _laguerre,
    "legendre_polynomial_p": lambda t: _legendre,
}


# ---------------------------------------------------------------- zeta
_MACHEP = 1.11022302462515654042e-16
# Cephes' Euler–Maclaurin coefficients: (2k)! / B_2k.
_ZETA_A = (
    12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
    -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
    1.8152105401943546773e17, -7.1661652561756670113e18,
)


def _define_zeta(fn: ir.Function) -> None:
    x, q = fn.args
    entry, loop, step, tail, done = (fn.append_basic_block(s) for s in ("entry", "loop", "step", "tail", "done"))
    b = ir.IRBuilder(entry)
    o = FloatOps(b, F64)
    zero, one = o.c(0.0), o.c(1.0)
    neg_x = b.fneg(x)
    # The domain's edges, last to first so that the first that holds wins.
    q_pole = b.and_(o.cmp("<=", q, zero), o.cmp("==", q, call_intrinsic(b, "floor", [q])))
    q_fraction = b.and_(o.cmp("<=", q, zero), b.fcmp_unordered("!=", x, call_intrinsic(b, "floor", [x])))
    edge = ir.Constant(I1, 0)
    edge_value = o.c(0.0)
    for cond, value in reversed([
        (o.cmp("==", x, one), o.c(math.inf)),
        (o.cmp("<", x, one), o.c(math.nan)),
        (q_pole, o.c(math.inf)),
        (q_fraction, o.c(math.nan)),
    ]):
        edge = b.or_(edge, cond)
        edge_value = b.select(cond, value, edge_value)
    s0 = call_intrinsic(b, "pow", [q, neg_x])
    b.cbranch(edge, done, loop)

    # while (i < 9 || a <= 9): a += 1; b = a^-x; s += b; converged → return s
    b.position_at_end(loop)
    i, a, term, s = b.phi(I64, "i"), b.phi(F64, "a"), b.phi(F64, "b"), b.phi(F64, "s")
    i.add_incoming(o.i(0), entry)
    a.add_incoming(q, entry)
    term.add_incoming(zero, entry)
    s.add_incoming(s0, entry)
    b.cbranch(b.or_(o.icmp("<", i, o.i(9)), o.cmp("<=", a, o.c(9.0))), step, tail)

    b.position_at_end(step)
    a1 = o.add(a, one)
    term1 = call_intrinsic(b, "pow", [a1, neg_x])
    s1 = o.add(s, term1)
    converged = b.and_(o.cmp("<", o.mul(o.c(-_MACHEP), s1), term1), o.cmp("<", term1, o.mul(o.c(_MACHEP), s1)))
    i.add_incoming(b.add(i, o.i(1)), step)
    a.add_incoming(a1, step)
    term.add_incoming(term1, step)
    s.add_incoming(s1, step)
    b.cbranch(converged, done, loop)

    # The Euler–Maclaurin tail: twelve fixed steps, the sum frozen once a step's
    # relative size falls below MACHEP.
    b.position_at_end(tail)
    w = a
    total = o.sub(o.add(s, o.div(o.mul(term, w), o.sub(x, one))), o.mul(o.c(0.5), term))
    fac, k, t_b, finished = one, zero, term, ir.Constant(I1, 0)
    for coefficient in _ZETA_A:
        fac = o.mul(fac, o.add(x, k))
        t_b = o.div(t_b, w)
        t = o.div(o.mul(fac, t_b), o.c(coefficient))
        updated = o.add(total, t)
        small = o.cmp("<", o.abs(o.div(t, updated)), o.c(_MACHEP))
        total = b.select(finished, total, updated)
        finished = b.or_(finished, small)
        k = o.add(k, one)
        fac = o.mul(fac, o.add(x, k))
        t_b = o.div(t_b, w)
        k = o.add(k, one)
    b.branch(done)

    b.position_at_end(done)
    result = b.phi(F64, "zeta")
    result.add_incoming(edge_value, entry)
    result.add_incoming(s1, step)
    result.add_incoming(total, tail)
    b.ret(result)


# ---------------------------------------------------------------- emitters
def _helper(b: ir.IRBuilder, name: str, t: ir.Type, define: Callable[[ir.Function], None]) -> ir.Function:
    """The module's internal function `name` on (t, t) → t, defined on first use."""
    fn = b.module.globals.get(name)
    if fn is None:
        fn = ir.Function(b.module, ir.FunctionType(t, [t, t]), name)
        fn.linkage = "internal"
        define(fn)
    return fn


def _zeta(b: ir.IRBuilder, dtype: str, x: ir.Value, q: ir.Value) -> ir.Value:
    fn = _helper(b, "strata.zeta", F64, _define_zeta)

    def scalar(x, q):
        if x.type == F64:
            return b.call(fn, [x, q])
        return b.fptrunc(b.call(fn, [b.fpext(x, F64), b.fpext(q, F64)]), x.type)

    return lane_by_lane(b, scalar, [x, q])


def _polynomial(name: str):
    def emit(b: ir.IRBuilder, dtype: str, x: ir.Value, n: ir.Value) -> ir.Value:
        def scalar(x, n):
            t = x.type
            body = POLYNOMIALS[name](t)
            fn = _helper(b, f"strata.{name}.{'f64' if t == F64 else 'f32'}", t, lambda f: _define_polynomial(f, body))
            return b.call(fn, [x, n])

        return lane_by_lane(b, scalar, [x, n])

    return emit


# prim op name → emitter (b, dtype, x, n), for llvm_scalar_ops.FLOAT_OPS
SPECIAL_LOOP_EMITTERS = {"zeta": _zeta, **{name: _polynomial(name) for name in POLYNOMIALS}}
