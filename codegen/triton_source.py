"""One kernel.func as a Triton module: helpers, the @triton.jit kernel(s), launchers.

The pointwise domain is flattened onto program axis 0 (`xindex`, XBLOCK lanes a
program) and the reduction domain into `rindex`. Indices are simplified with sympy
(triton_index.merged_index): runs of dims that an access walks contiguously become one
counter, so `4096*x0 + x1` over [8192, 4096] is printed as `xindex`, which costs no
division and lets Triton see consecutive addresses (vectorized, coalesced loads) even
for symbolic sizes. Values come in two shapes. In a pointwise kernel every value is a
[XBLOCK] vector. With a reduction domain the tile is [XBLOCK, RBLOCK]: scalars (one
value per x) are [XBLOCK, 1] and rows (values that depend on r) are [XBLOCK, RBLOCK],
so ops between them broadcast as kernel.py's semantics say.

A reduction kernel comes in three shapes (*variants*). Persistent: one tile holds a
whole row, every op runs once in body order, loads first (so that they are all in
flight before the first reduction's barrier). Looped, for rows too long for registers:
the body is cut at its reductions. A value's *level* counts the reductions it waits
for; loop L walks R in RBLOCK chunks, recomputes from loads the rows that reductions
of level-L rows and level-L row stores need, accumulates tile-wide, and reduces after
the loop; scalars of level L are computed between loops L-1 and L. Split, for long
rows and few of them, where the kernel allows it (its reductions read only loads'
rows, and it stores no rows): program (x, c) reduces chunk c of its rows into a
workspace, and a second kernel combines the chunks and runs what follows the
reductions.

Masks are left out where the sizes are static and every tile the launcher may use
divides them. Loads that later loops read again are kept in cache (evict_last), the
last read of a stream is not (evict_first).

The module's `launch(buffers, symbols)` runs the heuristic tile (triton_tiles), baked
in when the sizes are static; `launch_tile(tile, buffers, symbols)` runs any tile the
module has a variant for (max-autotune times them through it); `numels(symbols)` gives
the domain sizes; `LAYOUT`, `SPLITTABLE`, `ROW_LOADS`, `PASSES` and `ROW_ITEMSIZE` are
what the tile heuristic needs to know of the kernel.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass

import sympy
from xdsl.dialects import arith
from xdsl.ir import Operation, SSAValue

from strata.codegen import triton_pdl
from strata.codegen.errors import CodegenError
from strata.codegen.triton_bounds import check_lines
from strata.codegen.triton_guards import load_guards
from strata.codegen.triton_selects import Leaf, selected_loads
from strata.codegen.triton_index import fits_int32, int_code, merged_index, run_code
from strata.codegen.triton_launcher import LauncherSource, function_source, variant_of
from strata.codegen.triton_math import helper_sources
from strata.codegen.triton_scalar_ops import CONTRACTION_SAFE, FLOATS, LOW_PRECISION, ScalarOps, acc_dtype, tl_dtype
from strata.codegen.triton_tiles import (
    PERSISTENT_LIMIT,
    Tile,
    next_power_of_2,
    persistent_fits,
    pointwise_configs,
    pointwise_tile,
    reduction_configs,
    reduction_tile,
)
from strata.dialects import kernel
from strata.dialects.kernel_random import PhiloxOp
from strata.dialects.prim import ConvertElementTypeOp, ElementwiseOp, WhereOp, reduction_identity
from strata.dialects.prim_indexing import CheckIndexOp
from strata.dialects.types import DTYPES, scalar_dtype, sym

# Names the generated module defines; shape symbols must not shadow them.
RESERVED = frozenset(
    "xindex xmask xnumel rindex rmask rbase roffset rnumel rstart rchunk xrmask XBLOCK RBLOCK "
    "launch launch_tile numels buffers symbols tile kernel triton tl libdevice torch split "
    "LAYOUT SPLITTABLE ROW_LOADS PASSES ROW_ITEMSIZE".split()
)
GENERATED_NAME = re.compile(r"(x|r|v|in|out|ws)\d+$|(x|r)\d+_\d+$|acc_")
# Code-generation switches, on by default; benchmarks/gpu_kernels.py --ablate turns
# one off at a time to measure what it is worth.
FEATURES = {"merge_index": True, "hoist_loads": True, "drop_masks": True, "eviction": True}


@dataclass
class Value:
    name: str
    dtype: str
    row: bool  # depends on a reduction variable
    level: int  # number of reductions it waits for


def bound_for_16_bits(func: kernel.FuncOp) -> set[Operation]:
    """The ops whose f32 result reaches nothing but roundings to f16/bf16: each use
    converts it to f16 or bf16, or is a float op (elementwise or where) of f32 result
    that is itself such an op. Their exp, log and division may take the approximate
    forms (triton_scalar_ops.RELAXED_NATIVE): about 2 ulp of f32, carried through f32
    arithmetic to a rounding 2^16 times coarser. A chain computed in f32 between a
    bf16 load and a bf16 store (what fusion makes of eager's bf16 ops, each of which
    eager rounds to bf16) is relaxed as a whole, not only its last op."""
    bound: set[Operation] = set()
    for op in reversed(list(func.walk())):  # each use before the op it uses
        if len(op.results) != 1 or _dtype_of(op.results[0]) != "f32":
            continue
        uses = list(op.results[0].uses)
        if uses and all(_rounds_to_16_bits(u.operation) or u.operation in bound for u in uses):
            bound.add(op)
    return bound


def _contraction_safe(op: Operation, dtype: str) -> bool:
    """Whether `op`'s float result is computed the same with FMA contraction on: a
    load, a constant, a select or conversion, a sum, max or min, or an elementwise op of
    triton_scalar_ops.CONTRACTION_SAFE (its products written as PTX mul.rn)."""
    if isinstance(op, (kernel.LoadOp, arith.ConstantOp, WhereOp, ConvertElementTypeOp)):
        return True
    if isinstance(op, kernel.ReduceOp):
        return op.kind.data in ("sum", "amax", "amin")
    return isinstance(op, ElementwiseOp) and op.name.removeprefix("prim.") in CONTRACTION_SAFE[dtype]


def _rounds_to_16_bits(op: Operation) -> bool:
    return isinstance(op, ConvertElementTypeOp) and scalar_dtype(op.results[0].type) in LOW_PRECISION


def _dtype_of(v: SSAValue) -> str | None:
    try:
        return scalar_dtype(v.type)
    except ValueError:
        return None


def kernel_name(func: kernel.FuncOp) -> str:
    name = re.sub(r"\W", "_", func.sym_name.data)
    if not name or name[0].isdigit() or name[0] == "_" or name in RESERVED or keyword.iskeyword(name):
        name = f"kernel_{name}"
    return name


class KernelSource:
    """Analysis of one kernel.func and the Triton module text for it. `tune`: the
    module also holds the variants of every tile max-autotune may time. `tiles`
    (static sizes only): exactly these tiles, the first one the default (for
    benchmarks that time tiles of their own choosing)."""

    def __init__(self, func: kernel.FuncOp, device: str, tune: bool = False, tiles: list[Tile] | None = None):
        self.func = func
        self.bound_for_16_bits = bound_for_16_bits(func)
        # FMA contraction where it changes no rounding eager makes (triton_launcher)
        self.fp_fusion = device == "cuda" and all(
            op in self.bound_for_16_bits or _contraction_safe(op, _dtype_of(r))
            for op in func.walk() for r in op.results if _dtype_of(r) in ("f32", "f64")
        )
        self.device = device
        self.tune = tune
        self.chosen = tiles
        self.name = kernel_name(func)
        self.ops = ScalarOps(device)
        self.ops.contracting = self.fp_fusion
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
        self.guards = load_guards(self.live)  # loads a select discards in part (triton_guards)
        self.selects = selected_loads(self.live)  # selects between loads, one load each (triton_selects)
        self.folded = {op for sel in self.selects.values() for op in sel.folded}
        self.checks = any(isinstance(op, CheckIndexOp) for op in self.live)  # a user's index (triton_bounds)
        self.splittable = self._splittable()
        self.int64 = self._needs_int64()
        self.layout = self._layout() if self.rdims else "pointwise"
        # the rows loaded: a selected load is one
        row_dtypes = [self.values[op.result].dtype for op in self.live
                      if isinstance(op, kernel.LoadOp) and self.values[op.result].row and op not in self.folded]
        row_dtypes += [self.values[sel.leaves[0].load.result].dtype for root, sel in self.selects.items() if self.values[root.result].row]
        self.row_loads = len(row_dtypes)
        self.row_itemsize = min((DTYPES[d].itemsize for d in row_dtypes), default=4)
        self.passes = self._passes()
        self.code_index, self.runs = self._merge_indices()
        self.tiles = self._tiles()
        self.variants = self._variants()

    # ------------------------------------------------------------------ analysis
    def _analyze(self) -> list[Operation]:
        """Names, dtypes, rows and levels of every value; the live ops in body order."""
        body = list(self.func.block.ops)
        for n, op in enumerate(body):
            if isinstance(op, kernel.IndexedOp):
                self.index[op] = op.index_expr.xreplace(self.unit)
                if isinstance(op, kernel.LoadOp | kernel.StoreOp) and op.values:  # v0, v1, … are values of the body
                    names = {n: self.values[v].name for n, v in op.value_names.items()}
                    self.index[op] = self.index[op].xreplace(
                        {s: sympy.Symbol(names[s.name], integer=True) for s in self.index[op].free_symbols if s.name in names}
                    )
            if op.results:
                self.values[op.results[0]] = self._value(op, f"v{n}")
            elif isinstance(op, kernel.StoreOp):
                self._check_store(op)
            else:
                raise CodegenError(f"{op.name} is not supported by the Triton code generator")
        needed: set[SSAValue] = set()
        live = []
        for op in reversed(body):
            # A user's index is checked whether or not anything reads it (a gather from
            # a dim of size 1 reads its one element at any index).
            if isinstance(op, kernel.StoreOp | CheckIndexOp) or any(r in needed for r in op.results):
                live.append(op)
                needed.update(op.operands)
        return live[::-1]

    def _value(self, op: Operation, name: str) -> Value:
        dtype = scalar_dtype(op.results[0].type)
        if isinstance(op, kernel.LoadOp) and op.values:
            args = [self.values[a] for a in op.values]
            return Value(name, dtype, _names_r(self.index[op]) or any(a.row for a in args), max(a.level for a in args))
        if isinstance(op, (kernel.LoadOp, kernel.IndexOp)):
            return Value(name, dtype, _names_r(self.index[op]), 0)
        if isinstance(op, arith.ConstantOp):
            return Value(name, dtype, False, 0)
        if isinstance(op, PhiloxOp):
            args = [self.values[a] for a in op.operands]
            return Value(name, dtype, any(a.row for a in args), max(a.level for a in args))
        if isinstance(op, kernel.ReduceOp):
            return Value(name, dtype, False, self.values[op.value].level + 1)
        if isinstance(op, (ElementwiseOp, WhereOp, ConvertElementTypeOp, CheckIndexOp)):
            args = [self.values[a] for a in op.operands]
            return Value(name, dtype, any(a.row for a in args), max(a.level for a in args))
        raise CodegenError(f"{op.name} is not supported by the Triton code generator")

    def _check_store(self, op: kernel.StoreOp) -> None:
        if self.values[op.value].row and not _names_r(self.index[op]):
            raise CodegenError(
                f"kernel.store in @{self.func.sym_name.data}: a row is stored at index "
                f"'{op.index.data}', which names no reduction variable"
            )

    def _splittable(self) -> bool:
        """Whether a split variant can compute this kernel: every reduction reduces a
        row of level 0 (computed from loads alone), and every row it stores is of level
        0 too (the chunks store their parts: a layer norm's backward computes the input's
        gradient where it sums the weight's over the rows)."""
        if not self.rdims:
            return False
        reduces = [op for op in self.live if isinstance(op, kernel.ReduceOp)]
        if not reduces or any(self.values[op.value].level != 0 for op in reduces):
            return False
        return not any(
            isinstance(op, kernel.StoreOp) and _names_r(self.index[op]) and self.values[op.value].level != 0
            for op in self.live
        )

    def _needs_int64(self) -> bool:
        """i64 index arithmetic when a size is symbolic or an index may pass 2**31
        (the launcher may round sizes up to a block, or a split's chunks overhang the
        row: allow for that too)."""
        if self.symbolic() or any(s.name in self.symbols for e in self.index.values() for s in e.free_symbols):
            return True
        if any(isinstance(op, kernel.LoadOp | kernel.StoreOp) and op.values for op in self.index):
            return True  # data-dependent indices are i64 values
        maxima = {f"x{i}": int(d) - 1 for i, d in enumerate(self.xdims)}
        maxima |= {f"r{i}": int(d) - 1 for i, d in enumerate(self.rdims)}
        slack = 2 * self.rnumel + 2**22 if self.splittable else self.rnumel + 2 * PERSISTENT_LIMIT
        exprs = [*self.index.values(), self.xnumel + 4096, slack]
        if self.splittable:
            exprs.append(self.xnumel * 2048)  # workspace offsets
        return not fits_int32(exprs, maxima)

    def symbolic(self) -> bool:
        """Whether a dim is symbolic (a literal 0 dim beside it makes the size 0, with no
        symbol left, but the indices may still name the symbolic dim's loop variable)."""
        return any(d.free_symbols for d in (*self.xdims, *self.rdims))

    def _layout(self) -> str:
        """"inner", "outer" or "mixed" (triton_tiles): which loop variable walks
        consecutive elements in each row access."""
        kinds = set()
        for op in self.live:
            if isinstance(op, (kernel.LoadOp, kernel.StoreOp)) and _names_r(self.index[op]):
                kind = _contiguous_in(self.index[op], self.xdims, self.rdims)
                if kind:
                    kinds.add(kind)
        if "x" in kinds:
            return "mixed" if "r" in kinds else "outer"
        return "inner"

    def _passes(self) -> int:
        """The loops over R a looped variant makes: one per level with a reduction or
        a row store."""
        levels = {self.values[op.value].level for op in self.live if isinstance(op, kernel.ReduceOp)}
        levels |= {self.values[op.value].level for op in self.live if isinstance(op, kernel.StoreOp) and _names_r(self.index[op])}
        return max(1, len(levels))

    def _merge_indices(self) -> tuple[dict[Operation, sympy.Expr], dict[str, tuple[str, int, int]]]:
        """Each index over merged runs of loop variables (or over the loop variables
        themselves, where it is not affine in them), and every run's definition."""
        dims = {"x": self.xdims, "r": self.rdims}
        code: dict[Operation, sympy.Expr] = {}
        runs: dict[str, tuple[str, int, int]] = {}
        for op, expr in self.index.items():
            merged = merged_index(expr, dims) if FEATURES["merge_index"] else None
            if merged is None:
                merged = expr, {
                    s.name: (s.name[0], int(s.name[1:]), int(s.name[1:]))
                    for s in expr.free_symbols
                    if s.name[:1] in "xr" and s.name[1:].isdigit()
                }
            code[op] = merged[0]
            runs.update(merged[1])
        return code, runs

    def _tiles(self) -> list[Tile] | None:
        """The tiles the launcher may use, the heuristic's first; None when sizes are
        symbolic (the launcher then asks the heuristic at each call)."""
        if self.symbolic():
            return None
        if self.chosen:
            return list(self.chosen)
        xnumel, rnumel = int(self.xnumel), int(self.rnumel)
        if not self.rdims:
            return pointwise_configs(xnumel) if self.tune else [pointwise_tile(xnumel)]
        if self.tune:
            return reduction_configs(xnumel, rnumel, self.layout, self.splittable, self.row_loads, self.passes, self.row_itemsize)
        return [reduction_tile(xnumel, rnumel, self.layout, self.splittable, self.row_loads, self.passes, self.row_itemsize)]

    def _variants(self) -> list[str]:
        if not self.rdims:
            return ["pointwise"]
        if self.tiles is not None:
            found = {variant_of(t) for t in self.tiles}
            return [v for v in ("persistent", "looped", "split") if v in found]
        out = []
        if self.rnumel.free_symbols or persistent_fits(int(self.rnumel), self.layout, self.passes):
            out.append("persistent")
        out.append("looped")
        if self.splittable:
            out.append("split")
        return out

    def masked(self, which: str, variant: str) -> bool:
        """Whether the x or r mask is needed: always for symbolic sizes; for static
        ones, unless every tile of this variant divides the size."""
        numel = self.xnumel if which == "x" else self.rnumel
        if variant == "combine" or (variant == "split" and which == "r"):
            return True  # the combining grid is its own; chunks overhang the row
        if self.tiles is None or numel.free_symbols or not FEATURES["drop_masks"]:
            return True
        n = int(numel)
        tiles = [t for t in self.tiles if variant == "pointwise" or variant_of(t) == variant]
        block = (lambda t: t.xblock) if which == "x" else (lambda t: t.rblock)
        # n == 0: every lane is off, which only the mask says (0 % block is 0)
        return n == 0 or any(n % block(t) for t in tiles)

    # ------------------------------------------------------------------ module
    def kernel_names(self) -> dict[str, str]:
        """Variant → the name of its @triton.jit function."""
        if len(self.variants) == 1 and self.variants[0] != "split":
            return {self.variants[0]: self.name}
        names = {v: f"{self.name}_{v}" for v in self.variants}
        if "split" in names:
            names["combine"] = f"{self.name}_combine"
        return names

    def module(self) -> str:
        """The whole module: header, helpers, kernel variant(s), launchers."""
        names = self.kernel_names()
        bodies = {}
        params = {}
        for variant, name in names.items():
            emitter = BodyEmitter(self, variant)
            bodies[name] = emitter.emit()
            params[name] = emitter.params
        text = "\n".join(line for body in bodies.values() for line in body)
        self.used_symbols = [s for s in self.symbols if re.search(rf"\b{re.escape(s)}\b", text)]
        kernels = []
        for variant, name in names.items():
            args = self._kernel_args(variant, params[name])
            blocks = ["XBLOCK: tl.constexpr"] + (["RBLOCK: tl.constexpr"] if self.rdims else [])
            if self.device == "cuda":
                blocks.append(triton_pdl.PARAM_DECL)
            kernels.append(function_source(name, [*args, *blocks], bodies[name], "@triton.jit"))
        header = [
            f"# strata kernel {self.func.sym_name.data}",
            f"# from aten ops: {', '.join(self.func.source_ops)}",
            "import triton",
            "import triton.language as tl",
        ]
        if self.device == "cuda":
            header.append("from triton.language.extra import libdevice")
            header += triton_pdl.MODULE_LINES
        if "split" in self.variants:
            header.append("import torch")
            header.append("from strata.runtime.allocation import fast_empty_strided")
            # the split's workspaces: allocated without torch.empty's argument parsing
            header.append(f"_empty_strided = fast_empty_strided(torch.device({self.device!r}))")
        header.append("from strata.codegen.triton_launch import CallSite")
        header.append("from strata.codegen.triton_tiles import Tile, next_power_of_2, pointwise_tile, reduction_tile")
        header.append("_launch_nothing = lambda buffers: None  # bind's launch of an empty domain")
        constants = [f"LAYOUT = {self.layout!r}", f"SPLITTABLE = {self.splittable}", f"ROW_LOADS = {self.row_loads}", f"PASSES = {self.passes}",
                     f"ROW_ITEMSIZE = {self.row_itemsize}"]
        parts = ["\n".join(header), "\n".join(constants), *helper_sources(self.ops.helpers, self.device), *kernels]
        parts += LauncherSource(self).functions()
        return "\n\n\n".join(p.rstrip("\n") for p in parts) + "\n"

    def _kernel_args(self, variant: str, extra: list[str]) -> list[str]:
        args = list(self.buffers.values())
        if variant in ("split", "combine"):
            args += self.workspaces()
        args += self.used_symbols
        args += [n for n, e in (("xnumel", self.xnumel), ("rnumel", self.rnumel)) if e.free_symbols]
        return args + extra

    def workspaces(self) -> list[str]:
        return [f"ws{i}" for i, _ in enumerate(self.reduces())]

    def reduces(self) -> list[kernel.ReduceOp]:
        return [op for op in self.live if isinstance(op, kernel.ReduceOp)]

class BodyEmitter:
    """The statements of one kernel variant: "pointwise", "persistent", "looped",
    "split" (a split reduction's partials) or "combine" (its second kernel)."""

    def __init__(self, src: KernelSource, variant: str):
        self.src = src
        self.ops = src.ops
        self.variant = variant
        self.reduction = variant != "pointwise"
        self.xmasked = src.masked("x", variant)
        self.rmasked = self.reduction and src.masked("r", variant)
        self.params: list[str] = []  # run-time parameters beyond buffers and sizes
        self.defined: set[SSAValue] = set()  # values with a name in the lines so far
        self.lines: list[str] = []
        self.indent = ""

    def line(self, text: str) -> None:
        self.lines.append(self.indent + text)

    def assign(self, value: SSAValue, expr: str) -> None:
        self.line(f"{self.src.values[value].name} = {expr}")
        self.defined.add(value)

    def emit(self) -> list[str]:
        self._header()
        if self.variant == "pointwise":
            for op in self._hoisted(self.src.live):
                self._op(op)
        elif self.variant == "persistent":
            self._r_index("rbase", self.src.live)
            for op in self._hoisted(self.src.live):
                self._op(op)
        elif self.variant == "looped":
            self._looped()
        elif self.variant == "split":
            self._split_partials()
        else:
            self._split_combine()
        return self.lines

    def _hoisted(self, ops: list[Operation]) -> list[Operation]:
        """Loads first (in body order), so that all are in flight together."""
        if not FEATURES["hoist_loads"]:
            return ops
        first = [op for op in ops if isinstance(op, kernel.LoadOp) and not op.values]  # gathers wait for their indices
        hoisted = {id(op) for op in first}
        return first + [op for op in ops if id(op) not in hoisted]

    # ------------------------------------------------------------------ domain
    def _header(self) -> None:
        src = self.src
        if src.device == "cuda":
            for text in triton_pdl.BODY_LINES:
                self.line(text)
        for numel, dims in (("xnumel", src.xnumel), ("rnumel", src.rnumel if self.reduction else None)):
            if dims is not None and not dims.free_symbols:
                self.line(f"{numel} = {int(dims)}")
        pid = "tl.program_id(0).to(tl.int64)" if src.int64 else "tl.program_id(0)"
        lanes = "tl.arange(0, XBLOCK)" + ("[:, None]" if self.reduction else "")
        self.line(f"xindex = {pid} * XBLOCK + {lanes}")
        if self.xmasked:
            self.line("xmask = xindex < xnumel")
        if self.variant != "combine":
            self._define_runs("xindex", "x", self.src.live)
        if self.reduction:
            rbase = "tl.arange(0, RBLOCK)[None, :]"
            self.line(f"rbase = {rbase}.to(tl.int64)" if src.int64 else f"rbase = {rbase}")

    def _r_index(self, rindex: str, ops: list[Operation]) -> None:
        self.line(f"rindex = {rindex}")
        if self.rmasked:
            self.line("rmask = rindex < rnumel")
            if self.xmasked:
                self.line("xrmask = xmask & rmask")
        self._define_runs("rindex", "r", ops)

    def _define_runs(self, flat: str, prefix: str, ops: list[Operation]) -> None:
        """The merged loop variables (triton_index.merged_index) that `ops` use."""
        used = {s.name for op in ops if op in self.src.code_index for s in self.src.code_index[op].free_symbols}
        dims = self.src.xdims if prefix == "x" else self.src.rdims
        for name in sorted(used):
            run = self.src.runs.get(name)
            if run is None or run[0] != prefix or name == flat:
                continue
            self.line(f"{name} = {run_code(flat, dims, run[1], run[2])}")

    # ------------------------------------------------------------------ looped reductions
    def _looped(self) -> None:
        src = self.src
        loops = []
        for level in range(max((self._level(op) for op in src.live), default=0) + 1):
            reduces = [op for op in src.live if isinstance(op, kernel.ReduceOp) and src.values[op.value].level == level]
            stores = [op for op in src.live if isinstance(op, kernel.StoreOp) and self._is_row(op) and self._level(op) == level]
            loops.append((level, reduces, stores, self._row_cone([*reduces, *stores]) if reduces or stores else []))
        for n, (level, reduces, stores, cone) in enumerate(loops):
            for op in src.live:
                if self._level(op) == level and not self._is_row(op) and not isinstance(op, kernel.ReduceOp):
                    self._op(op)
            if reduces or stores:
                later = {op for _, _, _, c in loops[n + 1 :] for op in c if isinstance(op, kernel.LoadOp)}
                self._loop(reduces, stores, cone, later)

    def _loop(self, reduces: list[kernel.ReduceOp], stores: list[kernel.StoreOp], cone: list[Operation],
              later: set[Operation], bounds: str = "range(0, rnumel, RBLOCK)", finish: bool = True) -> None:
        for op in reduces:
            ident, acc_t = self._identity(op)
            self.line(f"{self._acc(op)} = tl.full([XBLOCK, RBLOCK], {ident}, {tl_dtype(acc_t)})")
        self.line(f"for roffset in {bounds}:")
        self.indent = "    "
        # a row named in an earlier loop holds that loop's last chunk: no guard here
        self.defined = {v for v in self.defined if not self._row_value(v)}
        self._r_index("roffset + rbase", [*cone, *stores])
        for op in self._hoisted(cone):
            if op in self.src.folded:
                continue
            if isinstance(op, kernel.LoadOp):
                keep = op in later or self._eviction(op) == "evict_last"
                self.assign(op.results[0], self._load(op, 'evict_last' if keep else 'evict_first'))
            else:
                self._op(op)
        for op in reduces:
            combine = REDUCE[op.kind.data][1].format(acc=self._acc(op), v=self._masked(op))
            self.line(f"{self._acc(op)} = {combine}")
            self._helper_of(op)
        for op in stores:
            self._op(op)
        self.indent = ""
        for op in reduces if finish else ():
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

    # ------------------------------------------------------------------ split reductions
    def _split_partials(self) -> None:
        """Program (x block, c) reduces chunk c (`rchunk` long) of its rows and stores
        each reduction's accumulated value, unrounded, at ws[x * split + c], and the
        chunk of each row the kernel stores."""
        src = self.src
        self.params = ["rchunk"]
        reduces = src.reduces()
        for op in src.live:
            if not self._is_row(op) and self._level(op) == 0 and not isinstance(op, (kernel.ReduceOp, kernel.StoreOp)):
                self._op(op)
        self.line("rstart = tl.program_id(1) * rchunk")
        stores = [op for op in src.live if isinstance(op, kernel.StoreOp) and self._is_row(op)]  # of level 0
        self._loop(reduces, stores, self._row_cone([*reduces, *stores]), set(), "range(rstart, rstart + rchunk, RBLOCK)",
                   finish=False)
        mask = ", mask=xmask" if self.xmasked else ""
        for ws, op in zip(src.workspaces(), reduces):
            reduced = REDUCE[op.kind.data][0].format(acc=self._acc(op))
            self.line(f"tl.store({ws} + (xindex * tl.num_programs(1) + tl.program_id(1)), {reduced}{mask})")

    def _split_combine(self) -> None:
        """Reduces each row's `split` partial values, then computes and stores what
        follows the reductions (and what needs none)."""
        src = self.src
        self.params = ["split"]
        self._define_runs("xindex", "x", [op for op in src.live if not self._is_row(op)])
        self.line("rindex = rbase")
        self.line("rmask = rindex < split")
        mask = "xmask & rmask" if self.xmasked else "rmask"
        for ws, op in zip(src.workspaces(), src.reduces()):
            ident, _ = self._identity(op)
            name = self.src.values[op.results[0]].name
            self.line(f"{name} = tl.load({ws} + (xindex * split + rindex), mask={mask}, other={ident})")
            self._finish(op, name)
            self.defined.add(op.results[0])
        for op in src.live:
            if not self._is_row(op) and not isinstance(op, kernel.ReduceOp):
                self._op(op)

    # ------------------------------------------------------------------ ops
    def _op(self, op: Operation) -> None:
        if op in self.src.folded:
            return  # computed by the selected load at its root (triton_selects)
        if isinstance(op, kernel.StoreOp):
            value = self.src.values[op.value].name
            mask = self._mask(op)
            self.line(f"tl.store({self._pointer(op)}, {value}{f', mask={mask}' if mask else ''})")
            return
        result = self.src.values[op.results[0]]
        if isinstance(op, kernel.ReduceOp):
            self._persistent_reduce(op)
            return
        if isinstance(op, CheckIndexOp):
            self._check_index(op, result)
            return
        self.assign(op.results[0], self._expr(op, result))

    def _check_index(self, op: CheckIndexOp, result: Value) -> None:
        """A user's index, checked by a device-side assert (triton_bounds)."""
        index, size = self.src.values[op.index].name, self.src.values[op.size].name
        if self.reduction and result.row and self.rmasked:
            mask = "xrmask" if self.xmasked else "rmask"
        else:
            mask = "xmask" if self.xmasked else None
        known = op.size.owner
        size_text = (str(known.value.value.data) if isinstance(known, arith.ConstantOp)
                     else known.index.data if isinstance(known, kernel.IndexOp) else size)
        for line in check_lines(result.name, index, size, size_text, op.wraps_negative, mask, op.dim.value.data,
                                op.indexing_op.data):
            self.line(line)

    def _expr(self, op: Operation, result: Value) -> str:
        args = [self.src.values[a].name for a in op.operands if a in self.src.values]
        if isinstance(op, kernel.LoadOp):
            return self._load(op, self._eviction(op))
        if isinstance(op, kernel.IndexOp):
            return f"tl.cast({int_code(self.src.code_index[op])}, {tl_dtype(result.dtype)})"
        if isinstance(op, arith.ConstantOp):
            # Triton's interpreter (3.9) gives a 0-d comparison its operands' dtype, and
            # broadcasting it against a block then turns its bools into floats: there,
            # constants are blocks of the kernel's scalar shape.
            shape = "[]" if self.ops.cuda else ("[XBLOCK, 1]" if self.reduction else "[XBLOCK]")
            return self.ops.constant(op.value.value.data, result.dtype, shape)
        if op in self.src.selects:
            return self._selected_load(op)
        if isinstance(op, WhereOp):
            return self.ops.where(*args)
        if isinstance(op, ConvertElementTypeOp):
            return self.ops.convert(args[0], scalar_dtype(op.x.type), result.dtype)
        if isinstance(op, PhiloxOp):
            return self.ops.helper("philox", *args, str(op.word_index))
        assert isinstance(op, ElementwiseOp)
        return self.ops.elementwise(op.name.removeprefix("prim."), scalar_dtype(op.args[0].type), args, op in self.src.bound_for_16_bits)

    def _load(self, op: kernel.LoadOp, eviction: str | None) -> str:
        mask = self._mask(op)
        guard = self._guard(op)
        if guard:
            mask = " & ".join(([mask] if mask else []) + guard)
        extra = f", mask={mask}" if mask else ""
        if eviction and FEATURES["eviction"]:
            extra += f", eviction_policy={eviction!r}"
        return f"tl.load({self._pointer(op)}{extra})"

    def _selected_load(self, root: WhereOp) -> str:
        """One load through the pointer the select's conditions pick (triton_selects)."""
        sel = self.src.selects[root]
        # Where every leaf's index is its own offset plus one same walk along the row,
        # the row's start is what is selected ([XBLOCK, 1]), and the walk added once.
        parts = [self._row_part(leaf.load) for leaf in sel.leaves]
        walk = parts[0][0]
        shared = walk != 0 and all(r == walk for r, _ in parts)

        def pointer(t) -> str:
            if isinstance(t, Leaf):
                if shared:
                    return f"{self.src.buffers[t.load.buffer]} + ({int_code(self._row_part(t.load)[1])})"
                return self._pointer(t.load)
            return f"tl.where({self.src.values[t.cond].name}, {pointer(t.a)}, {pointer(t.b)})"

        rows = [leaf.load for leaf in sel.leaves if self.src.values[leaf.load.result].row]
        mask = self._mask(rows[0] if rows else sel.leaves[0].load)
        evictions = {self._eviction(leaf.load) for leaf in sel.leaves}
        eviction = evictions.pop() if len(evictions) == 1 and FEATURES["eviction"] else None
        extra = (f", mask={mask}" if mask else "") + (f", eviction_policy={eviction!r}" if eviction else "")
        where = pointer(sel.tree) + (f" + ({int_code(walk)})" if shared else "")
        value = f"tl.load({where}{extra})"
        convert = sel.leaves[0].convert
        if convert is None:
            return value
        return self.ops.convert(value, scalar_dtype(convert.x.type), scalar_dtype(convert.results[0].type))

    def _row_part(self, op: kernel.LoadOp) -> tuple[sympy.Expr, sympy.Expr]:
        """The load's index (as printed) split into its terms that name the reduction's
        loop variables and the rest."""
        expr = sympy.expand(self.src.code_index[op])
        walk = sympy.Add(*[t for t in sympy.Add.make_args(expr) if any(self._is_r(s) for s in t.free_symbols)])
        return walk, expr - walk

    def _is_r(self, s: sympy.Symbol) -> bool:
        run = self.src.runs.get(s.name)
        return run[0] == "r" if run is not None else s.name.startswith("r") and s.name[1:].isdigit() or s.name == "rindex"

    def _guard(self, op: kernel.LoadOp) -> list[str]:
        """The conditions under which the load's value is kept (triton_guards), those
        already computed here; none that is a row where the load is not (a mask of the
        tile's shape would widen the load)."""
        row = self.src.values[op.result].row
        terms = []
        for cond, kept in self.src.guards.get(op, ()):
            value = self.src.values.get(cond)
            if value is None or cond not in self.defined or (value.row and not row):
                continue
            terms.append(value.name if kept else f"({value.name} == 0)")
        return terms

    def _eviction(self, op: kernel.LoadOp) -> str | None:
        """In a reduction, a row every program reads (weights broadcast over x) stays
        in cache."""
        if not self.reduction or not _names_r(self.src.index[op]) or op.values:
            return None  # (a gather's position may vary with x)
        names = {s.name for s in self.src.index[op].free_symbols}
        return None if any(n.startswith("x") and n[1:].isdigit() for n in names) else "evict_last"

    def _pointer(self, op: kernel.LoadOp | kernel.StoreOp) -> str:
        """Pointers of the op's full shape: an index that names no x (or, for a row,
        no r) is broadcast so that it matches its mask."""
        expr = self.src.index[op]
        code = int_code(self.src.code_index[op])
        names = {s.name for s in expr.free_symbols}
        if not any(n.startswith("x") and n[1:].isdigit() for n in names):
            shape = "[XBLOCK, 1]" if self.reduction else "[XBLOCK]"
            code = f"{code} + tl.full({shape}, 0, {'tl.int64' if self.src.int64 else 'tl.int32'})"
        return f"{self.src.buffers[op.buffer]} + ({code})"

    def _mask(self, op: kernel.LoadOp | kernel.StoreOp) -> str | None:
        row = _names_r(self.src.index[op]) or (isinstance(op, kernel.LoadOp) and self.src.values[op.result].row)
        if self.reduction and row and self.rmasked:
            return "xrmask" if self.xmasked else "rmask"
        return "xmask" if self.xmasked else None

    # ------------------------------------------------------------------ reductions
    def _identity(self, op: kernel.ReduceOp) -> tuple[str, str]:
        acc_t = acc_dtype(self.src.values[op.value].dtype)
        kind = op.kind.data
        if kind in ("sum", "prod"):
            return ("0" if kind == "sum" else "1"), acc_t
        if acc_t in FLOATS:
            return ('-float("inf")' if kind == "amax" else 'float("inf")'), acc_t
        # The value dtype's lowest (highest) value, not the accumulator's: an empty row
        # gives it (prim.reduction_identity), and narrow ints accumulate in i32.
        value_t = self.src.values[op.value].dtype
        return str(int(reduction_identity(kind, DTYPES[value_t]))), acc_t

    def _masked(self, op: kernel.ReduceOp) -> str:
        """The operand with masked-off lanes replaced by the identity."""
        value = self.src.values[op.value]
        ident, acc_t = self._identity(op)
        v = value.name if acc_t == value.dtype else f"{value.name}.to({tl_dtype(acc_t)})"
        if not self.rmasked:
            if value.row:
                return v
            # a scalar reduced over the row: broadcast it to the tile
            return f"tl.broadcast_to({v}, [XBLOCK, RBLOCK])"
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
        self.assign(op.results[0], reduced)


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


def _contiguous_in(expr: sympy.Expr, xdims: list[sympy.Expr], rdims: list[sympy.Expr]) -> str | None:
    """"r" when the innermost non-unit reduction variable steps through consecutive
    elements, "x" when the innermost pointwise one does, else None."""
    for prefix, dims in (("r", rdims), ("x", xdims)):
        fastest = [sym(f"{prefix}{i}") for i, d in enumerate(dims) if d != 1]
        if fastest and fastest[-1] in expr.free_symbols and sympy.expand(expr).coeff(fastest[-1]) == 1:
            return prefix
    return None


def _check_symbols(symbols: list[str]) -> None:
    for s in symbols:
        if not s.isidentifier() or keyword.iskeyword(s) or s in RESERVED or s.startswith("_") or GENERATED_NAME.match(s):
            raise CodegenError(f"shape symbol '{s}' clashes with a name the Triton code generator uses")
