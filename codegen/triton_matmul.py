"""The matmul template: a kernel.func whose reductions are matrix products (kernel.reduce
marked `strata.dot`, written by passes/matmul_to_dot.py) as a tiled Triton kernel of
`tl.dot`s, its prologue and epilogue fused.

The kernel's loop variables fall into groups by the side of the product that reads
them: *m* variables are read by the left operand only, *n* variables by the right one
only, *batch* variables by both (or neither), and the reduction variables are *k*. Each
program computes a [BLOCK_M, BLOCK_N] tile of one batch element (grouped along m,
GROUP_M tiles at a time, so that the tiles running together share operand rows in L2):
it walks k in BLOCK_K steps, evaluates each side's ops (its loads and the pointwise
prologue fusion put on them) on a [BLOCK_M, BLOCK_K] or [BLOCK_K, BLOCK_N] tile and
accumulates their `tl.dot` in f32, then evaluates what follows the reductions (bias,
activation, residual, rounding: the epilogue) on the [BLOCK_M, BLOCK_N] tile and stores
it. A side whose last op widens f16/bf16 to f32 goes to tl.dot in its own type (the
products are exact in f32 either way); f32 sides multiply at the mark's precision
("ieee", or "tf32" where torch allows it).

Tails: rows of m and n beyond the size are read wrapped (`rm % M`) and never stored; k
is masked where BLOCK_K does not divide it (the EVEN_* flags are constexprs the
launcher computes, so a divisible size compiles without masks).

The module has the interface of triton_source's: `launch(buffers, symbols)` with the
heuristic tile, `launch_tile(tile, buffers, symbols)`, `numels(symbols)` (the tuner's
key), and `tile_candidates(sizes)`, the tiles max-autotune times. Where both operands
are plain (strided) reads of buffers, one candidate is the *library* tile: torch.matmul
(cuBLAS) on views of the buffers, followed by the epilogue as its own kernel reading
the product, or writing the result directly where there is no epilogue. So the tuner
keeps cuBLAS where it is faster, with the cost of the unfused epilogue counted. The
launchers' text is written by codegen/triton_matmul_launchers.py.

`matmul_template(func)` says whether a kernel.func takes this form; one that does not
(a side reading both m and n, a gather, a row stored) goes to triton_source's generic
reduction, which computes it correctly, only without the tiled product.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass

import sympy

from xdsl.dialects import arith
from xdsl.ir import Operation, SSAValue

from strata.codegen.triton_index import fits_int32, int_code
from strata.codegen.triton_launcher import function_source
from strata.codegen.triton_matmul_launchers import TemplateLaunchers
from strata.codegen.triton_math import helper_sources
from strata.codegen.triton_scalar_ops import LOW_PRECISION, ScalarOps, tl_dtype
from strata.codegen.triton_source import _contraction_safe, _dtype_of, bound_for_16_bits, kernel_name
from strata.dialects import kernel
from strata.dialects.attributes import CONVOLUTION_ATTR, DOT_ATTR, convolution_params
from strata.dialects.prim import ConvertElementTypeOp, ElementwiseOp, WhereOp
from strata.dialects.types import scalar_dtype, sym

SIDES = ("a", "b")


@dataclass
class Group:
    """Loop variables of one kind, outermost first, with their sizes."""

    names: list[str]
    dims: list[sympy.Expr]

    @property
    def size(self) -> sympy.Expr:
        return sympy.Mul(*self.dims)

    def parts(self, flat: str) -> dict[str, str]:
        """Each variable as code over the flattened index `flat`."""
        out = {}
        inner = sympy.Integer(1)
        for name, dim in reversed(list(zip(self.names, self.dims))):
            if len(self.names) == 1:
                out[name] = flat
            else:
                code = f"({flat} // ({int_code(inner)}))" if inner != 1 else flat
                out[name] = f"({code} % ({int_code(dim)}))"
            inner = inner * dim
        return out


class MatmulTemplate(TemplateLaunchers):
    """The analysis of one kernel.func as a matmul template, and its module text."""

    def __init__(self, func: kernel.FuncOp, device: str):
        self.func = func
        self.device = device
        self.name = kernel_name(func)
        self.ops = ScalarOps(device)
        self.bound_for_16_bits = bound_for_16_bits(func)
        xdims = [sym(d) for d in func.pointwise_dims]
        rdims = [sym(d) for d in func.reduction_dims]
        self.unit = {sym(f"{k}{i}"): 0 for k, dims in (("x", xdims), ("r", rdims)) for i, d in enumerate(dims) if d == 1}
        self.index = {op: op.index_expr.xreplace(self.unit) for op in func.block.ops if isinstance(op, kernel.IndexedOp)}
        self.symbols = list(func.symbol_names)
        self.buffers = {a: f"in{i}" if i < func.num_inputs.value.data else f"out{i - func.num_inputs.value.data}"
                        for i, a in enumerate(func.block.args)}
        self.body = list(func.block.ops)
        self.dots = [op for op in self.body if isinstance(op, kernel.ReduceOp)]
        self.vars = self._variables()
        self.sides, self.operands = self._sides()
        self.groups = self._groups(xdims, rdims)
        self.names: dict[SSAValue, str] = {op.results[0]: f"v{n}" for n, op in enumerate(self.body) if op.results}
        self.fp_fusion = device == "cuda" and all(
            op in self.bound_for_16_bits or _contraction_safe(op, _dtype_of(r))
            for op in self.body for r in op.results if _dtype_of(r) in ("f32", "f64")
        )
        self.int64 = self._needs_int64(xdims, rdims)
        self.wide = any(self._dot_dtype(i) == "f32" for i in range(len(self.dots)))

    # ------------------------------------------------------------------ analysis
    def _variables(self) -> dict[SSAValue, frozenset[str]]:
        """The loop variables each value depends on."""
        out: dict[SSAValue, frozenset[str]] = {}
        for op in self.body:
            if isinstance(op, kernel.StoreOp):
                continue
            if isinstance(op, kernel.IndexedOp):
                found = frozenset(s.name for s in self.index[op].free_symbols if _is_loop_var(s.name))
                if isinstance(op, kernel.LoadOp):  # a gather: where its position's values vary too
                    found = found.union(*(out[v] for v in op.values))
            elif isinstance(op, arith.ConstantOp):
                found = frozenset()
            elif isinstance(op, (ElementwiseOp, WhereOp, ConvertElementTypeOp)):
                found = frozenset().union(*(out[v] for v in op.operands))
            elif isinstance(op, kernel.ReduceOp):
                found = frozenset(n for n in out[op.value] if n.startswith("x"))
            else:
                raise NotTemplate(f"{op.name} in the kernel")
            out[op.results[0]] = found
        return out

    def _sides(self) -> tuple[dict[Operation, set[str]], list[tuple[SSAValue, SSAValue]]]:
        """Which side each op of the products' operands is on, and each dot's (left,
        right) operands."""
        if not self.dots or any(op.kind.data != "sum" or DOT_ATTR not in op.attributes for op in self.dots):
            raise NotTemplate("not every reduction is a marked matrix product")
        pairs = []
        for op in self.dots:
            product = op.value.owner
            if not (isinstance(product, ElementwiseOp) and product.name == "prim.mul"):
                raise NotTemplate("a reduction of something other than a product")
            pairs.append(tuple(product.operands))
        # the left side reads the m variables: those the first dot's first operand reads
        # and its second does not
        # (a side may read none: one row, or one column, or a dot of two vectors)
        left, right = (self._xs(v) for v in pairs[0])
        m_vars, n_vars = left - right, right - left
        operands = []
        for p, q in pairs:
            if self._xs(p) & n_vars or self._xs(q) & m_vars:
                p, q = q, p
            if self._xs(p) & n_vars or self._xs(q) & m_vars:
                raise NotTemplate("products that disagree on which side reads which variable")
            operands.append((p, q))
        self.m_vars, self.n_vars = m_vars, n_vars
        sides: dict[Operation, set[str]] = {}
        for p, q in operands:
            for side, v in zip(SIDES, (p, q)):
                self._mark(self._peeled(v), side, sides)  # a widening tl.dot does not need is not computed
        products = {op.value.owner for op in self.dots}
        products |= {v.owner for pair in operands for v in pair if self._peeled(v) is not v}
        for op in self.body:
            rows = op.results and any(n.startswith("r") for n in self.vars[op.results[0]])
            if isinstance(op, kernel.StoreOp) and any(n.startswith("r") for n in self._names(op)):
                raise NotTemplate("a row is stored")
            if rows and op not in sides and op not in products:
                raise NotTemplate("a row that is no operand of a product")
        return sides, operands

    def _mark(self, v: SSAValue, side: str, sides: dict[Operation, set[str]]) -> None:
        """Puts v's cone on `side` (a value both sides read, a constant or a row of k
        alone, is computed on each)."""
        op = v.owner
        if not isinstance(op, Operation):
            return  # a buffer
        if isinstance(op, kernel.ReduceOp):
            raise NotTemplate("a product's operand that waits for a reduction")
        sides.setdefault(op, set()).add(side)
        for operand in op.operands:
            self._mark(operand, side, sides)

    def _xs(self, v: SSAValue) -> frozenset[str]:
        return frozenset(n for n in self.vars[v] if n.startswith("x"))

    def _names(self, op: kernel.IndexedOp) -> set[str]:
        return {s.name for s in self.index[op].free_symbols if _is_loop_var(s.name)}

    def _groups(self, xdims: list[sympy.Expr], rdims: list[sympy.Expr]) -> dict[str, Group]:
        def group(names, dims, prefix):
            kept = [(f"{prefix}{i}", d) for i, d in enumerate(dims) if f"{prefix}{i}" in names and d != 1]
            return Group([n for n, _ in kept], [d for _, d in kept])

        all_x = {f"x{i}" for i in range(len(xdims))}
        return {
            "m": group(self.m_vars, xdims, "x"),
            "n": group(self.n_vars, xdims, "x"),
            "batch": group(all_x - self.m_vars - self.n_vars, xdims, "x"),
            "k": group({f"r{i}" for i in range(len(rdims))}, rdims, "r"),
        }

    def _needs_int64(self, xdims, rdims) -> bool:
        if any(isinstance(op, kernel.LoadOp) and op.values for op in self.index):
            return True  # a gather's positions are i64 values
        if any(d.free_symbols for d in (*xdims, *rdims)) or any(
                s.name in self.symbols for e in self.index.values() for s in e.free_symbols):
            return True
        maxima = {f"x{i}": int(d) - 1 for i, d in enumerate(xdims)} | {f"r{i}": int(d) - 1 for i, d in enumerate(rdims)}
        # tiles overhang the sizes by up to a block (wrapped rows, masked k)
        slack = [sympy.Mul(*xdims) + 2**16, sympy.Mul(*rdims) + 2**16]
        return not fits_int32([*self.index.values(), *slack], maxima)

    def _peeled(self, v: SSAValue) -> SSAValue:
        """A side's operand as tl.dot takes it: a widening of f16/bf16 to f32 peeled off."""
        op = v.owner
        if isinstance(op, ConvertElementTypeOp) and scalar_dtype(op.x.type) in LOW_PRECISION:
            return op.x
        return v

    def _narrow(self, v: SSAValue) -> str:
        """The dtype a side's values all fit exactly: a widened f16/bf16 value's own,
        also through a `where` between it and a constant (a convolution's window, zero
        in the padding, whose where the kernel computes in f32)."""
        peeled = self._peeled(v)
        op = peeled.owner
        if peeled is v and isinstance(op, WhereOp) and isinstance(op.operands[2].owner, arith.ConstantOp):
            inner = self._peeled(op.operands[1])
            if inner is not op.operands[1]:
                return scalar_dtype(inner.type)
        return scalar_dtype(peeled.type)

    def _dot_dtype(self, i: int) -> str:
        """The type tl.dot multiplies in: the sides' own where they agree (Triton's
        interpreter computes with numpy, which has no bf16: f32 there)."""
        dp, dq = (self._narrow(v) for v in self.operands[i])
        return dp if dp == dq and self.device == "cuda" else "f32"

    # ------------------------------------------------------------------ library tile
    def library_operands(self) -> list[tuple[kernel.LoadOp, list[sympy.Expr], sympy.Expr]] | None:
        """For each side: its load, the strides of its view ([*batch, m, k] or [*batch,
        k, n]) and offset, where the one product's operands are strided reads of
        buffers (maybe widened to f32) whose variables of a group merge into one stride
        (m split as [b, t] by a linear layer of a 3-d input does); else None."""
        if len(self.dots) != 1:
            return None
        out = []
        for v, groups in zip(self.operands[0], (("m", "k"), ("k", "n"))):
            load = self._peeled(v).owner
            if not isinstance(load, kernel.LoadOp) or (v.owner is not load and scalar_dtype(v.type) != "f32"):
                return None
            strided = self._view_strides(self.index[load], [*self._batch_groups(), *(self.groups[g] for g in groups)])
            if strided is None:
                return None
            out.append((load, *strided))
        (la, _, _), (lb, _, _) = out
        if scalar_dtype(la.result.type) != scalar_dtype(lb.result.type):
            return None
        return out

    @functools.cached_property
    def convolution(self) -> tuple[dict[str, tuple[int, ...]], kernel.LoadOp, kernel.LoadOp] | None:
        """For the one product that is a 2-d convolution (passes/convolution_to_dot.py),
        its parameters and the loads of x and w, where each side is one load of the
        convolution's dtype (maybe widened, maybe zeroed in the padding): the library
        tile then runs the convolution itself (cuDNN) on those buffers."""
        if len(self.dots) != 1 or CONVOLUTION_ATTR not in self.dots[0].attributes:
            return None
        loads = []
        for side, v in zip(SIDES, self.operands[0]):
            found = [op for op in self.sides if side in self.sides[op] and isinstance(op, kernel.LoadOp)]
            if len(found) != 1 or scalar_dtype(found[0].result.type) != self._narrow(v):
                return None
            loads.append(found[0])
        return convolution_params(self.dots[0].attributes[CONVOLUTION_ATTR]), *loads

    @functools.cached_property
    def tma_operands(self) -> list[tuple[kernel.LoadOp, list[sympy.Expr], sympy.Expr, bool]] | None:
        """For each side of a 2-d product whose operands are plain strided reads (the
        library tile's), its load, strides ([m, k] or [k, n]), offset and whether its
        rows are contiguous (stride 1 along k for a, along n for b; else along the other
        dim, read transposed): the persistent TMA tile reads them by tensor descriptors."""
        operands = self.library_operands()
        if operands is None or self.groups["batch"].names or self.convolution is not None:
            return None
        if any(1 not in strides for _, strides, _ in operands):
            return None
        return [(load, strides, offset, strides[1] == 1) for load, strides, offset in operands]

    def _batch_groups(self) -> list[Group]:
        batch = self.groups["batch"]
        return [Group([n], [d]) for n, d in zip(batch.names, batch.dims)]

    def _view_strides(self, expr: sympy.Expr, groups: list[Group]) -> tuple[list[sympy.Expr], sympy.Expr] | None:
        """The stride of each group in `expr` (its variables merged) and the offset."""
        affine = _affine(expr, [n for g in groups for n in g.names])
        if affine is None:
            return None
        strides, offset = affine
        merged = [_merged_stride(strides, g) for g in groups]
        return None if any(m is None for m in merged) else (merged, offset)

    def library_bias(self) -> tuple[Operation, kernel.LoadOp, sympy.Expr, sympy.Expr] | None:
        """Where the product's one reader adds a bias along n (a linear layer's): that
        add, the bias's load, its stride and offset; the library tile then calls
        torch.addmm, whose cuBLASLt epilogue adds it. 2-d products only."""
        uses = list(self.dots[0].result.uses)
        if self.groups["batch"].names or len(uses) != 1:
            return None
        add = uses[0].operation
        if not (isinstance(add, ElementwiseOp) and add.name == "prim.add"):
            return None
        other = next(v for v in add.operands if v is not self.dots[0].result)
        load = self._peeled(other).owner
        if not isinstance(load, kernel.LoadOp) or scalar_dtype(load.result.type) != self._narrow(self.operands[0][0]):
            return None
        strided = self._view_strides(self.index[load], [self.groups["n"]])
        if strided is None or strided[0][0] == 0:
            return None
        return add, load, strided[0][0], strided[1]

    def stand_in(self) -> Operation:
        """The op whose value the library tile's product stands for: the bias add, or
        the product itself."""
        bias = self.library_bias()
        return bias[0] if bias is not None else self.dots[0]

    def direct_store(self) -> tuple[kernel.StoreOp, float] | None:
        """The one store and a scale, where it stores the library's result, times a
        constant power of two or not (scale 1), rounded to its operands' dtype, and
        nothing else happens: the library tile then writes it itself, the scale as
        cuBLAS's alpha. That is exact: scaling by 2**k commutes with rounding (short of
        the subnormal range), and every rounding on the way is to that one dtype. A
        scale only where nothing is added first (no bias) and the product has at most
        one batch dim (addmm_, baddbmm_)."""
        stores = [op for op in self.body if isinstance(op, kernel.StoreOp)]
        if len(stores) != 1:
            return None
        dtype = scalar_dtype(self._peeled(self.operands[0][0]).owner.result.type)
        if scalar_dtype(stores[0].value.type) != dtype:
            return None
        v, scale = stores[0].value, 1.0
        scalable = self.library_bias() is None and len(self.groups["batch"].names) <= 1
        while v.owner is not self.stand_in():
            op = v.owner
            if isinstance(op, ConvertElementTypeOp) and scalar_dtype(op.results[0].type) in ("f32", dtype):
                v = op.x
            elif scalable and scale == 1.0 and isinstance(op, ElementwiseOp) and op.name == "prim.mul":
                constants = [x for x in op.operands if isinstance(x.owner, arith.ConstantOp)]
                if len(constants) != 1 or not _power_of_two(constants[0].owner.value.value.data):
                    return None
                scale = float(constants[0].owner.value.value.data)
                v = next(x for x in op.operands if x is not constants[0])
            else:
                return None
        groups = [*self._batch_groups(), self.groups["m"], self.groups["n"]]
        return (stores[0], scale) if self._view_strides(self.index[stores[0]], groups) is not None else None

    @functools.cached_property
    def apart_chain(self) -> list[Operation] | None:
        """Where the epilogue can run apart: the ops from the one product to its first
        rounding to 16 bits (a bias add, a scale, conversions; each the one reader of
        the one before, its other operands read along m or n), computed by the product's
        kernel and stored in their last op's dtype, and something more than conversions
        after them for a second kernel to do (else there is nothing to set apart)."""
        if len(self.dots) != 1:
            return None
        chain: list[Operation] = []
        v = self.dots[0].result
        while True:
            uses = list(v.uses)
            op = uses[0].operation if len(uses) == 1 else None
            if isinstance(op, ConvertElementTypeOp):
                chain.append(op)
                v = op.results[0]
                if scalar_dtype(v.type) in LOW_PRECISION:
                    break
            elif (isinstance(op, ElementwiseOp) and op.name in ("prim.add", "prim.sub", "prim.mul")
                  and all(x is v or not any(n.startswith("r") for n in self.vars[x]) for x in op.operands)
                  and sum(1 for x in op.operands if x is v) == 1):
                chain.append(op)
                v = op.results[0]
            else:
                break
        last = chain[-1] if chain else self.dots[0]
        readers, seen = [use.operation for use in last.results[0].uses], set()
        while readers:  # whatever reads the stored value, directly or not
            op = readers.pop()
            if op in seen:
                continue
            seen.add(op)
            if isinstance(op, (ElementwiseOp, WhereOp)):
                return chain
            readers += [use.operation for r in op.results for use in r.uses]
        return None

    @property
    def apart_stored(self) -> SSAValue:
        """The value the apart product kernel stores: the last op of apart_chain's, or
        the product's where the chain is empty."""
        chain = self.apart_chain
        return (chain[-1] if chain else self.dots[0]).results[0]

    # ------------------------------------------------------------------ code
    def module(self) -> str:
        kernels = [self._kernel("fused")]
        library = self.library_operands() is not None or self.convolution is not None
        apart = self.apart_chain is not None
        if library:
            kernels.append(self._kernel("library"))
        if apart:
            kernels += [self._kernel("product"), self._kernel("rest")]
        tma = self.tma_operands is not None
        if tma:
            kernels.append(self._tma_kernel())
        split = len(self.dots) == 1
        if split:
            kernels += [self._kernel("partial"), self._kernel("split")]
        header = [
            f"# strata kernel {self.func.sym_name.data}: matmul template",
            f"# from aten ops: {', '.join(self.func.source_ops)}",
            "import torch",
            "import triton",
            "import triton.language as tl",
        ]
        if self.device == "cuda":
            header.append("from triton.language.extra import libdevice")
        header.append("from strata.codegen.triton_matmul_tiles import MatmulTile, candidate_tiles, heuristic_tile")
        if tma:
            header.append("from strata.codegen.triton_matmul_tiles import sm_count, tma_available, tma_ready")
            header.append("from triton.tools.tensor_descriptor import TensorDescriptor")
        header.append("from strata.codegen.triton_precompile import prepare_launch")
        constants = [f"LIBRARY = {library}", f"APART = {apart}", f"WIDE = {self.wide}", f"TMA = {tma}", f"SPLIT = {split}"]
        parts = ["\n".join(header), "\n".join(constants), *helper_sources(self.ops.helpers, self.device), *kernels]
        parts += self._launchers(library, apart, split)
        return "\n\n\n".join(p.rstrip("\n") for p in parts) + "\n"

    def _sizes(self) -> list[tuple[str, sympy.Expr]]:
        return [("M", self.groups["m"].size), ("N", self.groups["n"].size), ("K", self.groups["k"].size),
                ("NBATCH", self.groups["batch"].size)]

    def _kernel(self, mode: str) -> str:
        """mode: "fused" (the template), "library" (the epilogue after the library's
        product), "product" (the template up to apart_chain's last op, stored), "rest"
        (the epilogue after it), "partial" (split-K: the product over one chunk of k,
        stored in f32), "split" (the chunks summed, then the epilogue)."""
        lines: list[str] = []
        name = {"fused": self.name, "library": f"{self.name}_epilogue"}.get(mode, f"{self.name}_{mode}")
        epilogue_only = mode in ("library", "rest", "split")
        params = list(self.buffers.values()) + (["product"] if mode != "fused" else []) + self.symbols
        params += ["M", "N", "K"] + {"partial": ["k_chunk", "split_stride"], "split": ["split_stride"]}.get(mode, [])
        params += ["BLOCK_M: tl.constexpr", "BLOCK_N: tl.constexpr"]
        if not epilogue_only:
            params += ["BLOCK_K: tl.constexpr", "GROUP_M: tl.constexpr", "EVEN_K: tl.constexpr"]
        if mode == "split":
            params.append("SPLIT_K: tl.constexpr")
        to64 = ".to(tl.int64)" if self.int64 else ""
        if epilogue_only:
            lines += ["pid_m = tl.program_id(0)", "pid_n = tl.program_id(1)"]
        else:
            lines += [
                "pid = tl.program_id(0)",
                "grid_m = (M + BLOCK_M - 1) // BLOCK_M",
                "grid_n = (N + BLOCK_N - 1) // BLOCK_N",
                "width = GROUP_M * grid_n",
                "group_id = pid // width",
                "group_size = tl.minimum(grid_m - group_id * GROUP_M, GROUP_M)",
                "pid_m = group_id * GROUP_M + (pid % group_size)",
                "pid_n = (pid % width) // group_size",
            ]
        batch = self.groups["batch"]
        lines.append(f"batch = tl.program_id({1 if not epilogue_only else 2}){to64}")
        for var, code in batch.parts("batch").items():
            lines.append(f"{var} = {code}")
        lines.append(f"rm = pid_m{to64} * BLOCK_M + tl.arange(0, BLOCK_M)")
        lines.append(f"rn = pid_n{to64} * BLOCK_N + tl.arange(0, BLOCK_N)")
        if not epilogue_only:
            lines += self._main_loop(chunked=mode == "partial")
        if mode == "partial":  # the chunk's sum, nothing of the epilogue
            lines += ["em = rm[:, None]", "en = rn[None, :]", "emask = (em < M) & (en < N)",
                      f"tl.store(product + tl.program_id(2) * split_stride + ({self._product_offset()}), acc0, mask=emask)"]
        else:
            lines += self._epilogue(mode)
        return function_source(name, params, lines, "@triton.jit")

    @staticmethod
    def _product_offset() -> str:
        """Where an element of the tile lies in a stored [NBATCH, M, N] product."""
        return "batch * M * N + em * N + en"

    def _tma_kernel(self) -> str:
        """The persistent TMA template: one program per multiprocessor walks the tiles
        (grouped along m as the plain template's grid is), each side read by its tensor
        descriptor (zero past the ends: no masks), then the same epilogue."""
        (_, _, _, a_rows), (_, _, _, b_rows) = self.tma_operands
        params = ["a_desc", "b_desc", *self.buffers.values(), *self.symbols, "M", "N", "K", "BLOCK_M: tl.constexpr",
                  "BLOCK_N: tl.constexpr", "BLOCK_K: tl.constexpr", "GROUP_M: tl.constexpr", "NUM_SMS: tl.constexpr"]
        to64 = ".to(tl.int64)" if self.int64 else ""
        a = "a_desc.load([pid_m * BLOCK_M, k0])" if a_rows else "a_desc.load([k0, pid_m * BLOCK_M]).T"
        b = "b_desc.load([k0, pid_n * BLOCK_N])" if b_rows else "b_desc.load([pid_n * BLOCK_N, k0]).T"
        dot = self._dot_dtype(0)
        if dot != self._narrow(self.operands[0][0]):
            a, b = f"{a}.to({tl_dtype(dot)})", f"{b}.to({tl_dtype(dot)})"
        precision = f", input_precision={self.dots[0].attributes[DOT_ATTR].data!r}" if dot == "f32" else ""
        body = [
            "group_id = pid // width",
            "group_size = tl.minimum(grid_m - group_id * GROUP_M, GROUP_M)",
            "pid_m = group_id * GROUP_M + (pid % group_size)",
            "pid_n = (pid % width) // group_size",
            f"rm = pid_m{to64} * BLOCK_M + tl.arange(0, BLOCK_M)",
            f"rn = pid_n{to64} * BLOCK_N + tl.arange(0, BLOCK_N)",
            "acc0 = tl.full([BLOCK_M, BLOCK_N], 0, tl.float32)",
            "for k0 in range(0, K, BLOCK_K):",
            f"    acc0 = tl.dot({a}, {b}, acc0{precision}, out_dtype=tl.float32)",
            *self._epilogue("fused"),
        ]
        lines = [
            "start = tl.program_id(0)",
            "grid_m = (M + BLOCK_M - 1) // BLOCK_M",
            "grid_n = (N + BLOCK_N - 1) // BLOCK_N",
            "width = GROUP_M * grid_n",
            "batch = 0",
            "for pid in range(start, grid_m * grid_n, NUM_SMS):",
            *[f"    {line}" for line in body],
        ]
        return function_source(f"{self.name}_tma", params, lines, "@triton.jit")

    def _main_loop(self, chunked: bool = False) -> list[str]:
        """The k loop accumulating each dot's tile; `chunked`: over this program's chunk
        of k alone (split-K's third grid axis; k_chunk a multiple of BLOCK_K, so that
        only the last chunk may run past K, where the masks are)."""
        m, n, k = self.groups["m"], self.groups["n"], self.groups["k"]
        lines = ["am = rm % M", "bn = rn % N"]  # rows past the end read wrapped, never stored
        env = {"a": {}, "b": {}}
        for var, code in m.parts("am").items():
            env["a"][var] = f"{code}[:, None]"
        for var, code in n.parts("bn").items():
            env["b"][var] = f"{code}[None, :]"
        for var, code in k.parts("ak").items():
            env["a"][var] = f"{code}[None, :]"
        for var, code in k.parts("bk").items():
            env["b"][var] = f"{code}[:, None]"
        for i in range(len(self.dots)):
            lines.append(f"acc{i} = tl.full([BLOCK_M, BLOCK_N], 0, tl.float32)")
        if chunked:
            lines += ["k_start = tl.program_id(2) * k_chunk",
                      "for k0 in range(k_start, tl.minimum(k_start + k_chunk, K), BLOCK_K):"]
        else:
            lines.append("for k0 in range(0, K, BLOCK_K):")
        to64 = ".to(tl.int64)" if self.int64 else ""
        body = [f"ak = k0 + tl.arange(0, BLOCK_K){to64}", "bk = ak"]
        even, masked = self._side_code(env, False), self._side_code(env, True)
        body += ["if EVEN_K:", *[f"    {x}" for x in even], "else:", *[f"    {x}" for x in masked]]
        for i, (p, q) in enumerate(self.operands):
            pa, pb = self._operand(p, "a"), self._operand(q, "b")
            prec = self.dots[i].attributes[DOT_ATTR].data
            # the precision says how f32 inputs are multiplied; 16-bit ones are exact either way
            precision = f", input_precision={prec!r}" if self._dot_dtype(i) == "f32" else ""
            body.append(f"acc{i} = tl.dot({pa}, {pb}, acc{i}{precision}, out_dtype=tl.float32)")
        lines += [f"    {x}" for x in body]
        return lines

    def _side_code(self, env: dict[str, dict[str, str]], masked: bool) -> list[str]:
        """The side ops of one k step, in body order; each dot's operands broadcast to
        their tiles, and zero past K where the step is masked."""
        lines = []
        shapes = {"a": "[BLOCK_M, BLOCK_K]", "b": "[BLOCK_K, BLOCK_N]"}
        kmask = {"a": "(ak < K)[None, :]", "b": "(bk < K)[:, None]"}
        for op in self.body:
            for side in sorted(self.sides.get(op, ())):
                name = f"{side}_{self.names[op.results[0]]}"
                if isinstance(op, kernel.LoadOp):
                    mask = masked and any(s.startswith("r") for s in self._names(op))
                    extra = f", mask={kmask[side]}, other=0" if mask else ""
                    lines.append(f"{name} = tl.load({self.buffers[op.buffer]} + ({self._index(op, env[side], side)}){extra})")
                elif isinstance(op, kernel.IndexOp):
                    lines.append(f"{name} = {self._index(op, env[side])}")
                else:
                    lines.append(f"{name} = {self._expr(op, side, shapes[side])}")
        for i, (p, q) in enumerate(self.operands):
            for side, v in zip(SIDES, (p, q)):
                value = self._peeled(v)
                code = f"tl.broadcast_to({side}_{self.names[value]}, {shapes[side]})"
                dot = self._dot_dtype(i)
                if dot != scalar_dtype(value.type):  # a widening, or a where of one narrowed back (exact)
                    code = f"{code}.to({tl_dtype(dot)})"
                zeroed = isinstance(value.owner, kernel.LoadOp) and any(n.startswith("r") for n in self._names(value.owner))
                if masked and not zeroed:  # past K: zero, whatever the side computed there
                    code = f"tl.where({kmask[side]}, {code}, 0)"
                lines.append(f"{self._operand(v, side)} = {code}")
        return lines

    def _operand(self, v: SSAValue, side: str) -> str:
        return f"{side}_op{self.names[self._peeled(v)]}"

    def _epilogue(self, mode: str) -> list[str]:
        m, n = self.groups["m"], self.groups["n"]
        env = {}
        lines = ["em = rm[:, None]", "en = rn[None, :]", "emask = (em < M) & (en < N)"]
        for var, code in m.parts("em").items():
            env[var] = code
        for var, code in n.parts("en").items():
            env[var] = code
        full = "tl.full([BLOCK_M, BLOCK_N], 0, tl.int64)" if self.int64 else "tl.full([BLOCK_M, BLOCK_N], 0, tl.int32)"
        at = f"product + ({self._product_offset()})"
        skipped: set[Operation] = set()  # computed by the other kernel
        kept: set[Operation] | None = None  # the only ops this kernel computes (None: all)
        if mode == "library":  # the library's result, in place of the op it computed
            stand_in = self.stand_in()
            skipped = {stand_in}
            lines.append(f"{self.names[stand_in.results[0]]} = tl.load({at}, mask=emask).to(tl.float32)")
        elif mode == "split":  # the product: the chunks' sums added
            skipped = {self.dots[0]}
            total = self.names[self.dots[0].result]
            lines += [f"{total} = tl.load({at}, mask=emask)", "for s in tl.static_range(1, SPLIT_K):",
                      f"    {total} += tl.load({at} + s * split_stride, mask=emask)"]
        elif mode == "rest":  # the product kernel's stored value, in its own dtype
            skipped = set(self.apart_chain)
            lines.append(f"{self.names[self.apart_stored]} = tl.load({at}, mask=emask)")
        else:
            lines += [f"{self.names[dot.result]} = acc{i}" for i, dot in enumerate(self.dots)]
        if mode == "product":
            kept = set()
            stack = list(self.apart_chain)
            while stack:  # the chain and what its other operands are computed from
                op = stack.pop()
                if op not in kept:
                    kept.add(op)
                    stack += [x.owner for x in op.operands if isinstance(x.owner, Operation)]
        for op in self.body:
            # rows (the sides' k-dependent values and the products) live in the k loop
            if isinstance(op, kernel.ReduceOp) or (op.results and any(v.startswith("r") for v in self.vars[op.results[0]])):
                continue
            if op in skipped or (kept is not None and op not in kept):
                continue
            if isinstance(op, kernel.StoreOp):
                value = f"tl.broadcast_to({self.names[op.value]}, [BLOCK_M, BLOCK_N])"
                lines.append(f"tl.store({self.buffers[op.buffer]} + ({self._index(op, env)} + {full}), {value}, mask=emask)")
            elif isinstance(op, kernel.LoadOp):
                lines.append(f"{self.names[op.results[0]]} = {self._epilogue_load(op, env, full)}")
            elif isinstance(op, kernel.IndexOp):
                lines.append(f"{self.names[op.results[0]]} = {self._index(op, env)}")
            else:
                lines.append(f"{self.names[op.results[0]]} = {self._expr(op, None, '[BLOCK_M, BLOCK_N]')}")
        if mode == "product":
            lines.append(f"tl.store({at}, tl.broadcast_to({self.names[self.apart_stored]}, [BLOCK_M, BLOCK_N]), mask=emask)")
        return lines

    def _epilogue_load(self, op: kernel.LoadOp, env: dict[str, str], full: str) -> str:
        """A load of the epilogue in the shape its index has: a bias along n as one
        [1, BLOCK_N] row, a value along m as one [BLOCK_M, 1] column (read once, not once
        per element of the tile, and broadcast by what uses it); else the whole tile."""
        names = self._names(op)
        pointer = f"{self.buffers[op.buffer]} + ({self._index(op, env, '')}"
        if names and names <= self.n_vars:
            return f"tl.load({pointer}), mask=en < N)"
        if names and names <= self.m_vars:
            return f"tl.load({pointer}), mask=em < M)"
        return f"tl.load({pointer} + {full}), mask=emask)"

    def _index(self, op: kernel.IndexedOp, env: dict[str, str], side: str | None = None) -> str:
        """The index's code over `env`'s loop variables; a gather's values (v0, …) as
        computed on `side` ("a", "b", or "" for the epilogue's)."""
        expr = self.index[op]
        code_of = dict(env)
        if isinstance(op, kernel.LoadOp) and op.values:
            prefix = f"{side}_" if side else ""
            code_of |= {n: f"{prefix}{self.names[v]}" for n, v in op.value_names.items()}
        names = {s: sympy.Symbol(f"__{s.name}", integer=True, nonnegative=True)
                 for s in expr.free_symbols if s.name in code_of or _is_loop_var(s.name)}
        code = int_code(expr.xreplace(names))
        for s, placeholder in names.items():
            code = code.replace(placeholder.name, f"({code_of.get(s.name, s.name)})")
        return code

    def _expr(self, op: Operation, side: str | None, shape: str) -> str:
        prefix = f"{side}_" if side else ""
        args = [f"{prefix}{self.names[a]}" for a in op.operands]
        result = scalar_dtype(op.results[0].type)
        if isinstance(op, arith.ConstantOp):
            return self.ops.constant(op.value.value.data, result, "[]" if self.ops.cuda else shape)
        if isinstance(op, WhereOp):
            return self.ops.where(*args)
        if isinstance(op, ConvertElementTypeOp):
            return self.ops.convert(args[0], scalar_dtype(op.x.type), result)
        assert isinstance(op, ElementwiseOp)
        return self.ops.elementwise(op.name.removeprefix("prim."), scalar_dtype(op.operands[0].type), args,
                                    op in self.bound_for_16_bits)


class NotTemplate(Exception):
    """Why a kernel.func is not a matmul template."""


def matmul_template(func: kernel.FuncOp, device: str) -> MatmulTemplate | None:
    """The template for `func`, or None where it is no marked matrix product, or one
    this template cannot run: then the generic reduction computes it, the same sum but
    far slower than a tiled product, which a warning says (naming the kernel, its
    source ops and why)."""
    if not any(isinstance(op, kernel.ReduceOp) and DOT_ATTR in op.attributes for op in func.block.ops):
        return None
    try:
        return MatmulTemplate(func, device)
    except NotTemplate as e:
        warnings.warn(f"strata: kernel {func.sym_name.data} ({', '.join(func.source_ops)}) holds a matrix product that "
                      f"the matmul template cannot run ({e}); it runs as a generic reduction, much slower than a "
                      "tiled product", stacklevel=2)
        return None


def _power_of_two(c: float) -> bool:
    """Whether c is ±2**k: a scale that commutes exactly with rounding."""
    return c != 0 and math.isfinite(c) and math.frexp(abs(c))[0] == 0.5


def _is_loop_var(name: str) -> bool:
    return name[:1] in "xr" and name[1:].isdigit()


def _affine(expr: sympy.Expr, variables: list[str]) -> tuple[dict[str, sympy.Expr], sympy.Expr] | None:
    """The coefficient of each variable and the rest, where `expr` is affine in them
    (and names no other loop variable)."""
    symbols = {s.name: s for s in expr.free_symbols}
    if any(_is_loop_var(n) and n not in variables for n in symbols):
        return None
    expanded = sympy.expand(expr)
    strides = {}
    rest = expanded
    for v in variables:
        s = symbols.get(v)
        if s is None:
            continue
        c = expanded.coeff(s)
        if c.free_symbols & {symbols[n] for n in variables if n in symbols}:
            return None
        strides[v] = c
        rest = rest - c * s
    rest = sympy.expand(rest)
    if any(_is_loop_var(s.name) for s in rest.free_symbols):
        return None
    return strides, rest


def _merged_stride(strides: dict[str, sympy.Expr], group: Group) -> sympy.Expr | None:
    """One stride for a group's variables (outermost first), where each steps over
    exactly the next one's extent (0 for a group of none, or one the index skips)."""
    names, dims = group.names, group.dims
    if not names:
        return sympy.Integer(0)
    found = [strides.get(n, sympy.Integer(0)) for n in names]
    for outer, inner, extent in zip(found, found[1:], dims[1:]):
        if sympy.simplify(outer - inner * extent) != 0:
            return None
    return found[-1]
