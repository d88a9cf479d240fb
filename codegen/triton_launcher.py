"""The Python half of a generated Triton module: the launchers.

`launch(buffers, symbols)` runs the heuristic tile: with static sizes the tile, the
grid and the options are baked in, and each launch goes through a module-level
CallSite (triton_launch), which skips Triton's per-launch argument binding; with
symbolic sizes it computes the sizes, asks triton_tiles for a tile and launches
through the kernels' DirectLaunchers. `launch_tile(tile, buffers, symbols)` runs any
tile the module has a variant for (max-autotune times tiles through it), and
`numels(symbols)` gives the domain's sizes. A split reduction's launch allocates its
workspaces, then launches the partial and the combining kernels.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from strata.codegen.triton_bounds import CHECKED_OPTIONS
from strata.codegen.triton_index import int_code
from strata.codegen.triton_scalar_ops import acc_dtype
from strata.codegen.triton_tiles import Tile, next_power_of_2

if TYPE_CHECKING:
    from strata.codegen.triton_source import KernelSource

# Launch options. Eager PyTorch rounds after every op, so a multiply fused into the add
# of the next op would change results: a kernel is compiled with FMA contraction only
# where that cannot happen (KernelSource.fp_fusion): every f32 value either ends in a
# rounding to f16/bf16, which hides the difference as it hides the approximate
# functions' (triton_source.bound_for_16_bits), or comes from an op whose products are
# written as PTX mul.rn and whose libdevice calls do not change with contraction
# (triton_scalar_ops.CONTRACTION_SAFE).
EXACT_OPTIONS = "enable_fp_fusion=False"
FUSED_OPTIONS = "enable_fp_fusion=True"


class LauncherSource:
    """The launcher functions of one kernel's module."""

    def __init__(self, src: KernelSource):
        self.src = src
        self.sites: list[str] = []
        self.options = FUSED_OPTIONS if src.fp_fusion else EXACT_OPTIONS
        if src.checks:  # device asserts compiled in (triton_bounds)
            self.options += f", {CHECKED_OPTIONS}"

    def functions(self) -> list[str]:
        """numels, launch_tile, the CallSites, launch: each a block of source."""
        out = [
            function_source("numels", ["symbols"], self._numels()),
            function_source("launch_tile", ["tile", "buffers", "symbols"], self._launch_tile()),
            function_source("bind_tile", ["tile", "symbols"], self._bind_tile()),
            function_source("bind", ["symbols"], self._bind()),
        ]
        launch = function_source("launch", ["buffers", "symbols"], self._launch())
        if self.sites:
            out.append("\n".join(self.sites))
        return out + [launch]

    def _unpack_lines(self) -> list[str]:
        lines = [f"{_unpack(list(self.src.buffers.values()))} = buffers"]
        if self.src.symbols:
            lines.append(f"{_unpack(self.src.symbols)} = symbols")
        return lines

    def _numels(self) -> list[str]:
        lines = [f"{_unpack(self.src.symbols)} = symbols"] if self.src.symbols and self.src.symbolic() else []
        x = int_code(self.src.xnumel, python=True)
        r = int_code(self.src.rnumel, python=True) if self.src.rdims else "1"
        return lines + [f"return {x}, {r}"]

    def _launch(self) -> list[str]:
        lines = self._unpack_lines()
        if self.src.tiles is not None:
            if int(self.src.xnumel) == 0:
                return lines + ["return  # empty domain"]
            return lines + self._launch_code(self.src.tiles[0])
        return lines + self._heuristic_tile("return") + self._launch_code(None)

    def _heuristic_tile(self, when_empty: str) -> list[str]:
        """The sizes and the heuristic's tile for them, at run time; `when_empty`: the
        statement for an empty domain."""
        lines = [f"xnumel = {int_code(self.src.xnumel, python=True)}", "if xnumel == 0:", f"    {when_empty}"]
        if self.src.rdims:
            lines.append(f"rnumel = {int_code(self.src.rnumel, python=True)}")
            lines.append("tile = reduction_tile(xnumel, rnumel, LAYOUT, SPLITTABLE, ROW_LOADS, PASSES, ROW_ITEMSIZE)")
        else:
            lines.append("tile = pointwise_tile(xnumel)")
        return lines

    def _launch_tile(self) -> list[str]:
        lines = self._unpack_lines()
        lines += [f"xnumel = {int_code(self.src.xnumel, python=True)}", "if xnumel == 0:", "    return"]
        if self.src.rdims:
            lines.append(f"rnumel = {int_code(self.src.rnumel, python=True)}")
        return lines + self._launch_code(None)

    def _bind(self) -> list[str]:
        """`launch(·, symbols)` as a function of the buffers alone, for symbols that
        keep their values (a graph specialized to a binding, runtime/specialized_graphs):
        the tile launch would ask the heuristic for, bound by bind_tile. None where
        bind_tile gives none (a split reduction, Triton's interpreter) or the module's
        sizes are static (its launch is bound already)."""
        if self.src.tiles is not None:
            return ["return None"]
        lines = [f"{_unpack(self.src.symbols)} = symbols"] if self.src.symbols else []
        return lines + self._heuristic_tile("return _launch_nothing") + ["return bind_tile(tile, symbols)"]

    def _bind_tile(self) -> list[str]:
        """`launch_tile(tile, ·, symbols)` as a function of the buffers alone, its grid,
        options and int arguments worked out now (CallSite.bound): what max-autotune
        launches a tuned tile with. None for a split reduction (two launches and their
        workspaces) or where the kernels are not DirectLaunchers (the interpreter)."""
        lines = [f"{_unpack(self.src.symbols)} = symbols"] if self.src.symbols else []
        lines += [f"xnumel = {int_code(self.src.xnumel, python=True)}"]
        if self.src.rdims:
            lines.append(f"rnumel = {int_code(self.src.rnumel, python=True)}")
        names = self.src.kernel_names()
        blocks = "XBLOCK=tile.xblock" + (", RBLOCK=tile.rblock" if self.src.rdims else "")
        ints = [*self.src.used_symbols, *(n for n, e in (("xnumel", self.src.xnumel), ("rnumel", self.src.rnumel))
                                          if e.free_symbols)]
        variants = ["pointwise"] if not self.src.rdims else [v for v in ("persistent", "looped") if v in names]
        guard = "xnumel == 0" + (" or tile.split > 1" if self.src.rdims else "")
        lines += [f"if {guard}:", "    return None"]
        alone = set(names) <= {"persistent"}  # else launch_tile's `if tile.persistent:`
        for variant in variants:
            cond = "tile.persistent" if variant == "persistent" and not alone else "True"
            lines += [f"if {cond} and hasattr({names[variant]}, 'site'):",
                      f"    site = {names[variant]}.site(dict({blocks}, {self.options}, num_warps=tile.num_warps))",
                      f"    return site.bound(({cdiv_code('xnumel', 'tile.xblock')},), ({''.join(f'{n}, ' for n in ints)}))"]
        return lines + ["return None"]

    def _launch_code(self, tile: Tile | None) -> list[str]:
        """Launch statements for a tile known now (`tile`) or held in `tile` at run time."""
        names = self.src.kernel_names()
        static = tile is not None

        def val(field: str) -> str:
            return str(getattr(tile, field)) if static else f"tile.{field}"

        blocks = f"XBLOCK={val('xblock')}" + (f", RBLOCK={val('rblock')}" if self.src.rdims else "")
        if not self.src.rdims:
            variants = ["pointwise"]
        elif static:
            variants = [variant_of(tile)]
        else:
            # the looped variant, if any, last: it is the `else`
            variants = [v for v in ("persistent", "split", "looped") if v in names]
        out = []
        for i, variant in enumerate(variants):
            body = self._variant_launch(variant, names, val, blocks, static)
            if len(variants) == 1:
                out += body
                continue
            cond = {"persistent": "tile.persistent", "split": "tile.split > 1", "looped": "True"}[variant]
            keyword_ = "if" if i == 0 else ("else" if i == len(variants) - 1 else "elif")
            out.append(f"{keyword_}:" if keyword_ == "else" else f"{keyword_} {cond}:")
            out += [f"    {line}" for line in body]
        return out

    def _variant_launch(self, variant: str, names: dict[str, str], val, blocks: str, static: bool) -> list[str]:
        """The launch of one variant; with a tile known now, through module-level
        CallSites (triton_launch), which skip Triton's per-launch argument binding."""
        base = list(self.src.buffers.values()) + self.src.used_symbols
        base_numels = [n for n, e in (("xnumel", self.src.xnumel), ("rnumel", self.src.rnumel)) if e.free_symbols]
        xnumel = str(int(self.src.xnumel)) if static else "xnumel"
        grid = f"{-(-int(self.src.xnumel) // int(val('xblock')))}" if static else cdiv_code("xnumel", val("xblock"))
        warps = f"num_warps={val('num_warps')}"
        if variant != "split":
            args = ", ".join([*base, *base_numels])
            if static:
                return [f"{self._site(names[variant], f'{blocks}, {self.options}, {warps}')}(({grid},), {args})"]
            return [f"{names[variant]}[({grid},)]({args}, {blocks}, {self.options}, {warps})"]
        # split: partial reductions into workspaces, then the combining kernel
        rnumel = str(int(self.src.rnumel)) if static else "rnumel"
        if static:
            split, rblock = int(val("split")), int(val("rblock"))
            cblock = next_power_of_2(split)
            cx = max(1, min(64, 2048 // cblock))
            lines = [f"split = {split}", f"rchunk = {-(-(-(-int(self.src.rnumel) // split)) // rblock) * rblock}"]
        else:
            lines = [
                f"split = {val('split')}",
                f"rchunk = {cdiv_code(cdiv_code(rnumel, 'split'), val('rblock'))} * {val('rblock')}",
                "cblock = next_power_of_2(split)",
                "cx = max(1, min(64, 2048 // cblock))",
            ]
        for ws, op in zip(self.src.workspaces(), self.src.reduces()):
            acc_t = acc_dtype(self.src.values[op.value].dtype)
            lines.append(f"{ws} = _empty_strided(({xnumel} * split,), (1,), torch.{_TORCH[acc_t]})")
        args = ", ".join([*self.src.buffers.values(), *self.src.workspaces(), *self.src.used_symbols, *base_numels])
        if static:
            partials = self._site(names["split"], f"{blocks}, {self.options}, {warps}")
            combine = self._site(names["combine"], f"XBLOCK={cx}, RBLOCK={cblock}, {self.options}, num_warps={max(1, min(8, cx * cblock // 256))}")
            lines.append(f"{partials}(({grid}, split), {args}, rchunk)")
            lines.append(f"{combine}(({-(-int(self.src.xnumel) // cx)},), {args}, split)")
            return lines
        lines.append(f"{names['split']}[({grid}, split)]({args}, rchunk, {blocks}, {self.options}, {warps})")
        lines.append(
            f"{names['combine']}[({cdiv_code(xnumel, 'cx')},)]({args}, split, XBLOCK=cx, RBLOCK=cblock, {self.options}, "
            f"num_warps=max(1, min(8, cx * cblock // 256)))"
        )
        return lines

    def _site(self, kernel_name_: str, options: str) -> str:
        """A module-level CallSite for `kernel_name_` with these options; its name."""
        name = f"_site{len(self.sites)}"
        self.sites.append(f"{name} = CallSite({kernel_name_}, {options})")
        return name



_TORCH = {"f32": "float32", "f64": "float64", "i32": "int32", "i64": "int64"}


def cdiv_code(a: str, b: str) -> str:
    """Python for ceil(a / b) on ints: plain arithmetic (triton.cdiv is a jit function,
    microseconds a call from the host, at every launch of a kernel of symbolic size)."""
    return f"-(-({a}) // ({b}))"


def variant_of(tile: Tile) -> str:
    """The reduction variant that runs `tile`."""
    if tile.persistent:
        return "persistent"
    return "split" if tile.split > 1 else "looped"


def _unpack(names: list[str]) -> str:
    return ", ".join(names) + ("," if len(names) == 1 else "")


def function_source(name: str, params: list[str], body: list[str], decorator: str = "") -> str:
    head = f"{decorator}\n" if decorator else ""
    return f"{head}def {name}({', '.join(params)}):\n" + "\n".join(f"    {line}" for line in body) + "\n"
