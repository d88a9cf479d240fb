"""Index and size expressions (sympy) printed as integer code for Triton and Python.

Sizes, loop indices and offsets into a buffer are never negative, so `floor(a/b)`
prints as `a // b` and `Mod(a, b)` as `a % b`: Triton's integer division truncates and
Python's floors, which agree there. The same text therefore serves kernel bodies and the
Python launcher. One sympy cannot prove non-negative (over an `n…` or `m…` symbol, or
`floor(-s0/5)`) is printed in a form that floors under either rounding (`((a % m) + m) % m`), for a
positive divisor; a division outside floor is one torch proved exact (`s0/4`).
"""

from __future__ import annotations

import sympy

from strata.codegen.errors import CodegenError
from strata.dialects.types import may_be_negative
from strata.runtime.index_values import exact_fraction, sum_divides

INT32_LIMIT = 2**31


def int_code(expr: sympy.Expr, python: bool = False) -> str:
    """`expr` as integer code (Python's where `python`: launcher sizes)."""
    if expr.is_Integer:
        return str(int(expr))
    if expr.is_Symbol:
        return expr.name
    if sum_divides(expr):  # an exact division spread over a sum (x0*(s + 1)/2): one quotient
        return _quotient_code(*exact_fraction(expr), False, expr, python)
    if isinstance(expr, sympy.Add):
        return _sum_code(expr, python)
    if isinstance(expr, sympy.Mul):
        if any(a.is_Rational and not a.is_Integer for a in expr.args):
            return int_code(sympy.floor(expr, evaluate=False), python)  # an exact division
        return _product_code(expr, python)
    if isinstance(expr, sympy.Pow) and expr.exp.is_Integer and expr.exp > 0:
        return "*".join([_factor_code(expr.base, python)] * int(expr.exp))
    if isinstance(expr, (sympy.floor, sympy.ceiling)):
        num, den = exact_fraction(expr.args[0])
        return _quotient_code(num, den, isinstance(expr, sympy.ceiling), expr, python)
    if isinstance(expr, sympy.Mod):
        a, m = expr.args
        if (may_be_negative(a) or may_be_negative(m)) and not python:
            return _floor_mod_code(a, m)  # k % -4 of a Python int: the divisor's sign
        return f"(({int_code(a, python)}) % ({int_code(m, python)}))"
    if isinstance(expr, sympy.Abs):
        return f"{'abs' if python else 'tl.abs'}({int_code(expr.args[0], python)})"
    if isinstance(expr, (sympy.Max, sympy.Min)):
        if python:
            fn = "max" if isinstance(expr, sympy.Max) else "min"
            return f"{fn}({', '.join(int_code(a, python) for a in expr.args)})"
        # a bound of an item() value or a shape (a roll by min(-n, -1)): pairwise
        fn = "tl.maximum" if isinstance(expr, sympy.Max) else "tl.minimum"
        code = int_code(expr.args[0])
        for a in expr.args[1:]:
            code = f"{fn}({code}, {int_code(a)})"
        return code
    raise CodegenError(
        f"index expression {expr} ({type(expr).__name__}) is not supported by the Triton code generator"
    )


def _quotient_code(num: sympy.Expr, den: sympy.Expr, ceiling: bool, expr: sympy.Expr, python: bool) -> str:
    """floor(num/den) (ceiling where asked) of integer polynomials num and den, as `expr` is."""
    if den == 1:
        return int_code(num, python)
    if may_be_negative(num) and not python:
        if may_be_negative(den):
            raise CodegenError(f"index expression {expr} divides by a value that may be negative")
        if ceiling:  # ceiling(a) = -floor(-a)
            return f"(-{_quotient_code(-num, den, False, expr, python)})"
        # exact once the floored remainder is taken off, so truncation floors too
        return f"((({int_code(num, python)}) - {_floor_mod_code(num, den)}) // ({int_code(den, python)}))"
    if ceiling:
        num = num + den - 1
    return f"(({int_code(num, python)}) // ({int_code(den, python)}))"


def _floor_mod_code(a: sympy.Expr, m: sympy.Expr) -> str:
    """Python's a % m (the sign of m, either), whether `%` truncates (Triton) or floors
    (Python)."""
    a_code, m_code = int_code(a), int_code(m)
    return f"(((({a_code}) % ({m_code})) + ({m_code})) % ({m_code}))"


def _sum_code(expr: sympy.Add, python: bool) -> str:
    out = ""
    for term in expr.as_ordered_terms():
        code = int_code(term, python)
        if not out:
            out = code
        elif code.startswith("-"):
            out += f" - {code[1:]}"
        else:
            out += f" + {code}"
    return out


def _product_code(expr: sympy.Mul, python: bool) -> str:
    coeff, rest = expr.as_coeff_Mul()
    if not coeff.is_Integer:
        raise CodegenError(f"index expression {expr} has a non-integer coefficient outside floor()")
    body = "*".join(_factor_code(f, python) for f in sympy.Mul.make_args(rest))
    if coeff == 1:
        return body
    if coeff == -1:
        return f"-{body}"
    return f"{int(coeff)}*{body}"


def _factor_code(expr: sympy.Expr, python: bool) -> str:
    code = int_code(expr, python)
    return f"({code})" if isinstance(expr, (sympy.Add, sympy.Mul)) or code.startswith("-") else code


def upper_bound(expr: sympy.Expr, maxima: dict[str, int]) -> int | None:
    """A bound on |expr| and on |every intermediate value| when each symbol ranges over
    0..maxima[name]; None when a symbol has no known maximum."""
    if expr.is_Integer:
        return abs(int(expr))
    if expr.is_Symbol:
        return maxima.get(expr.name)
    bounds = [upper_bound(a, maxima) for a in expr.args]
    if any(b is None for b in bounds):
        return None
    if isinstance(expr, sympy.Add):
        return sum(bounds)
    if isinstance(expr, sympy.Mul):
        out = 1
        for b in bounds:
            out *= b
        return out
    if isinstance(expr, sympy.Pow):
        return bounds[0] ** bounds[1] if expr.exp.is_Integer and expr.exp > 0 else None
    if isinstance(expr, (sympy.floor, sympy.ceiling)):
        # the printed numerator of floor(p/q) is itself computed: bound it.
        num, _ = sympy.fraction(sympy.together(expr.args[0]))
        return upper_bound(num, maxima)
    if isinstance(expr, (sympy.Mod, sympy.Max, sympy.Min)):
        return max(bounds)
    return None


def fits_int32(exprs: list[sympy.Expr], maxima: dict[str, int]) -> bool:
    """Whether every expression, and every step of computing it, stays below 2**31."""
    for e in exprs:
        bound = upper_bound(e, maxima)
        if bound is None or bound >= INT32_LIMIT:
            return False
    return True


def merged_index(expr: sympy.Expr, dims: dict[str, list[sympy.Expr]]) -> tuple[sympy.Expr, dict[str, tuple[str, int, int]]] | None:
    """`expr` over merged loop variables: index simplification.

    `dims` maps a loop-variable prefix ("x", "r") to its domain's dims. An index that
    is affine in the loop variables walks runs of adjacent dims as one flat counter
    when each dim's coefficient is the next one's times the next dim's size, as with
    `4096*x0 + x1` over dims [8192, 4096], which is the flat `xindex`. Each run
    becomes one variable, `flat // stride % size` (each part only where needed), so
    the kernel divides less and Triton's contiguity analysis sees consecutive
    addresses even when the sizes are symbolic.

    Returns the new expression and, for each variable it names, (prefix, first dim,
    last dim) of its run; the variable of a run over the whole domain is the flat
    index itself (`xindex`, `rindex`). None when `expr` is not affine in the loop
    variables (floor or Mod of them, products of two): it is then printed as it is."""
    loop = {f"{p}{k}": (p, k) for p, ds in dims.items() for k in range(len(ds))}
    used = sorted((s for s in expr.free_symbols if s.name in loop), key=lambda s: s.name)
    if not used:
        return expr, {}
    try:
        poly = sympy.Poly(sympy.expand(expr), *used)
    except sympy.PolynomialError:
        return None
    if poly.total_degree() > 1:
        return None
    coeffs = {s.name: poly.coeff_monomial(s) for s in used}
    if any(c.free_symbols & set(used) for c in coeffs.values()):
        return None
    out = poly.coeff_monomial(1)
    names: dict[str, tuple[str, int, int]] = {}
    for prefix, ds in dims.items():
        runs: list[list[int]] = []
        for k, d in enumerate(ds):
            if d == 1:
                continue  # a unit dim's variable is 0: it neither adds nor separates
            c = coeffs.get(f"{prefix}{k}", 0)
            if c == 0:
                runs.append([])
                continue
            if runs and runs[-1]:
                j = runs[-1][-1]
                if sympy.expand(coeffs[f"{prefix}{j}"] - c * d) == 0:
                    runs[-1].append(k)
                    continue
            runs.append([k])
        for run in runs:
            if not run:
                continue
            first, last = run[0], run[-1]
            name = _run_name(prefix, first, last, ds)
            names[name] = (prefix, first, last)
            out += coeffs[f"{prefix}{last}"] * sympy.Symbol(name, integer=True, nonnegative=True)
    return out, names


def _run_name(prefix: str, first: int, last: int, dims: list[sympy.Expr]) -> str:
    outer = all(d == 1 for d in dims[:first])
    inner = all(d == 1 for d in dims[last + 1 :])
    if outer and inner:
        return f"{prefix}index"
    return f"{prefix}{first}" if first == last else f"{prefix}{first}_{last}"


def run_code(flat: str, dims: list[sympy.Expr], first: int, last: int) -> str:
    """The code of a merged run's variable: `flat // stride % size`."""
    stride = sympy.Mul(*dims[last + 1 :])
    size = sympy.Mul(*dims[first : last + 1])
    code = flat if stride == 1 else f"{flat} // {_atom(int_code(stride))}"
    if not all(d == 1 for d in dims[:first]):
        code = f"{code} % {_atom(int_code(size))}"
    return code


def _atom(code: str) -> str:
    return code if code.replace("_", "a").isalnum() else f"({code})"
