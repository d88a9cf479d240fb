"""Scalar ops of kernel bodies (prim elementwise ops, where, conversions, constants)
as Triton expressions, with eager PyTorch's semantics.

f16 and bf16 operands are computed in f32 and rounded back after every op, as eager
PyTorch does. Float math calls libdevice on CUDA (precise in f32 and f64; where the f32
result is rounded to f16/bf16 at once, tl's faster exp and log and `/`: RELAXED_NATIVE) and the
formulas of triton_math.INTERPRETER in Triton's interpreter, which cannot call
libdevice (there the functions tl has, exp and the rest of NATIVE, run in f64). Each rule gets its operands as names of SSA values (or casts of them), so
it may repeat them freely.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import torch

from strata.codegen.errors import CodegenError
from strata.codegen.triton_bits import RULES as BIT_RULES
from strata.codegen.triton_special_loops import NAMES as SPECIAL_LOOP_NAMES
from strata.codegen.triton_igamma import NAMES as IGAMMA_NAMES
from strata.dialects.prim import ELEMENTWISE
from strata.dialects.types import DTYPES

TL_DTYPE = {
    "f16": "tl.float16",
    "bf16": "tl.bfloat16",
    "f32": "tl.float32",
    "f64": "tl.float64",
    "i8": "tl.int8",
    "i16": "tl.int16",
    "i32": "tl.int32",
    "i64": "tl.int64",
    "u8": "tl.uint8",
    "i1": "tl.int1",
}
FLOATS = ("f16", "bf16", "f32", "f64")
LOW_PRECISION = ("f16", "bf16")
BITS = {"i1": 1, "i8": 8, "u8": 8, "i16": 16, "i32": 32, "i64": 64}

# Float functions with the same name in libdevice (CUDA) and in tl (the interpreter).
NATIVE = ("exp", "exp2", "log", "log2", "sin", "cos", "erf")
# Those whose tl form on CUDA (ex2.approx, lg2.approx: about 2 ulp of f32, relative)
# may stand in for libdevice's in an f32 value that is rounded to f16/bf16 at once,
# as is f32 division's `/` (div.full, 2 ulp) for div_rn: the rounding to a 16-bit
# type, 2^16 times coarser, hides the difference but in a near-tie. H200, a bf16
# chain of tanh, sigmoid and exp over 8192x4096: 81 us precise, 67 us relaxed.
RELAXED_NATIVE = ("exp", "exp2", "log", "log2")
# Float-only prim ops that are libdevice functions of the same name.
FLOAT_FUNCTIONS = (
    "tan asin acos atan sinh cosh tanh asinh acosh atanh erfc erfcx erfinv lgamma expm1 log1p log10 "
    "atan2 hypot copysign"
).split()
# libdevice functions by prim name; in the interpreter, which cannot call libdevice,
# a helper of triton_math.INTERPRETER with the libdevice name stands in.
LIBDEVICE = {**{n: n for n in FLOAT_FUNCTIONS}, "round": "rint", "trunc": "trunc", "fmod": "fmod", "pow": "pow"}


# Float ops whose CUDA lowering keeps every rounding eager makes when the kernel is
# compiled with FMA contraction (KernelSource.fp_fusion): a product is written as PTX
# mul.rn (triton_math's _mul_rn), which neither LLVM nor ptxas fuses into an add, and
# these libdevice functions give the same bits with contraction on as off (checked on
# 2^23 inputs each, H200, Triton 3.6; in f32 only pow differs, in f64 also asinh,
# acosh, atanh, log1p). Contraction inside libdevice and the PTX of division is then
# free: 80.4 -> 78.3 us on the bf16 chain above.
_CONTRACTION_SAFE = frozenset({
    "neg", "abs", "sign", "floor", "ceil", "round", "trunc", "add", "sub", "mul", "div",
    "fmod", "maximum", "minimum", "sqrt", "rsqrt", "reciprocal", "sigmoid", *NATIVE, *FLOAT_FUNCTIONS,
})
CONTRACTION_SAFE = {"f32": _CONTRACTION_SAFE, "f64": _CONTRACTION_SAFE - {"asinh", "acosh", "atanh", "log1p"}}


def tl_dtype(dtype: str) -> str:
    try:
        return TL_DTYPE[dtype]
    except KeyError:
        raise CodegenError(f"dtype {dtype} has no Triton type") from None


def literal(value: float | int | bool, dtype: str) -> str:
    """A Python literal for a constant of `dtype`."""
    if dtype in FLOATS:
        value = float(value)
        if math.isnan(value):
            return 'float("nan")'
        if math.isinf(value):
            return 'float("inf")' if value > 0 else '-float("inf")'
        return repr(value)
    if dtype == "i1":
        return "True" if value else "False"
    # two's complement wrap into the type's range (IR integers may be written unsigned)
    bits = BITS[dtype]
    value = int(value) % 2**bits
    if dtype != "u8" and value >= 2 ** (bits - 1):
        value -= 2**bits
    return str(value)


class ScalarOps:
    """Builds expressions for one kernel and records the helper functions they call."""

    def __init__(self, device: str):
        self.device = device
        self.helpers: set[str] = set()
        # an op being written whose f32 result is rounded to f16/bf16 (RELAXED_NATIVE)
        self.relaxed = False
        # the kernel is compiled with FMA contraction: products keep their rounding
        self.contracting = False

    @property
    def cuda(self) -> bool:
        return self.device == "cuda"

    def helper(self, name: str, *args: str) -> str:
        self.helpers.add(name)
        return f"_{name}({', '.join(args)})"

    def native(self, fn: str, dtype: str, *args: str) -> str:
        if self.cuda:
            if self.relaxed and dtype == "f32" and fn in RELAXED_NATIVE:
                return f"tl.{fn}({', '.join(args)})"
            return f"libdevice.{fn}({', '.join(args)})"
        if dtype == "f64":
            return f"tl.{fn}({', '.join(args)})"
        # The interpreter's tl.exp & co. are numpy's f32 functions, often an ulp off
        # (exp: 4 results in 10), which chains of them amplify; numpy's f64 functions
        # rounded to f32 are correctly rounded, as eager's nearly always are.
        wide = ", ".join(f"({a}).to(tl.float64)" for a in args)
        return f"tl.{fn}({wide}).to({tl_dtype(dtype)})"

    def libdevice(self, prim_name: str, *args: str) -> str:
        """A libdevice function on CUDA, its stand-in helper in the interpreter."""
        fn = LIBDEVICE[prim_name]
        if self.cuda:
            return f"libdevice.{fn}({', '.join(args)})"
        return self.helper(fn, *args)

    def elementwise(self, name: str, dtype: str, args: list[str], rounded_to_16_bits: bool = False) -> str:
        """`prim.<name>` on operands of `dtype`; `rounded_to_16_bits`: its result is
        only ever converted to f16/bf16 (RELAXED_NATIVE)."""
        rule = RULES.get(name)
        if rule is None:
            raise CodegenError(f"prim.{name} has no Triton lowering")
        bool_result = ELEMENTWISE[name][2]
        try:
            if dtype in LOW_PRECISION:
                self.relaxed = self.cuda and not bool_result
                expr = rule(self, "f32", *[f"{a}.to(tl.float32)" for a in args])
                return expr if bool_result else self.round_f32(expr, dtype)
            self.relaxed = self.cuda and rounded_to_16_bits and not bool_result
            return rule(self, dtype, *args)
        finally:
            self.relaxed = False

    def round_f32(self, expr: str, dtype: str) -> str:
        """An f32 expression rounded to `dtype` (to nearest even)."""
        if dtype == "bf16" and not self.cuda:
            return self.helper("to_bf16", expr)
        return f"({expr}).to({tl_dtype(dtype)})"

    def where(self, cond: str, a: str, b: str) -> str:
        return f"tl.where({cond}, {a}, {b})"

    def constant(self, value: float | int | bool, dtype: str, shape: str = "[]") -> str:
        """A constant of `shape`: 0-d, unless the caller gives a block shape."""
        if dtype in FLOATS:
            # rounded here, so that no back end's conversion of the literal matters
            value = torch.tensor(float(value), dtype=DTYPES[dtype]).item()
        return f"tl.full({shape}, {literal(value, dtype)}, {tl_dtype(dtype)})"

    def convert(self, a: str, src: str, dst: str) -> str:
        """torch's `.to()`: float→int truncates (and wraps for narrow types, as torch's
        CPU kernels do), →bool tests != 0, f16/bf16 are reached through f32 as c10's
        Half and BFloat16 constructors do."""
        if src == dst:
            return a
        if dst == "i1":
            return f"{a} != 0"
        if dst in LOW_PRECISION:
            return self.round_f32(f"{a}.to(tl.float32)" if src != "f32" else a, dst)
        if src in FLOATS and dst in ("i8", "i16", "u8"):
            return f"{a}.to(tl.int32).to({tl_dtype(dst)})"
        return f"{a}.to({tl_dtype(dst)})"


Rule = Callable[..., str]


def _div(o: ScalarOps, t: str, a: str, b: str) -> str:
    if t == "f32" and not o.relaxed:
        if a == "1.0" and o.cuda:
            return o.helper("rcp_rn", b)
        return f"tl.div_rn({a}, {b})"
    if t in ("f32", "f64"):
        return f"{_paren(a)} / {_paren(b)}"
    return f"{a} // {b}"  # Triton's integer // truncates, like prim.div


def _mul(o: ScalarOps, t: str, a: str, b: str) -> str:
    if o.contracting and not o.relaxed and t in ("f32", "f64"):
        return o.helper("mul_rn", a, b)  # rounded before any add, as eager's
    return f"{a} * {b}"


def _paren(code: str) -> str:
    """`code` as an operand of a binary operator: all but names and numbers get
    parentheses."""
    return code if re.fullmatch(r"[\w.]+", code) else f"({code})"


def _sqrt(o: ScalarOps, t: str, a: str) -> str:
    return f"tl.sqrt_rn({a})" if t == "f32" else f"tl.sqrt({a})"


def _by_kind(float_rule: Rule, int_rule: Rule, bool_rule: Rule | None = None) -> Rule:
    def rule(o: ScalarOps, t: str, *args: str) -> str:
        if t in FLOATS:
            return float_rule(o, t, *args)
        if t == "i1" and bool_rule is not None:
            return bool_rule(o, t, *args)
        return int_rule(o, t, *args)

    return rule


def _operator(op: str) -> Rule:
    def rule(o: ScalarOps, t: str, a: str, b: str) -> str:
        if t == "i1" and op in "|&^":
            # Triton's interpreter refuses a bool scalar | a loaded bool block (numpy
            # types that do not combine); compared with 0 both are plain bools. The
            # compiler folds the comparisons away.
            return f"({a} != 0) {op} ({b} != 0)"
        return f"{a} {op} {b}"

    return rule


def _compare(op: str) -> Rule:
    def rule(o: ScalarOps, t: str, a: str, b: str) -> str:
        if t == "i1" and op not in ("==", "!="):
            # i1 is signed in Triton: True would order below False.
            return f"{a}.to(tl.int8) {op} {b}.to(tl.int8)"
        return f"{a} {op} {b}"

    return rule


def _identity(o: ScalarOps, t: str, a: str) -> str:
    return a


def _float_math(name: str) -> Rule:
    if name in NATIVE:
        return lambda o, t, *args: o.native(name, t, *args)
    return lambda o, t, *args: o.libdevice(name, *args)


def _int_helper(name: str) -> Rule:
    """Signed-integer fix-ups (floordiv, remainder); u8 truncation already floors."""

    def rule(o: ScalarOps, t: str, a: str, b: str) -> str:
        if t == "u8":
            return f"{a} {'//' if name == 'floordiv_int' else '%'} {b}"
        return o.helper(name, a, b)

    return rule


def _carrier(t: str) -> str:
    """The type integer helpers compute in: narrow types widen to i32."""
    return t if t in ("i32", "i64") else "i32"


def _ipow(o: ScalarOps, t: str, a: str, b: str) -> str:
    c = _carrier(t)
    return f"{o.helper('ipow', f'{a}.to({tl_dtype(c)})', f'{b}.to({tl_dtype(c)})', str(BITS[t]))}.to({tl_dtype(t)})"


def _shift(direction: str) -> Rule:
    def rule(o: ScalarOps, t: str, a: str, b: str) -> str:
        if t == "i1":
            raise CodegenError(f"prim.shift_{direction} on i1 has no Triton lowering")
        c = _carrier(t)
        args = [f"{a}.to({tl_dtype(c)})", f"{b}.to({tl_dtype(c)})", str(BITS[t])]
        if direction == "right":
            args.append(str(BITS[c] - 1))
        return f"{o.helper(f'shift_{direction}', *args)}.to({tl_dtype(t)})"

    return rule


def _sign(o: ScalarOps, t: str, a: str) -> str:
    # NaN gives 0, as in torch.
    return f"({a} > 0).to({tl_dtype(t)}) - ({a} < 0).to({tl_dtype(t)})"


def _signbit(o: ScalarOps, t: str, a: str) -> str:
    if t in FLOATS:
        return f"{a}.to({'tl.int64' if t == 'f64' else 'tl.int32'}, bitcast=True) < 0"
    return f"{a} < 0"


def _sigmoid(o: ScalarOps, t: str, a: str) -> str:
    return _div(o, t, "1.0", f"1.0 + {o.native('exp', t, f'-{a}')}")


def _nan_aware(fn: str) -> Rule:
    return _by_kind(
        lambda o, t, a, b: f"tl.{fn}({a}, {b}, propagate_nan=tl.PropagateNan.ALL)",
        lambda o, t, a, b: f"tl.{fn}({a}, {b})",
        _operator("|" if fn == "maximum" else "&"),
    )


RULES: dict[str, Rule] = {
    **{n: _float_math(n) for n in (*NATIVE, *FLOAT_FUNCTIONS)},
    "sqrt": _sqrt,
    "rsqrt": lambda o, t, a: _div(o, t, "1.0", _sqrt(o, t, a)),
    "reciprocal": lambda o, t, a: _div(o, t, "1.0", a),
    "sigmoid": _sigmoid,
    "digamma": lambda o, t, a: o.helper("digamma", a),
    **{n: (lambda n: lambda o, t, x, y: o.helper(n, x, y))(n) for n in SPECIAL_LOOP_NAMES},
    **{n: (lambda n: lambda o, t, a, x: o.helper(n, a, x))(n) for n in IGAMMA_NAMES},
    "neg": lambda o, t, a: f"-{a}",
    "abs": lambda o, t, a: a if t == "u8" else f"tl.abs({a})",
    "sign": _sign,
    "floor": _by_kind(lambda o, t, a: f"tl.floor({a})", _identity),
    "ceil": _by_kind(lambda o, t, a: f"tl.ceil({a})", _identity),
    "round": _by_kind(lambda o, t, a: o.libdevice("round", a), _identity),
    "trunc": _by_kind(lambda o, t, a: o.libdevice("trunc", a), _identity),
    "bitwise_not": lambda o, t, a: f"~{a}",
    "logical_not": lambda o, t, a: f"{a} == 0",
    "isnan": lambda o, t, a: f"{a} != {a}",
    "isinf": _by_kind(lambda o, t, a: f'tl.abs({a}) == float("inf")', lambda o, t, a: f"{a} != {a}"),
    "signbit": _signbit,
    "add": _by_kind(_operator("+"), _operator("+"), _operator("|")),
    "sub": _operator("-"),
    "mul": _by_kind(_mul, _operator("*"), _operator("&")),
    "div": _div,
    "floordiv": _by_kind(lambda o, t, a, b: o.helper("floordiv_float", a, b), _int_helper("floordiv_int")),
    "remainder": _by_kind(lambda o, t, a, b: o.helper("remainder_float", a, b), _int_helper("remainder_int")),
    "fmod": _by_kind(lambda o, t, a, b: o.libdevice("fmod", a, b), _operator("%")),
    "pow": _by_kind(lambda o, t, a, b: o.libdevice("pow", a, b), _ipow),
    "maximum": _nan_aware("maximum"),
    "minimum": _nan_aware("minimum"),
    "bitwise_and": _operator("&"),
    "bitwise_or": _operator("|"),
    "bitwise_xor": _operator("^"),
    "shift_left": _shift("left"),
    "shift_right": _shift("right"),
    "eq": _compare("=="),
    "ne": _compare("!="),
    "lt": _compare("<"),
    "le": _compare("<="),
    "gt": _compare(">"),
    "ge": _compare(">="),
    "logical_and": _operator("&"),
    "logical_or": _operator("|"),
    "logical_xor": _operator("^"),
    **BIT_RULES,
}


def acc_dtype(dtype: str) -> str:
    """The type a reduction accumulates in: f32 for half types (as torch does), i32
    for narrow integers and bool (sums and products wrap the same way)."""
    if dtype in LOW_PRECISION:
        return "f32"
    return "i32" if dtype in ("i1", "i8", "i16", "u8") else dtype
