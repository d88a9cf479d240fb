"""LLVM scalar functions for prim.igamma and prim.igammac: the regularized lower and
upper incomplete gamma functions, as ATen's calc_igamma and calc_igammac compute them
(aten/src/ATen/native/Math.h, torch 2.13, after SciPy's igam.c and Boost's Lanczos
sum): the boundary values, then DLMF 8.12.3/8.12.4's asymptotic series where a ~ x,
else the power series (8.11.4, 8.7.3) or the continued fraction (8.9.2), each a real
loop that stops where ATen's stops.

Each function computes in the operands' type T (f16/bf16 arrive as f32, as ATen's
Half kernels call calc_igamma<float>), with the double literals of the C++ source
promoting to double where C++ promotes them (`0.4 * fabs(a)`, `x > 1.1`, the last
step of the asymptotic series), and `a*b - c` as one fma where eager's build
contracts it. A NaN that no boundary rule catches gives NaN at once: ATen's loops
would run their 2000 steps to the same NaN.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from llvmlite import ir

from strata.codegen.igamma_table import (
    BIG, BIGINV, EXP1, IGAMMA_D, LANCZOS_DENOM, LANCZOS_G, LANCZOS_NUM, MACHEP, MAXITER, MAXLOG, PI_FLOAT,
)
from strata.codegen.llvm_dtypes import I1, I32
from strata.codegen.llvm_lanes import call_intrinsic, lane_by_lane
from strata.codegen.llvm_math import F64, call_libm
from strata.codegen.llvm_special_loops import FloatOps


class _Scalar(FloatOps):
    """Builds one function of type T: C's arithmetic on T and double, loops, branches."""

    def __init__(self, fn: ir.Function):
        super().__init__(ir.IRBuilder(fn.append_basic_block("entry")), fn.args[0].type)
        self.fn = fn
        self.is_double = self.t == F64
        self.machep = MACHEP[0 if self.is_double else 1]

    # constants: `static scalar_t` ones are rounded to T (c), double literals stay double
    def d(self, v: float) -> ir.Constant:
        return ir.Constant(F64, v)

    def i(self, v: int) -> ir.Constant:
        return ir.Constant(I32, v)

    def wide(self, v: ir.Value) -> ir.Value:
        return v if v.type == F64 else self.b.fpext(v, F64)

    def narrow(self, v: ir.Value) -> ir.Value:
        return v if self.is_double else self.b.fptrunc(v, self.t)

    def fms(self, a, b, c):
        """a*b - c, contracted."""
        return call_intrinsic(self.b, "fma", [a, b, self.b.fneg(c)])

    def sqrt(self, a):
        return call_intrinsic(self.b, "sqrt", [a])

    def libm(self, name: str, a):
        return call_libm(self.b, name, [a])

    def cmp(self, op: str, a, b):
        """C's comparison: false on NaN, but != (true on NaN)."""
        if op == "!=":
            return self.b.fcmp_unordered("!=", a, b)
        return self.b.fcmp_ordered(op, a, b)

    def isinf(self, a):
        return self.cmp("==", self.abs(a), self.c(math.inf))

    def call(self, fn: ir.Function, *args):
        return self.b.call(fn, list(args))

    def loop(
        self,
        init: Sequence[ir.Value],
        keep_going: Callable[[list[ir.Value]], ir.Value],
        step: Callable[[list[ir.Value]], tuple[list[ir.Value], ir.Value]],
    ) -> list[ir.Value]:
        """`while (keep_going(s)) { s = step(s); if (stop) break; }` from s = init; the
        state where it ended."""
        b = self.b
        before = b.block
        head, body, done = (self.fn.append_basic_block(n) for n in ("head", "body", "done"))
        b.branch(head)
        b.position_at_end(head)
        state = [b.phi(v.type) for v in init]
        for p, v in zip(state, init):
            p.add_incoming(v, before)
        b.cbranch(keep_going(state), body, done)
        b.position_at_end(body)
        new, stop = step(state)
        end = b.block
        for p, v in zip(state, new):
            p.add_incoming(v, end)
        b.cbranch(stop, done, head)
        b.position_at_end(done)
        out = []
        for p, v in zip(state, new):
            q = b.phi(v.type)
            q.add_incoming(p, head)
            q.add_incoming(v, end)
            out.append(q)
        return out

    def choose(self, cases: Sequence[tuple[ir.Value, Callable[[], ir.Value]]], otherwise: Callable[[], ir.Value]) -> ir.Value:
        """The value of the first case whose condition holds, each computed only on its
        own branch (`if (c) return v; ...`)."""
        b = self.b
        merge = self.fn.append_basic_block("merge")
        incoming = []
        for cond, value in cases:
            then, other = self.fn.append_basic_block("then"), self.fn.append_basic_block("else")
            b.cbranch(cond, then, other)
            b.position_at_end(then)
            incoming.append((value(), b.block))
            b.branch(merge)
            b.position_at_end(other)
        incoming.append((otherwise(), b.block))
        b.branch(merge)
        b.position_at_end(merge)
        phi = b.phi(self.t)
        for v, block in incoming:
            phi.add_incoming(v, block)
        return phi


def _function(module: ir.Module, name: str, t: ir.Type, arity: int, define: Callable[[_Scalar], ir.Value]) -> ir.Function:
    """The module's internal function `name.<T>` on `arity` values of T, defined on first use."""
    full = f"strata.{name}.{'f64' if t == F64 else 'f32'}"
    fn = module.globals.get(full)
    if fn is None:
        fn = ir.Function(module, ir.FunctionType(t, [t] * arity), full)
        fn.linkage = "internal"
        s = _Scalar(fn)
        s.b.ret(define(s))
    return fn


# ---------------------------------------------------------------- helpers of Math.h
def _lanczos_sum_expg_scaled(s: _Scalar, a: ir.Value) -> ir.Value:
    """ratevl over Boost's coefficients: in 1/a, coefficients reversed, where |a| > 1
    (the power of a in front is a^0)."""
    big = s.cmp(">", s.abs(a), s.c(1.0))
    y = s.select(big, s.div(s.c(1.0), a), a)

    def horner(coefficients):
        acc = s.c(coefficients[0])
        for c in coefficients[1:]:
            acc = call_intrinsic(s.b, "fma", [acc, y, s.c(c)])
        return acc

    num = s.select(big, horner(LANCZOS_NUM[::-1]), horner(LANCZOS_NUM))
    denom = s.select(big, horner(LANCZOS_DENOM[::-1]), horner(LANCZOS_DENOM))
    return s.div(num, denom)


def _fac(s: _Scalar) -> ir.Value:
    """_igam_helper_fac: x^a e^-x / Gamma(a), through Lanczos where a ~ x."""
    a, x = s.fn.args
    maxlog = MAXLOG[0 if s.is_double else 1]
    g = s.c(LANCZOS_G)

    def direct():
        ax = s.sub(s.fms(a, s.libm("log", x), x), s.libm("lgamma", a))
        return s.select(s.cmp("<", ax, s.c(-maxlog)), s.c(0.0), s.libm("exp", ax))

    def lanczos():
        fac = s.sub(s.add(a, g), s.c(0.5))
        res = s.div(s.sqrt(s.div(fac, s.c(EXP1))), _lanczos_sum_expg_scaled(s, a))
        small = s.b.and_(s.cmp("<", a, s.c(200.0)), s.cmp("<", x, s.c(200.0)))
        near = s.mul(res, s.mul(s.libm("exp", s.sub(a, x)), call_intrinsic(s.b, "pow", [s.div(x, fac), a])))
        num = s.add(s.sub(s.sub(x, a), g), s.c(0.5))
        numfac = s.div(num, fac)
        log_part = s.sub(s.libm("log1p", numfac), numfac)
        tail = s.div(s.mul(s.wide(x), s.sub(s.d(0.5), s.wide(g))), s.wide(fac))
        if s.is_double:
            exponent = call_intrinsic(s.b, "fma", [a, log_part, tail])
        else:
            exponent = s.add(s.wide(s.mul(a, log_part)), tail)
        far = s.narrow(s.mul(s.wide(res), call_libm(s.b, "exp", [exponent])))
        return s.select(small, near, far)

    far_apart = s.cmp(">", s.wide(s.abs(s.sub(a, x))), s.mul(s.d(0.4), s.wide(s.abs(a))))
    return s.choose([(far_apart, direct)], lanczos)


def _igam_series(s: _Scalar) -> ir.Value:
    """_igam_helper_series: DLMF 8.11.4."""
    a, x = s.fn.args
    ax = s.call(_function(s.fn.module, "igam_fac", s.t, 2, _fac), a, x)

    def series():
        def step(st):
            i, r, c, ans = st
            r = s.add(r, s.c(1.0))
            c = s.mul(c, s.div(x, r))
            ans = s.add(ans, c)
            return [s.b.add(i, s.i(1)), r, c, ans], s.cmp("<=", c, s.mul(s.c(s.machep), ans))

        _, _, _, ans = s.loop([s.i(0), a, s.c(1.0), s.c(1.0)], lambda st: s.b.icmp_signed("<", st[0], s.i(MAXITER)), step)
        return s.div(s.mul(ans, ax), a)

    return s.choose([(s.cmp("==", ax, s.c(0.0)), lambda: s.c(0.0))], series)


def _igamc_series(s: _Scalar) -> ir.Value:
    """_igamc_helper_series: DLMF 8.7.3."""
    a, x = s.fn.args

    def step(st):
        n, fac, total = st
        nf = s.of_int(n)
        fac = s.mul(fac, s.div(s.b.fneg(x), nf))
        term = s.div(fac, s.add(a, nf))
        total = s.add(total, term)
        return [s.b.add(n, s.i(1)), fac, total], s.cmp("<=", s.abs(term), s.mul(s.c(s.machep), s.abs(total)))

    _, _, total = s.loop([s.i(1), s.c(1.0), s.c(0.0)], lambda st: s.b.icmp_signed("<", st[0], s.i(MAXITER)), step)
    logx = s.libm("log", x)
    term = s.b.fneg(s.libm("expm1", s.fms(a, logx, s.libm("lgamma", s.add(s.c(1.0), a)))))
    scale = s.libm("exp", s.fms(a, logx, s.libm("lgamma", a)))
    return call_intrinsic(s.b, "fma", [s.b.fneg(scale), total, term])


def _igamc_continued_fraction(s: _Scalar) -> ir.Value:
    """_igamc_helper_continued_fraction: DLMF 8.9.2, rescaled past BIG."""
    a, x = s.fn.args
    k = 0 if s.is_double else 1
    ax = s.call(_function(s.fn.module, "igam_fac", s.t, 2, _fac), a, x)

    def fraction():
        y = s.sub(s.c(1.0), a)
        z = s.add(s.add(x, y), s.c(1.0))
        pkm1 = s.add(x, s.c(1.0))
        qkm1 = s.mul(z, x)
        init = [s.i(0), s.c(0.0), y, z, s.c(1.0), x, pkm1, qkm1, s.div(pkm1, qkm1)]

        def step(st):
            i, c, y, z, pkm2, qkm2, pkm1, qkm1, ans = st
            c = s.add(c, s.c(1.0))
            y = s.add(y, s.c(1.0))
            z = s.add(z, s.c(2.0))
            yc = s.mul(y, c)
            pk = s.fms(pkm1, z, s.mul(pkm2, yc))
            qk = s.fms(qkm1, z, s.mul(qkm2, yc))
            nonzero = s.cmp("!=", qk, s.c(0.0))
            r = s.div(pk, qk)
            t = s.select(nonzero, s.abs(s.div(s.sub(ans, r), r)), s.c(1.0))
            ans = s.select(nonzero, r, ans)
            big = s.cmp(">", s.abs(pk), s.c(BIG[k]))
            scaled = [s.select(big, s.mul(v, s.c(BIGINV[k])), v) for v in (pkm1, qkm1, pk, qk)]
            return [s.b.add(i, s.i(1)), c, y, z, *scaled, ans], s.cmp("<=", t, s.c(s.machep))

        out = s.loop(init, lambda st: s.b.icmp_signed("<", st[0], s.i(MAXITER)), step)
        return s.mul(out[-1], ax)

    return s.choose([(s.cmp("==", ax, s.c(0.0)), lambda: s.c(0.0))], fraction)


def _table(module: ir.Module, t: ir.Type) -> ir.GlobalVariable:
    """IGAMMA_D as a constant [625 x T] (a `static constexpr scalar_t` table)."""
    name = f"strata.igamma_d.{'f64' if t == F64 else 'f32'}"
    g = module.globals.get(name)
    if g is None:
        ty = ir.ArrayType(t, 25 * 25)
        g = ir.GlobalVariable(module, ty, name)
        g.initializer = ir.Constant(ty, [ir.Constant(t, v) for row in IGAMMA_D for v in row])
        g.global_constant = True
        g.linkage = "internal"
    return g


def _asymptotic(igam: bool) -> Callable[[_Scalar], ir.Value]:
    """_igam_helper_asymptotic_series: DLMF 8.12.3 (igam) or 8.12.4."""

    def define(s: _Scalar) -> ir.Value:
        a, x = s.fn.args
        b = s.b
        sgn = -1.0 if igam else 1.0
        table = _table(s.fn.module, s.t)
        lam = s.div(x, a)
        sigma = s.div(s.sub(x, a), a)
        root = s.sqrt(s.mul(s.c(-2.0), s.sub(s.libm("log1p", sigma), sigma)))
        eta = s.select(s.cmp(">", lam, s.c(1.0)), root, s.select(s.cmp("<", lam, s.c(1.0)), b.fneg(root), s.c(0.0)))
        res = s.mul(s.c(0.5), s.libm("erfc", s.mul(s.mul(s.c(sgn), eta), s.sqrt(s.div(a, s.c(2.0))))))
        machep = s.c(s.machep)

        def outer(st):
            k, total, afac, absold = st
            row = b.mul(k, s.i(25))

            def inner(it):
                n, ck, ep = it
                ep = s.mul(eta, ep)
                d = b.load(b.gep(table, [s.i(0), b.add(row, n)], inbounds=True))
                ckterm = s.mul(d, ep)
                ck = s.add(ck, ckterm)
                return [b.add(n, s.i(1)), ck, ep], s.cmp("<", s.abs(ckterm), s.mul(machep, s.abs(ck)))

            d0 = b.load(b.gep(table, [s.i(0), row], inbounds=True))
            _, ck, _ = s.loop([s.i(1), d0, s.c(1.0)], lambda it: b.icmp_signed("<", it[0], s.i(25)), inner)
            term = s.mul(ck, afac)
            absterm = s.abs(term)
            grew = s.cmp(">", absterm, absold)
            summed = s.add(total, term)
            total = s.select(grew, total, summed)
            stop = b.or_(grew, s.cmp("<", absterm, s.mul(machep, s.abs(summed))))
            return [b.add(k, s.i(1)), total, s.div(afac, a), absterm], stop

        init = [s.i(0), s.c(0.0), s.c(1.0), s.c(math.inf)]
        _, total, _, _ = s.loop(init, lambda st: b.icmp_signed("<", st[0], s.i(25)), outer)
        # sgn * exp(-0.5*a*eta*eta) * sum / sqrt(2 * pi<float> * a), the first factors in double
        e = call_libm(b, "exp", [s.mul(s.mul(s.mul(s.d(-0.5), s.wide(a)), s.wide(eta)), s.wide(eta))])
        root2pia = s.sqrt(s.mul(s.c(2 * PI_FLOAT), a))
        correction = s.div(s.mul(s.mul(s.d(sgn), e), s.wide(total)), s.wide(root2pia))
        return s.narrow(s.add(s.wide(res), correction))

    return define


# ---------------------------------------------------------------- calc_igamma(c)
def _boundary(s: _Scalar, lower: bool) -> tuple[ir.Value, ir.Value]:
    """(whether a boundary rule of calc_igamma / calc_igammac holds, its value); NaN
    operands that none catches count as one, of value NaN."""
    a, x = s.fn.args
    b = s.b
    nan, zero, one = s.c(math.nan), s.c(0.0), s.c(1.0)
    low, high = (zero, one) if lower else (one, zero)
    rules = [
        (b.or_(s.cmp("<", x, zero), s.cmp("<", a, zero)), nan),
        (s.cmp("==", a, zero), s.select(s.cmp(">", x, zero), high, nan)),
        (s.cmp("==", x, zero), low),
        (s.isinf(a), s.select(s.isinf(x), nan, low)),
        (s.isinf(x), high),
        (b.fcmp_unordered("uno", a, x), nan),
    ]
    holds, value = ir.Constant(I1, 0), nan
    for cond, v in reversed(rules):
        holds = b.or_(holds, cond)
        value = s.select(cond, v, value)
    return holds, value


def _asymptotic_regime(s: _Scalar) -> ir.Value:
    a, x = s.fn.args
    b = s.b
    absxma_a = s.div(s.abs(s.sub(x, a)), a)
    middle = b.and_(b.and_(s.cmp(">", a, s.c(20.0)), s.cmp("<", a, s.c(200.0))), s.cmp("<", absxma_a, s.c(0.3)))
    large = b.and_(s.cmp(">", a, s.c(200.0)), s.cmp("<", absxma_a, s.div(s.c(4.5), s.sqrt(a))))
    return b.or_(middle, large)


def _calc_igammac(s: _Scalar) -> ir.Value:
    a, x = s.fn.args
    b = s.b
    m = s.fn.module
    boundary, value = _boundary(s, lower=False)
    wx, wa = s.wide(x), s.wide(a)
    above = s.cmp(">", wx, s.d(1.1))
    below = s.cmp("<=", x, s.c(0.5))
    # x > 1.1: x < a; x <= 0.5: -0.4 / log(x) < a; else x * 1.1 < a
    lower_series = s.select(
        above, s.cmp("<", x, a),
        s.select(below, s.cmp("<", s.div(s.d(-0.4), s.wide(s.libm("log", x))), wa), s.cmp("<", s.mul(wx, s.d(1.1)), wa)),
    )
    return s.choose(
        [
            (boundary, lambda: value),
            (_asymptotic_regime(s), lambda: s.call(_function(m, "igamc_asymptotic", s.t, 2, _asymptotic(False)), a, x)),
            (lower_series, lambda: s.sub(s.c(1.0), s.call(_function(m, "igam_series", s.t, 2, _igam_series), a, x))),
            (above, lambda: s.call(_function(m, "igamc_fraction", s.t, 2, _igamc_continued_fraction), a, x)),
        ],
        lambda: s.call(_function(m, "igamc_series", s.t, 2, _igamc_series), a, x),
    )


def _calc_igamma(s: _Scalar) -> ir.Value:
    a, x = s.fn.args
    m = s.fn.module
    boundary, value = _boundary(s, lower=True)
    upper = s.b.and_(s.cmp(">", x, s.c(1.0)), s.cmp(">", x, a))
    return s.choose(
        [
            (boundary, lambda: value),
            (_asymptotic_regime(s), lambda: s.call(_function(m, "igam_asymptotic", s.t, 2, _asymptotic(True)), a, x)),
            (upper, lambda: s.sub(s.c(1.0), s.call(_function(m, "igammac", s.t, 2, _calc_igammac), a, x))),
        ],
        lambda: s.call(_function(m, "igam_series", s.t, 2, _igam_series), a, x),
    )


def _emitter(name: str, define: Callable[[_Scalar], ir.Value]):
    def emit(b: ir.IRBuilder, dtype: str, a: ir.Value, x: ir.Value) -> ir.Value:
        return lane_by_lane(b, lambda a, x: b.call(_function(b.module, name, a.type, 2, define), [a, x]), [a, x])

    return emit


# prim op name → emitter (b, dtype, a, x), for llvm_scalar_ops.FLOAT_OPS
IGAMMA_EMITTERS = {"igamma": _emitter("igamma", _calc_igamma), "igammac": _emitter("igammac", _calc_igammac)}
