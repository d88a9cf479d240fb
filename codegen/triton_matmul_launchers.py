"""The matmul template's launchers (codegen/triton_matmul.py): the Python half of a
template's module. `launch_tile(tile, buffers, symbols)` dispatches a tile to its
variant (the plain template, the library tile, the epilogue apart, split-K, the
persistent TMA tile), `bind_tile` gives a plain tile's launch worked out once,
`prepare_tile` compiles a tile without launching it, `tile_candidates` and `numels`
are the tuner's, and `launch` runs the heuristic tile."""

from __future__ import annotations

import sympy

from strata.codegen.triton_index import int_code
from strata.codegen.triton_launcher import EXACT_OPTIONS, FUSED_OPTIONS, function_source
from strata.dialects.types import DTYPES, scalar_dtype


class TemplateLaunchers:
    """The launcher writers of MatmulTemplate, which supplies the analysis they read
    (buffers, groups, the library tile's operands, the TMA operands, apart_chain)."""

    def _tma_launcher(self, unpack: list[str], sizes: list[str], options: str) -> str:
        """Launches a persistent TMA tile: the descriptors of the two operand views, or
        the plain tile where TMA cannot read them (an unaligned view)."""
        views = []
        for name, (load, strides, offset, rows), dims in zip(("a", "b"), self.tma_operands, (("m", "k"), ("k", "n"))):
            size = ", ".join(d.upper() for d in dims)
            view = _view(self.buffers[load.buffer], size, ", ".join(int_code(x, python=True) for x in strides), offset)
            block = [f"tile.block_{d}" for d in (dims if rows else dims[::-1])]
            views += [f"{name} = {view}" + ("" if rows else ".T"), f"{name}_block = [{', '.join(block)}]"]
        args = ", ".join([*self.buffers.values(), *self.symbols, "M", "N", "K"])
        keywords = ("BLOCK_M=tile.block_m, BLOCK_N=tile.block_n, BLOCK_K=tile.block_k, GROUP_M=tile.group_m, "
                    f"NUM_SMS=sms, {options}, num_warps=tile.num_warps, num_stages=tile.num_stages")
        lines = [*unpack, *sizes, *views,
                 "if not (tma_ready(a) and tma_ready(b)):",
                 "    return launch_tile(tile._replace(tma=False), buffers, symbols)",
                 f"sms = sm_count({next(iter(self.buffers.values()))}.device)",
                 "grid = (min(sms, -(-M // tile.block_m) * -(-N // tile.block_n)),)",
                 f"{self.name}_tma[grid](TensorDescriptor.from_tensor(a, a_block), TensorDescriptor.from_tensor(b, b_block), "
                 f"{args}, {keywords})"]
        return function_source("_tma", ["tile", "buffers", "symbols"], lines)

    def _launchers(self, library: bool, apart: bool, split: bool) -> list[str]:
        unpack = [f"{_unpack(list(self.buffers.values()))} = buffers"]
        if self.symbols:
            unpack.append(f"{_unpack(self.symbols)} = symbols")
        sizes = [f"{n} = {int_code(e, python=True)}" for n, e in self._sizes()]
        options = FUSED_OPTIONS if self.fp_fusion else EXACT_OPTIONS
        args = ", ".join([*self.buffers.values(), *self.symbols, "M", "N", "K"])
        numels = function_source("numels", ["symbols"], [*unpack[1:], *sizes, "return M, N, K, NBATCH"])
        candidates = function_source("tile_candidates", ["sizes"], [
            "M, N, K, NBATCH = sizes",
            "return candidate_tiles(M, N, K, WIDE, LIBRARY, APART, TMA and tma_available(), SPLIT, NBATCH)",
        ])
        guard = ["if M == 0 or N == 0 or NBATCH == 0:", "    return"]
        dispatch = ["if tile.library:", "    _library(buffers, symbols, M, N, K, NBATCH)", "    return"] if library else []
        grid = "grid = (-(-M // tile.block_m) * -(-N // tile.block_n), NBATCH)"
        keywords = (f"BLOCK_M=tile.block_m, BLOCK_N=tile.block_n, BLOCK_K=tile.block_k, GROUP_M=tile.group_m, "
                    f"EVEN_K=K % tile.block_k == 0, {options}, num_warps=tile.num_warps, num_stages=tile.num_stages")
        with_product = ", ".join([*self.buffers.values(), "product", *self.symbols, "M", "N", "K"])
        if apart:
            dispatch += ["if tile.epilogue_apart:", "    _apart(tile, buffers, symbols, M, N, K, NBATCH)", "    return"]
        if self.tma_operands is not None:
            dispatch += ["if tile.tma:", "    return _tma(tile, buffers, symbols)"]
        if split:
            dispatch += ["if tile.split_k > 1:", "    _split(tile, buffers, symbols, M, N, K, NBATCH)", "    return"]
        dispatch += [grid, f"{self.name}[grid]({args}, {keywords})"]
        tile_body = [*unpack, *sizes, *guard, *dispatch]
        # compiles a tile's kernel without launching it: the tuner compiles its
        # candidates side by side (codegen/triton_precompile.py)
        # (a TMA tile compiles at its first launch: its descriptors are made there)
        prepare_body = [*unpack, *sizes, "if tile.library or tile.tma or M == 0 or N == 0 or NBATCH == 0:", "    return", grid]
        if apart:
            prepare_body += ["if tile.epilogue_apart:", f"    product = {self._product_buffer()}",
                             f"    prepare_launch({self.name}_product, grid, ({with_product},), dict({keywords}))",
                             "    return"]
        if split:
            prepare_body += ["if tile.split_k > 1:", *[f"    {line}" for line in self._split_setup()],
                             f"    prepare_launch({self.name}_partial, grid, ({self._partial_args()},), dict({keywords}))",
                             "    return"]
        prepare_body.append(f"prepare_launch({self.name}, grid, ({args},), dict({keywords}))")
        # launch_tile's plain tile as a function of the buffers, worked out once
        # (CallSite.bound): what max-autotune launches a tuned tile with
        bind_body = [*unpack[1:], *sizes,
                     f"if tile.library or tile.epilogue_apart or tile.tma or tile.split_k > 1 or M == 0 or N == 0 or NBATCH == 0 "
                     f"or not hasattr({self.name}, 'site'):", "    return None", grid,
                     f"return {self.name}.site(dict({keywords})).bound(grid, ({''.join(f'{s}, ' for s in self.symbols)}M, N, K))"]
        out = [numels, candidates, function_source("launch_tile", ["tile", "buffers", "symbols"], tile_body),
               function_source("bind_tile", ["tile", "symbols"], bind_body),
               function_source("prepare_tile", ["tile", "buffers", "symbols"], prepare_body)]
        # the heuristic tile, the sizes computed once
        launch_body = [*unpack, *sizes, *guard, "tile = heuristic_tile(M, N, K, WIDE)", *dispatch]
        out.append(function_source("launch", ["buffers", "symbols"], launch_body))
        if library:
            out.append(self._library_launcher(unpack, options))
        if self.tma_operands is not None:
            out.append(self._tma_launcher(unpack, sizes, options))
        if apart:
            out.append(function_source("_apart", ["tile", "buffers", "symbols", "M", "N", "K", "NBATCH"], [
                *unpack, f"product = {self._product_buffer()}", grid,
                f"{self.name}_product[grid]({with_product}, {keywords})",
                *_epilogue_launch(f"{self.name}_rest", with_product, options),
            ]))
        if split:
            out.append(function_source("_split", ["tile", "buffers", "symbols", "M", "N", "K", "NBATCH"], [
                *unpack, *self._split_setup(), f"{self.name}_partial[grid]({self._partial_args()}, {keywords})",
                *_epilogue_launch(f"{self.name}_split", f"{with_product}, split_stride", f"SPLIT_K=tile.split_k, {options}"),
            ]))
        return out

    def _partial_args(self) -> str:
        return ", ".join([*self.buffers.values(), "product", *self.symbols, "M", "N", "K", "k_chunk", "split_stride"])

    def _split_setup(self) -> list[str]:
        """Code setting up split-K's first launch: the f32 workspace of the chunks' sums,
        each chunk a whole number of BLOCK_K steps, and the grid, whose third axis walks
        the chunks."""
        first = next(iter(self.buffers.values()))
        return ["split_stride = NBATCH * M * N",
                f"product = torch.empty((tile.split_k * split_stride,), dtype=torch.float32, device={first}.device)",
                "k_chunk = -(-K // (tile.split_k * tile.block_k)) * tile.block_k",
                "grid = (-(-M // tile.block_m) * -(-N // tile.block_n), NBATCH, tile.split_k)"]

    def _product_buffer(self) -> str:
        """Code for the buffer the apart product kernel stores into."""
        dtype = str(DTYPES[scalar_dtype(self.apart_stored.type)])
        first = next(iter(self.buffers.values()))
        return f"torch.empty((NBATCH * M * N,), dtype={dtype}, device={first}.device)"

    def _convolution_launcher(self, unpack: list[str], options: str) -> str:
        """The library tile of a convolution: torch's (cuDNN's) on the buffers of x and w,
        where they hold x and w as they are (the template where they are views), its
        result laid out [n·oh·ow, c_out] for the epilogue kernel."""
        params, x, w = self.convolution
        shapes = f"tuple(x.shape) != {params['x']} or tuple(w.shape) != {params['w']}"
        # NHWC operands, so that cuDNN's result is [n·oh·ow, c_out] as it comes (an
        # NCHW input is copied, far less than a copy of the result would be)
        lines = [*unpack, f"x, w = {self.buffers[x.buffer]}, {self.buffers[w.buffer]}",
                 f"if {shapes}:", "    return launch_tile(heuristic_tile(M, N, K, WIDE), buffers, symbols)",
                 "x, w = x.contiguous(memory_format=torch.channels_last), w.contiguous(memory_format=torch.channels_last)"]
        bias = "None"
        if self.library_bias() is not None:
            _, load, stride, offset = self.library_bias()
            lines.append(f"bias = {_view(self.buffers[load.buffer], 'N', int_code(stride, python=True), offset)}")
            bias = "bias"
        call = (f"torch.convolution(x, w, {bias}, {params['stride']}, {params['padding']}, {params['dilation']}, "
                "False, (0, 0), 1)")
        args = ", ".join([*self.buffers.values(), "product", *self.symbols, "M", "N", "K"])
        lines += [f"product = {call}.permute(0, 2, 3, 1).contiguous()",
                  *_epilogue_launch(f"{self.name}_epilogue", args, options)]
        return function_source("_library", ["buffers", "symbols", "M", "N", "K", "NBATCH"], lines)

    def _library_launcher(self, unpack: list[str], options: str) -> str:
        if self.convolution is not None:
            return self._convolution_launcher(unpack, options)
        batch = self.groups["batch"]
        (la, sa, oa), (lb, sb, ob) = self.library_operands()
        shape = [int_code(d, python=True) for d in batch.dims]
        lines = [*unpack]

        def view(buffer: str, strides: list[sympy.Expr], offset: sympy.Expr, rows: str, cols: str) -> str:
            return _view(buffer, ", ".join([*shape, rows, cols]), ", ".join(int_code(x, python=True) for x in strides), offset)

        lines.append(f"a = {view(self.buffers[la.buffer], sa, oa, 'M', 'K')}")
        lines.append(f"b = {view(self.buffers[lb.buffer], sb, ob, 'K', 'N')}")
        bias = self.library_bias()
        call = "torch.matmul(a, b"
        if bias is not None:
            _, load, stride, offset = bias
            lines.append(f"bias = {_view(self.buffers[load.buffer], 'N', int_code(stride, python=True), offset)}")
            call = "torch.addmm(bias, a, b"
        direct = self.direct_store()
        if direct is not None:
            store, scale = direct
            strides, offset = self._view_strides(self.index[store], [*self._batch_groups(), self.groups["m"], self.groups["n"]])
            lines.append(f"out = {view(self.buffers[store.buffer], strides, offset, 'M', 'N')}")
            if scale == 1.0:
                lines.append(f"{call}, out=out)")
            else:  # beta=0: out's contents are ignored, NaNs included
                lines.append(f"out.{'baddbmm_' if batch.names else 'addmm_'}(a, b, beta=0, alpha={scale!r})")
        else:
            args = ", ".join([*self.buffers.values(), "product", *self.symbols, "M", "N", "K"])
            lines += [f"product = {call})", *_epilogue_launch(f"{self.name}_epilogue", args, options)]
        return function_source("_library", ["buffers", "symbols", "M", "N", "K", "NBATCH"], lines)


def _epilogue_launch(kernel_name: str, args: str, options: str) -> list[str]:
    """Code launching an epilogue kernel over a stored [NBATCH, M, N] product."""
    return [
        "bm, bn = min(64, max(16, 1 << (M - 1).bit_length())), min(64, max(16, 1 << (N - 1).bit_length()))",
        f"{kernel_name}[(-(-M // bm), -(-N // bn), NBATCH)]({args}, BLOCK_M=bm, BLOCK_N=bn, {options}, num_warps=4)",
    ]


def _view(buffer: str, size: str, stride: str, offset: sympy.Expr) -> str:
    """Code for a view of `buffer` at an offset from its own first element (a buffer may
    itself be a view into a larger allocation, and as_strided's offset counts from the
    storage's start)."""
    return f"torch.as_strided({buffer}, ({size},), ({stride},), {buffer}.storage_offset() + {int_code(offset, python=True)})"


def _unpack(names: list[str]) -> str:
    return ", ".join(names) + ("," if len(names) == 1 else "")
