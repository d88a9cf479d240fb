"""One kernel.func as a Triton module: helpers, the @triton.jit kernel(s), a launcher.

The pointwise domain is flattened onto program axis 0 (`xindex`, XBLOCK lanes a
program) and x0… are recovered by division and modulo; the reduction domain is
flattened into `rindex`. Values come in two shapes. In a pointwise kernel every value
is a [XBLOCK] vector. With a reduction domain the tile is [XBLOCK, RBLOCK]: scalars
(one value per x) are [XBLOCK, 1] and rows (values that depend on r) are
[XBLOCK, RBLOCK], so ops between them broadcast as kernel.py's semantics say.

A reduction kernel comes in two shapes. Persistent: one tile holds a whole row, every
op runs once in body order. Looped, for rows too long for registers: the body is cut
at its reductions. A value's *level* counts the reductions it waits for; loop L walks
R in RBLOCK chunks, recomputes from loads the rows that reductions of level-L rows and
level-L row stores need, accumulates tile-wide, and reduces after the loop; scalars of
level L are computed between loops L-1 and L.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass

import sympy
from xdsl.dialects import arith
from xdsl.ir import Operation, SSAValue

from strata.codegen.errors import CodegenError
from strata.codegen.triton_index import fits_int32, int_code
from strata.codegen.triton_math import helper_sources
from strata.codegen.triton_scalar_ops import FLOATS, LOW_PRECISION, ScalarOps, tl_dtype
from strata.codegen.triton_tiles import PERSISTENT_LIMIT, pointwise_tile, reduction_tile
from strata.dialects import kernel
from strata.dialects.prim import ConvertElementTypeOp, ElementwiseOp, WhereOp
from strata.dialects.types import scalar_dtype, sym

# Names the generated module defines; shape symbols must not shadow them.
RESERVED = frozenset(
    "xindex xmask xnumel rindex rmask rbase roffset rnumel xrmask XBLOCK RBLOCK "
    "launch buffers symbols tile kernel triton tl libdevice".split()
)
GENERATED_NAME = re.compile(r"(x|r|v|in|out)\d+$|acc_")
INT64_MIN, INT32_MIN = -(2**63), -(2**31)
# Launch options: no FMA contraction, since eager PyTorch rounds after every op.
OPTIONS = "enable_fp_fusion=False, "


@dataclass
class Value:
    name: str
    dtype: str
    row: bool  # depends on a reduction variable
    level: int  # number of reductions it waits for


def kernel_name(func: kernel.FuncOp) -> str:
    name = re.sub(r"\W", "_", func.sym_name.data)
    if not name or name[0].isdigit() or name[0] == "_" or name in RESERVED or keyword.iskeyword(name):
        name = f"kernel_{name}"
    return name


def acc_dtype(dtype: str) -> str:
    """The type a reduction accumulates in: f32 for half types (as torch does), i32
    for narrow integers and bool (sums and products wrap the same way)."""
    if dtype in LOW_PRECISION:
        return "f32"
    return "i32" if dtype in ("i1", "i8", "i16", "u8") else dtype


class KernelSource:
    """Analysis of one kernel.func and the Triton module text for it."""

    def __init__(self, func: kernel.FuncOp, device: str):
        self.func = func
        self.device = device
        self.name = kernel_name(func)
        self.ops = ScalarOps(device)
        self.symbols = func.symbol_names
        _check_symbols(self.symbols)
        self.xdims = [sym(d) for d in func.pointwise_dims]
        self.rdims = [sym(d) for d in func.reduction_dims]
        self.xnumel = sympy.Mul(*self.xdims)
        self.rnumel = sympy.Mul(*self.rdims)
        # a loop variable of a size-1 dim is 0 everywhere
        self.unit = {sym(f"{k}{i}"): 0 for k, dims in (("x", self.xdims), ("r", self.rdims)) for i, d in enumerate(dims) if d == 1}
        self.buffers = {a: f"in{i}" if i < func.num_inputs.value.data else f"out{i - func.num_inputs.value.data}" for i, a in enumerate(func.block.args)}
        self.values: dict[SSAValue, Value] = {}
        self.index: dict[Operation, sympy.Expr] = {}
        self.live = self._analyze()
        self.int64 = self._needs_int64()

    # ------------------------------------------------------------------ analysis
    def _analyze(self) -> list[Operation]:
        """Names, dtypes, rows and levels of every value; the live ops in body order."""
        body = list(self.func.block.ops)
        for n, op in enumerate(body):
            if isinstance(op, kernel.IndexedOp):
                self.index[op] = op.index_expr.xreplace(self.unit)
            if op.results:
                self.values[op.results[0]] = self._value(op, f"v{n}")
            elif isinstance(op, kernel.StoreOp):
                self._check_store(op)
            else:
                raise CodegenError(f"{op.name} is not supported by the Triton code generator")
        needed: set[SSAValue] = set()
        live = []
        for op in reversed(body):
            if isinstance(op, kernel.StoreOp) or any(r in needed for r in op.results):
                live.append(op)
                needed.update(op.operands)
        return live[::-1]

    def _value(self, op: Operation, name: str) -> Value:
        dtype = scalar_dtype(op.results[0].type)
        if isinstance(op, (kernel.LoadOp, kernel.IndexOp)):
            return Value(name, dtype, _names_r(self.index[op]), 0)
        if isinstance(op, arith.ConstantOp):
            return Value(name, dtype, False, 0)
        if isinstance(op, kernel.ReduceOp):
            return Value(name, dtype, False, self.values[op.value].level + 1)
        if isinstance(op, (ElementwiseOp, WhereOp, ConvertElementTypeOp)):
            args = [self.values[a] for a in op.operands]
            return Value(name, dtype, any(a.row for a in args), max(a.level for a in args))
        raise CodegenError(f"{op.name} is not supported by the Triton code generator")

    def _check_store(self, op: kernel.StoreOp) -> None:
        if self.values[op.value].row and not _names_r(self.index[op]):
            raise CodegenError(
                f"kernel.store in @{self.func.sym_name.data}: a row is stored at index "
                f"'{op.index.data}', which names no reduction variable"
            )

    def _needs_int64(self) -> bool:
        """i64 index arithmetic when a size is symbolic or an index may pass 2**31
        (the launcher may round sizes up to a block: allow for that too)."""
        if self._symbolic() or any(s.name in self.symbols for e in self.index.values() for s in e.free_symbols):
            return True
        maxima = {f"x{i}": int(d) - 1 for i, d in enumerate(self.xdims)}
        maxima |= {f"r{i}": int(d) - 1 for i, d in enumerate(self.rdims)}
        exprs = [*self.index.values(), self.xnumel + 1024, self.rnumel + 2 * PERSISTENT_LIMIT]
        return not fits_int32(exprs, maxima)

    def _symbolic(self) -> bool:
        return bool(self.xnumel.free_symbols or self.rnumel.free_symbols)

    def _inner(self) -> bool:
        """Whether a row load or store walks consecutive elements as rindex grows."""
        fastest = [sym(f"r{i}") for i, d in enumerate(self.rdims) if d != 1]
        if not fastest:
            return True
        return any(
            self.index[op].as_coefficients_dict().get(fastest[-1]) == 1
            for op in self.live
            if isinstance(op, (kernel.LoadOp, kernel.StoreOp)) and _names_r(self.index[op])
        )

    # ------------------------------------------------------------------ module
    def module(self) -> str:
        """The whole module: header, helpers, kernel variant(s), launcher."""
        bodies = {name: BodyEmitter(self, persistent).emit() for name, persistent in self._variants()}
        text = "\n".join(line for body in bodies.values() for line in body)
        symbols = [s for s in self.symbols if re.search(rf"\b{re.escape(s)}\b", text)]
        args = [*self.buffers.values(), *symbols]
        args += [n for n, e in (("xnumel", self.xnumel), ("rnumel", self.rnumel)) if e.free_symbols]
        blocks = ["XBLOCK: tl.constexpr"] + (["RBLOCK: tl.constexpr"] if self.rdims else [])
        kernels = [_function(name, [*args, *blocks], body, "@triton.jit") for name, body in bodies.items()]
        header = [
            f"# strata kernel {self.func.sym_name.data}",
            f"# from aten ops: {', '.join(self.func.source_ops)}",
            "import triton",
            "import triton.language as tl",
        ]
        if self.device == "cuda":
            header.append("from triton.language.extra import libdevice")
        if self._symbolic():
            header.append("from strata.codegen.triton_tiles import pointwise_tile, reduction_tile")
        parts = ["\n".join(header), *helper_sources(self.ops.helpers, self.device), *kernels]
        parts.append(_function("launch", ["buffers", "symbols"], self._launcher(list(bodies), args)))
        return "\n\n\n".join(p.rstrip("\n") for p in parts) + "\n"

    def _variants(self) -> list[tuple[str, bool | None]]:
        """(kernel name, persistent); persistent is None for a pointwise kernel. Both
        reduction shapes when R is symbolic: the launcher picks one by its size."""
        if not self.rdims:
            return [(self.name, None)]
        if self.rnumel.free_symbols:
            return [(f"{self.name}_persistent", True), (f"{self.name}_looped", False)]
        return [(self.name, reduction_tile(1, int(self.rnumel), True).persistent)]

    def _launcher(self, kernels: list[str], args: list[str]) -> list[str]:
        lines = [f"{_unpack(list(self.buffers.values()))} = buffers"]
        if self.symbols:
            lines.append(f"{_unpack(self.symbols)} = symbols")
        if not self._symbolic():
            return lines + self._static_launch(kernels[0], args)
        lines += [f"xnumel = {int_code(self.xnumel, python=True)}", "if xnumel == 0:", "    return"]
        if self.rdims:
            lines.append(f"rnumel = {int_code(self.rnumel, python=True)}")
            lines.append(f"tile = reduction_tile(xnumel, rnumel, {self._inner()})")
        else:
            lines.append("tile = pointwise_tile(xnumel)")
        if len(kernels) == 2:
            lines.append(f"kernel = {kernels[0]} if tile.persistent else {kernels[1]}")
        blocks = "XBLOCK=tile.xblock" + (", RBLOCK=tile.rblock" if self.rdims else "")
        launch = "kernel" if len(kernels) == 2 else kernels[0]
        lines.append(f"{launch}[(triton.cdiv(xnumel, tile.xblock),)]({', '.join(args)}, {blocks}, {OPTIONS}num_warps=tile.num_warps)")
        return lines

    def _static_launch(self, kernel: str, args: list[str]) -> list[str]:
        xnumel = int(self.xnumel)
        if xnumel == 0:
            return ["return  # empty domain"]
        tile = reduction_tile(xnumel, int(self.rnumel), self._inner()) if self.rdims else pointwise_tile(xnumel)
        blocks = f"XBLOCK={tile.xblock}" + (f", RBLOCK={tile.rblock}" if self.rdims else "")
        grid = -(-xnumel // tile.xblock)
        return [f"{kernel}[({grid},)]({', '.join(args)}, {blocks}, {OPTIONS}num_warps={tile.num_warps})"]


class BodyEmitter:
    """The statements of one kernel variant."""

    def __init__(self, src: KernelSource, persistent: bool | None):
        self.src = src
        self.ops = src.ops
        self.persistent = persistent
        self.reduction = persistent is not None
        self.lines: list[str] = []
        self.indent = ""

    def line(self, text: str) -> None:
        self.lines.append(self.indent + text)

    def emit(self) -> list[str]:
        self._header()
        if not self.reduction:
            for op in self.src.live:
                self._op(op)
        elif self.persistent:
            self._r_index("rbase", self.src.live)
            for op in self.src.live:
                self._op(op)
        else:
            self._looped()
        return self.lines

    # ------------------------------------------------------------------ domain
    def _header(self) -> None:
        src = self.src
        for numel, dims in (("xnumel", src.xnumel), ("rnumel", src.rnumel if self.reduction else None)):
            if dims is not None and not dims.free_symbols:
                self.line(f"{numel} = {int(dims)}")
        pid = "tl.program_id(0).to(tl.int64)" if src.int64 else "tl.program_id(0)"
        lanes = "tl.arange(0, XBLOCK)" + ("[:, None]" if self.reduction else "")
        self.line(f"xindex = {pid} * XBLOCK + {lanes}")
        self.line("xmask = xindex < xnumel")
        self._split("xindex", src.xdims, "x", self.src.live)
        if self.reduction:
            rbase = "tl.arange(0, RBLOCK)[None, :]"
            self.line(f"rbase = {rbase}.to(tl.int64)" if src.int64 else f"rbase = {rbase}")

    def _r_index(self, rindex: str, ops: list[Operation]) -> None:
        self.line(f"rindex = {rindex}")
        self.line("rmask = rindex < rnumel")
        self.line("xrmask = xmask & rmask")
        self._split("rindex", self.src.rdims, "r", ops)

    def _split(self, flat: str, dims: list[sympy.Expr], prefix: str, ops: list[Operation]) -> None:
        """Loop variables (those `ops` use) from the flat index, row-major."""
        used = {s.name for op in ops if op in self.src.index for s in self.src.index[op].free_symbols}
        for k, d in enumerate(dims):
            name = f"{prefix}{k}"
            if name not in used or d == 1:
                continue
            stride = sympy.Mul(*dims[k + 1 :])
            code = flat if stride == 1 else f"{flat} // {_atom(int_code(stride))}"
            if k > 0:
                code = f"{code} % {_atom(int_code(d))}"
            self.line(f"{name} = {code}")

    # ------------------------------------------------------------------ looped reductions
    def _looped(self) -> None:
        src = self.src
        for level in range(max((self._level(op) for op in src.live), default=0) + 1):
            for op in src.live:
                if self._level(op) == level and not self._is_row(op) and not isinstance(op, kernel.ReduceOp):
                    self._op(op)
            reduces = [op for op in src.live if isinstance(op, kernel.ReduceOp) and src.values[op.value].level == level]
            stores = [op for op in src.live if isinstance(op, kernel.StoreOp) and self._is_row(op) and self._level(op) == level]
            if reduces or stores:
                self._loop(reduces, stores)

    def _loop(self, reduces: list[kernel.ReduceOp], stores: list[kernel.StoreOp]) -> None:
        cone = self._row_cone([*reduces, *stores])
        for op in reduces:
            ident, acc_t = self._identity(op)
            self.line(f"{self._acc(op)} = tl.full([XBLOCK, RBLOCK], {ident}, {tl_dtype(acc_t)})")
        self.line("for roffset in range(0, rnumel, RBLOCK):")
        self.indent = "    "
        self._r_index("roffset + rbase", [*cone, *stores])
        for op in cone:
            self._op(op)
        for op in reduces:
            combine = REDUCE[op.kind.data][1].format(acc=self._acc(op), v=self._masked(op))
            self.line(f"{self._acc(op)} = {combine}")
            self._helper_of(op)
        for op in stores:
            self._op(op)
        self.indent = ""
        for op in reduces:
            self._finish(op, self._acc(op))

    def _acc(self, op: kernel.ReduceOp) -> str:
        """The accumulator tile of a reduction in a looped kernel."""
        return f"acc_{self.src.values[op.results[0]].name}"

    def _row_cone(self, consumers: list[Operation]) -> list[Operation]:
        """The row ops `consumers` need, in body order."""
        needed: set[SSAValue] = {v for c in consumers for v in c.operands if self._row_value(v)}
        cone = []
        for op in reversed(self.src.live):
            if op.results and op.results[0] in needed:
                cone.append(op)
                needed.update(v for v in op.operands if self._row_value(v))
        return cone[::-1]

    def _row_value(self, v: SSAValue) -> bool:
        return v in self.src.values and self.src.values[v].row

    def _is_row(self, op: Operation) -> bool:
        if isinstance(op, kernel.StoreOp):
            return _names_r(self.src.index[op])
        return self.src.values[op.results[0]].row

    def _level(self, op: Operation) -> int:
        v = op.value if isinstance(op, kernel.StoreOp) else op.results[0]
        return self.src.values[v].level

    # ------------------------------------------------------------------ ops
    def _op(self, op: Operation) -> None:
        if isinstance(op, kernel.StoreOp):
            value = self.src.values[op.value].name
            self.line(f"tl.store({self._pointer(op)}, {value}, mask={self._mask(op)})")
            return
        result = self.src.values[op.results[0]]
        if isinstance(op, kernel.ReduceOp):
            self._persistent_reduce(op)
            return
        self.line(f"{result.name} = {self._expr(op, result)}")

    def _expr(self, op: Operation, result: Value) -> str:
        args = [self.src.values[a].name for a in op.operands if a in self.src.values]
        if isinstance(op, kernel.LoadOp):
            return f"tl.load({self._pointer(op)}, mask={self._mask(op)})"
        if isinstance(op, kernel.IndexOp):
            return f"tl.cast({int_code(self.src.index[op])}, {tl_dtype(result.dtype)})"
        if isinstance(op, arith.ConstantOp):
            return self.ops.constant(op.value.value.data, result.dtype)
        if isinstance(op, WhereOp):
            return self.ops.where(*args)
        if isinstance(op, ConvertElementTypeOp):
            return self.ops.convert(args[0], scalar_dtype(op.x.type), result.dtype)
        assert isinstance(op, ElementwiseOp)
        return self.ops.elementwise(op.name.removeprefix("prim."), scalar_dtype(op.args[0].type), args)

    def _pointer(self, op: kernel.LoadOp | kernel.StoreOp) -> str:
        """Pointers of the op's full shape: an index that names no x (or, for a row,
        no r) is broadcast so that it matches its mask."""
        expr = self.src.index[op]
        code = int_code(expr)
        names = {s.name for s in expr.free_symbols}
        if not any(n.startswith("x") and n[1:].isdigit() for n in names):
            shape = "[XBLOCK, 1]" if self.reduction else "[XBLOCK]"
            code = f"{code} + tl.full({shape}, 0, {'tl.int64' if self.src.int64 else 'tl.int32'})"
        return f"{self.src.buffers[op.buffer]} + ({code})"

    def _mask(self, op: kernel.LoadOp | kernel.StoreOp) -> str:
        return "xrmask" if self.reduction and _names_r(self.src.index[op]) else "xmask"

    # ------------------------------------------------------------------ reductions
    def _identity(self, op: kernel.ReduceOp) -> tuple[str, str]:
        acc_t = acc_dtype(self.src.values[op.value].dtype)
        kind = op.kind.data
        if kind in ("sum", "prod"):
            return ("0" if kind == "sum" else "1"), acc_t
        if acc_t in FLOATS:
            return ('-float("inf")' if kind == "amax" else 'float("inf")'), acc_t
        low = INT64_MIN if acc_t == "i64" else INT32_MIN
        return str(low if kind == "amax" else -low - 1), acc_t

    def _masked(self, op: kernel.ReduceOp) -> str:
        """The operand with masked-off lanes replaced by the identity."""
        value = self.src.values[op.value]
        ident, acc_t = self._identity(op)
        v = value.name if acc_t == value.dtype else f"{value.name}.to({tl_dtype(acc_t)})"
        return f"tl.where(rmask, {v}, {ident})"

    def _helper_of(self, op: kernel.ReduceOp) -> None:
        self.ops.helpers.add(REDUCE[op.kind.data][2])

    def _persistent_reduce(self, op: kernel.ReduceOp) -> None:
        result = self.src.values[op.results[0]]
        self.line(f"{result.name} = {self._masked(op)}")
        self._finish(op, result.name)

    def _finish(self, op: kernel.ReduceOp, acc: str) -> None:
        """Reduces tile `acc` over R and rounds to the op's type."""
        result = self.src.values[op.results[0]]
        self._helper_of(op)
        reduced = REDUCE[op.kind.data][0].format(acc=acc)
        _, acc_t = self._identity(op)
        if result.dtype == "i1":
            reduced = f"{reduced} != 0"
        elif result.dtype in LOW_PRECISION:
            reduced = self.ops.round_f32(reduced, result.dtype)
        elif acc_t != result.dtype:
            reduced = f"({reduced}).to({tl_dtype(result.dtype)})"
        self.line(f"{result.name} = {reduced}")


# kind: (reduce a tile over R, combine two tiles elementwise, helper they call).
# tl.sum, tl.max and tl.zeros_like are @triton.jit functions of triton.language, fixed
# to compiled or interpreted mode when triton is imported; generated code uses only
# builtins (tl.reduce, tl.full) so that it also runs in the interpreter.
REDUCE = {
    "sum": ("tl.reduce({acc}, 1, _add, keep_dims=True)", "{acc} + {v}", "add"),
    "prod": ("tl.reduce({acc}, 1, _multiply, keep_dims=True)", "{acc} * {v}", "multiply"),
    "amax": ("tl.reduce({acc}, 1, _maximum_nan, keep_dims=True)", "_maximum_nan({acc}, {v})", "maximum_nan"),
    "amin": ("tl.reduce({acc}, 1, _minimum_nan, keep_dims=True)", "_minimum_nan({acc}, {v})", "minimum_nan"),
}


def _names_r(expr: sympy.Expr) -> bool:
    """Whether an index names a reduction variable (so the value is a row)."""
    return any(s.name.startswith("r") and s.name[1:].isdigit() for s in expr.free_symbols)


def _function(name: str, params: list[str], body: list[str], decorator: str = "") -> str:
    head = f"{decorator}\n" if decorator else ""
    return f"{head}def {name}({', '.join(params)}):\n" + "\n".join(f"    {line}" for line in body) + "\n"


def _atom(code: str) -> str:
    return code if re.fullmatch(r"\w+", code) else f"({code})"


def _unpack(names: list[str]) -> str:
    return ", ".join(names) + ("," if len(names) == 1 else "")


def _check_symbols(symbols: list[str]) -> None:
    for s in symbols:
        if not s.isidentifier() or keyword.iskeyword(s) or s in RESERVED or s.startswith("_") or GENERATED_NAME.match(s):
            raise CodegenError(f"shape symbol '{s}' clashes with a name the Triton code generator uses")
