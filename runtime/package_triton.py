"""GPU kernels in an ahead-of-time package: Triton's cubins and the launcher that picks them.

`pack_kernel` takes a kernel codegen/triton_gpu.py compiled and the packager ran once:
it compiles (Triton, at packaging) every binary the kernel's launcher may need at any
size, and returns them as cubins with JSON metadata. `load_kernel` loads the cubins into
torch's static CUDA launcher (`torch._C._StaticCudaLauncher`, which TorchInductor uses)
and returns a callable with CompiledKernel.run's contract. Loading imports torch and
small strata modules (triton_tiles, allocation, package_format's errors): no Triton, no
xDSL, no code generator, and nothing is compiled.

The launcher is kept as text. A generated module's `launch` (codegen/triton_launcher.py)
computes the domain's sizes from the shape symbols, asks triton_tiles for a tile,
allocates a split reduction's workspaces and launches one or two kernels with grids and
options that follow from the tile. The package holds exactly those functions (numels,
launch_tile, launch and the module's CallSites), so a loaded kernel computes the sizes,
grids and tiles the JIT computes, and a change to the launcher's code is packaged with
it rather than re-implemented here. The text is checked, when packaged and again when
loaded, against a small grammar (`_check_launcher`): integer arithmetic, comparisons,
the tile's fields, calls of max/min/abs, triton.cdiv, next_power_of_2, the tile
heuristics and the workspace allocator, and launches of the package's kernels; no
import, no attribute or subscript but those, no call of anything else. It runs with no
builtins but max, min and abs. Like the integer expressions of program.json, it can
compute sizes and launch the package's own binaries (whose argument dtypes are
checked), nothing else.

Specialization. Triton compiles a kernel for properties of its arguments: each pointer
16-byte aligned or not; each int equal to 1 (then a constant), a multiple of 16, 32- or
64-bit. A package serves every size, so each launch configuration (a kernel and its
options) is compiled with ints never constant and always 64-bit (any value fits), for
a few *patterns* (per argument: pointer aligned, or int a multiple of 16, assumed or
not):
  - the patterns the packaging run launched (its sizes run as fast as under the JIT);
  - every pointer aligned and every int a multiple of 16 (sizes such as 768 or 4096);
  - every pointer aligned, nothing assumed of the ints (any size; torch's allocator
    aligns every buffer);
  - nothing assumed at all (a view at an odd offset).
At each launch the loaded kernel computes the launch's pattern and runs the most
specialized binary whose assumptions hold (remembered per pattern). A launch no binary
serves raises, naming the kernel; a binary is never run on arguments it was not built
for, and each configuration's dtypes are checked at its first launch with a pattern.

Tiles. A kernel of static sizes launches one fixed tile. A kernel of symbolic sizes asks
the heuristic at each call; the package holds the tiles the packaging run used (found by
matching the heuristic's tiles over sizes 0..2**31 against the configurations the run
launched), the tiles of sizes sampled from `ranges` when given, and a fallback tile
right at every size (the looped reduction, or the pointwise tile of large sizes). At
load, a size whose heuristic tile is not packaged runs the nearest packaged tile that is
right for it (symbolic kernels mask both axes, so any pointwise, looped or split tile
is, and a persistent one whose RBLOCK holds the row), else the fallback: the same
results, maybe slower. Under max-autotune the winners are fixed at packaging: a size the
packaging run tuned runs its winner; any other size runs as without max-autotune.
"""

from __future__ import annotations

import ast
import hashlib
import os
import tempfile
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch

from strata.codegen.triton_tiles import Tile, next_power_of_2, pointwise_tile, reduction_tile
from strata.runtime.allocation import fast_empty_strided

try:  # the package format's own errors, where it has them
    from strata.runtime.package_format import PackageError as LoadError, PackagingError
except ImportError:  # pragma: no cover
    LoadError, PackagingError = RuntimeError, ValueError

FORMAT = 1
FUNCTIONS = ("numels", "launch_tile", "launch")
CONSTANTS = ("LAYOUT", "SPLITTABLE", "ROW_LOADS", "PASSES", "ROW_ITEMSIZE")
HEURISTICS = {"pointwise_tile": pointwise_tile, "reduction_tile": reduction_tile}
DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "bfloat16",
          "float32", "float64", "float8_e4m3fn", "float8_e5m2")
# Triton's pointer element types, as its signatures name them.
TRITON_DTYPES = {"i1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8",
                 "u16": "uint16", "u32": "uint32", "u64": "uint64", "fp16": "float16", "bf16": "bfloat16",
                 "fp32": "float32", "fp64": "float64", "fp8e4nv": "float8_e4m3fn", "fp8e5": "float8_e5m2"}
# torch._C._StaticCudaLauncher's code for each scalar type (torch's static_triton_launcher).
ARG_CODES = {"i1": "i", "i8": "b", "i16": "h", "i32": "i", "i64": "l", "u1": "I", "u8": "B", "u16": "H", "u32": "I",
             "u64": "K", "fp16": "f", "bf16": "f", "fp32": "f", "fp64": "d"}
GENERIC_INT = 2**32 + 3  # what ints are compiled for: 64-bit, not 1, not a multiple of 16
DIVISIBLE_INT = 2**32 + 16  # the same, a multiple of 16
# Sizes at which the tile heuristic is asked at packaging: around each power of two,
# where its thresholds lie.
SIZES = sorted({0, 1, 2, 3} | {n for k in range(2, 32) for n in (2**k - 1, 2**k, 2**k + 1)})
UNBOUNDED = 2**20  # the largest value sampled of a symbol with no upper bound
MAX_SAMPLES = 4096  # symbol-value combinations sampled from `ranges`


# ---------------------------------------------------------------- target
def target_of(device: torch.device) -> dict:
    """The GPU the package's cubins are for (gpu_arch, compared at load), and the CUDA,
    torch and Triton that built them (recorded, not compared: loading uses none of
    Triton, and a driver too old for a cubin fails its load with CUDA's reason)."""
    index = _index(torch.device(device))
    return {"gpu_arch": _gpu_arch(index), "gpu": _gpu_name(index), "cuda": torch.version.cuda,
            "torch": torch.__version__, "triton": _version("triton")}


def check_target(target: Mapping, device: torch.device) -> None:
    """Refuses (LoadError) a package whose cubins this GPU cannot run, naming why: a
    cubin (sm_90a on a Hopper) runs on its compute capability only."""
    index = _index(torch.device(device))
    here = _gpu_arch(index)
    if target.get("gpu_arch") != here:
        raise LoadError(f"the package's GPU kernels were built for {target.get('gpu_arch')} ({target.get('gpu')}); "
                        f"this GPU ({_gpu_name(index)}) is {here}")


def _gpu_arch(index: int) -> str:
    major, minor = torch.cuda.get_device_capability(index)
    return f"sm_{major}{minor}"


def _gpu_name(index: int) -> str:
    return torch.cuda.get_device_name(index)


def _index(device: torch.device) -> int:
    if device.type != "cuda":
        raise ValueError(f"Triton kernels run on a CUDA device, not {device}")
    return device.index if device.index is not None else torch.cuda.current_device()


def _version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


# ---------------------------------------------------------------- the launcher text
def launcher_source(module_source: str, name: str) -> str:
    """The launcher functions of a generated module (numels, launch_tile, launch, the
    tile heuristic's constants and the CallSites), checked; the rest (imports, the
    @triton.jit kernels) is left out."""
    keep = []
    for node in ast.parse(module_source).body:
        if isinstance(node, ast.FunctionDef) and node.name in FUNCTIONS and not node.decorator_list:
            keep.append(node)
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            target = node.targets[0].id
            if target in CONSTANTS or (target.startswith("_site") and isinstance(node.value, ast.Call)):
                keep.append(node)
    text = ast.unparse(ast.Module(body=keep, type_ignores=[]))
    try:
        _check_launcher(text)
    except ValueError as e:
        raise PackagingError(f"kernel {name}: {e}") from None
    return text


def _check_launcher(text: str) -> set[str]:
    """Raises ValueError for anything outside the launcher grammar (module docstring);
    returns the names of the kernels it launches."""
    tree = ast.parse(text)
    kernels: set[str] = set()
    sites = set()
    for node in tree.body:
        target = node.targets[0].id if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
            isinstance(node.targets[0], ast.Name) else None
        value = getattr(node, "value", None)
        if target in CONSTANTS and isinstance(value, ast.Constant):
            continue
        if target is not None and target.startswith("_site") and isinstance(value, ast.Call) and \
                isinstance(value.func, ast.Name) and value.func.id == "CallSite" and len(value.args) == 1 and \
                isinstance(value.args[0], ast.Name):
            sites.add(target)
            kernels.add(value.args[0].id)
        elif not (isinstance(node, ast.FunctionDef) and node.name in FUNCTIONS):
            raise ValueError(f"launcher statement {ast.unparse(node)[:80]!r} is not one a package holds")
    callables = {"max", "min", "abs", "next_power_of_2", "_empty_strided", "CallSite", *HEURISTICS, *sites}
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED):
            raise ValueError(f"launcher code {type(node).__name__} ({_text(node)}) is not one a package holds")
        if isinstance(node, ast.FunctionDef):
            a = node.args
            if node.decorator_list or a.defaults or a.kw_defaults or a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
                raise ValueError(f"launcher function {node.name} has a form a package does not hold")
        elif isinstance(node, ast.Name) and node.id.startswith("__"):
            raise ValueError(f"launcher name {node.id} is not one a package holds")
        elif isinstance(node, ast.Constant) and type(node.value) not in (int, bool, str, type(None)):
            raise ValueError(f"launcher constant {node.value!r} is not one a package holds")
        elif isinstance(node, ast.Attribute):
            owner = node.value.id if isinstance(node.value, ast.Name) else None
            if not ((owner == "tile" and node.attr in Tile._fields) or (owner == "triton" and node.attr == "cdiv")
                    or (owner == "torch" and node.attr in DTYPES)):
                raise ValueError(f"launcher attribute {_text(node)} is not one a package holds")
        elif isinstance(node, ast.Call):
            func = node.func
            if any(k.arg is None for k in node.keywords) or any(isinstance(a, ast.Starred) for a in node.args):
                raise ValueError(f"launcher call {_text(node)} unpacks arguments")
            if isinstance(func, ast.Subscript) and isinstance(func.value, ast.Name):
                kernels.add(func.value.id)
            elif not ((isinstance(func, ast.Name) and func.id in callables) or isinstance(func, ast.Attribute)):
                raise ValueError(f"launcher call {_text(node)} is not one a package holds")
    subscripted = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript)}
    if any(isinstance(n, ast.Subscript) and id(n) not in subscripted for n in ast.walk(tree)):
        raise ValueError("launcher subscripts something other than a kernel it launches")
    if kernels & (callables | {"triton", "torch", "tile", "buffers", "symbols", *FUNCTIONS, *CONSTANTS}):
        raise ValueError(f"launcher kernel names {sorted(kernels)} clash with its own")
    return kernels


_ALLOWED = (ast.Module, ast.FunctionDef, ast.arguments, ast.arg, ast.Assign, ast.Expr, ast.If, ast.Return, ast.Pass,
            ast.Name, ast.Load, ast.Store, ast.Constant, ast.Tuple, ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp,
            ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.USub, ast.Not, ast.And, ast.Or, ast.Eq, ast.NotEq,
            ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.Call, ast.keyword, ast.Attribute, ast.Subscript)


def _text(node: ast.AST) -> str:
    return ast.unparse(node)[:80] if isinstance(node, ast.expr | ast.stmt) else type(node).__name__


class _Kernel:
    """A kernel name of the launcher text: `kernel[grid](*args, **options)` and
    `CallSite(kernel, **options)` both reach `site_of(name, options)`."""

    def __init__(self, name: str, site_of: Callable[[str, tuple], Callable]):
        self.name = name
        self.site_of = site_of
        self.sites: dict[tuple, Callable] = {}

    def site(self, options: tuple) -> Callable:
        site = self.sites.get(options)
        if site is None:
            site = self.sites[options] = self.site_of(self.name, options)
        return site

    def __getitem__(self, grid: tuple):
        return lambda *args, **options: self.site(tuple(options.items()))(grid, *args)


def _call_site(kernel: _Kernel, **options: Any) -> Callable:
    return kernel.site(tuple(options.items()))


def _cdiv(a: int, b: int) -> int:
    return (a + b - 1) // b


def _launcher(text: str, site_of: Callable[[str, tuple], Callable], heuristics: Mapping[str, Callable],
              alloc: Callable) -> dict:
    """The launcher text run (checked first) in a namespace of its own: its functions."""
    kernels = _check_launcher(text)
    namespace = {
        "__builtins__": {"max": max, "min": min, "abs": abs},
        "triton": types.SimpleNamespace(cdiv=_cdiv),
        "torch": types.SimpleNamespace(**{d: getattr(torch, d) for d in DTYPES if hasattr(torch, d)}),
        "next_power_of_2": next_power_of_2,
        "_empty_strided": alloc,
        "CallSite": _call_site,
        **heuristics,
        **{k: _Kernel(k, site_of) for k in kernels},
    }
    exec(compile(text, "<strata packaged launcher>", "exec"), namespace)  # noqa: S102 - checked above
    return namespace


def _unpacked(text: str, what: str) -> list[str]:
    """The names `launch` unpacks `buffers` or `symbols` into."""
    launch = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == "launch")
    for node in launch.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id == what:
            target = node.targets[0]
            return [e.id for e in target.elts] if isinstance(target, ast.Tuple) else [target.id]
    return []


# ---------------------------------------------------------------- packaging
class _Slot:
    """A buffer (`index`) or workspace (`dtype`) as the launcher passes it at packaging."""

    def __init__(self, index: int | None = None, dtype: torch.dtype | None = None):
        self.index, self.dtype = index, dtype


class _Plan:
    """The launcher text run at packaging with kernels that record their launches."""

    def __init__(self, text: str):
        self.text = text
        self.records: list[tuple[str, tuple, tuple]] = []
        self.calls: list[tuple[str, tuple, Tile]] = []  # the heuristic's: name, arguments, tile
        heuristics = {h: self._asking(h, fn) for h, fn in HEURISTICS.items()}
        self.ns = _launcher(text, lambda k, o: lambda grid, *args: self.records.append((k, o, args)), heuristics,
                            lambda sizes, strides, dtype: _Slot(dtype=dtype))
        self.buffers = [_Slot(i) for i in range(len(_unpacked(text, "buffers")))]
        self.symbols = _unpacked(text, "symbols")
        launch = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == "launch")
        self.symbolic = any(isinstance(n, ast.Name) and n.id in HEURISTICS for n in ast.walk(launch))

    def _asking(self, name: str, fn: Callable) -> Callable:
        def ask(*args):
            tile = fn(*args)
            self.calls.append((name, args, tile))
            return tile

        return ask

    def run(self, fn: str, *args: Any) -> list[tuple[str, tuple, tuple]]:
        self.records, self.calls = [], []
        self.ns[fn](*args)
        return self.records

    def launches(self, tile: Tile | None = None) -> list[tuple[str, tuple, tuple]]:
        """What `launch` (or launch_tile(tile)) launches, at sizes that launch something."""
        for value in (4099, 17, 2, 1):
            symbols = [value] * len(self.symbols)
            found = self.run("launch", self.buffers, symbols) if tile is None else \
                self.run("launch_tile", tile, self.buffers, symbols)
            if found:
                return found
        return []

    def heuristic(self) -> tuple[Callable, tuple]:
        """The heuristic `launch` asks and the arguments it passes after the sizes."""
        for value in (4099, 17, 2, 1):
            self.run("launch", self.buffers, [value] * len(self.symbols))
            if self.calls:
                name, args, _ = self.calls[0]
                return HEURISTICS[name], args[1:] if name == "pointwise_tile" else args[2:]
        raise ValueError("its launcher asks for no tile at any size tried")

    def candidates(self) -> set[Tile]:
        """The heuristic's tiles over sizes around every power of two up to 2**31."""
        fn, rest = self.heuristic()
        if fn is pointwise_tile:
            return {fn(x, *rest) for x in SIZES}
        return {fn(x, r, *rest) for x in SIZES for r in SIZES}

    def fallback(self) -> Tile:
        """A tile right at every size: the pointwise tile of large sizes, or the looped
        reduction's (it walks rows of any length; the symbolic kernel masks both axes)."""
        fn, rest = self.heuristic()
        tile = fn(2**40, *rest) if fn is pointwise_tile else fn(2**40, 2**40, *rest)
        assert not tile.persistent and tile.split == 1, tile
        return tile

    def sampled(self, ranges: Mapping[str, Sequence[int | None]]) -> set[Tile]:
        """The heuristic's tiles at symbol values sampled from `ranges` (name: [lower,
        upper], None unbounded): each range's ends, and around each power of two in it."""
        values = []
        for name in self.symbols:
            lower, upper = (list(ranges.get(name) or (None, None)) + [None, None])[:2]
            lower = 1 if lower is None else max(int(lower), 0)
            upper = max(lower, UNBOUNDED if upper is None else int(upper))
            around = {n for k in range(0, 63) for n in (2**k - 1, 2**k, 2**k + 1) if lower <= n <= upper}
            values.append(sorted({lower, upper} | around | (set(range(lower, upper + 1)) if upper - lower <= 32 else set())))
        combos: list[list[int]] = [[]]
        for vs in values:
            combos = [c + [v] for c in combos for v in vs]
            if len(combos) > MAX_SAMPLES:  # keep an even spread
                combos = combos[:: -(-len(combos) // MAX_SAMPLES)]
        tiles = set()
        for symbols in combos:
            self.run("launch", self.buffers, symbols)
            tiles.update(tile for _, _, tile in self.calls)
        return tiles


def pack_kernel(compiled: Any, device: torch.device, ranges: Mapping[str, Sequence[int | None]] | None = None,
                dtypes: Sequence[torch.dtype] | None = None) -> tuple[dict, dict[str, bytes]]:
    """JSON-able metadata and the cubins (named by their sha256) from which load_kernel
    rebuilds `compiled`'s launcher (a codegen.triton_gpu.CompiledKernel the packager has
    run at least once) with no Triton compile. `ranges`: shape symbol → [lower, upper]
    (None: unbounded), as the manifest holds them: the heuristic's tiles at sizes
    sampled from them are packaged too (otherwise those sizes run the fallback tile).
    `dtypes`: the buffers' dtypes in block-argument order (default: read from Triton's
    compiled kernels). Raises PackagingError (a ValueError) naming the kernel where it
    cannot be packaged."""
    name = getattr(compiled, "name", type(compiled).__name__)
    device = torch.device(device)
    module = getattr(compiled, "module", None)
    if device.type != "cuda" or module is None:
        raise PackagingError(f"kernel {name} is not a Triton kernel compiled for a GPU")
    text = launcher_source(compiled.source, name)
    plan = _Plan(text)
    jits = _jit_functions(module)
    seen = _seen(module)
    tuned = {(int(x), int(r)): Tile(*t) for (x, r), t in (getattr(compiled.run, "best", None) or {}).items()}
    tiles: set[Tile] = set()
    fallback = None
    try:
        if plan.symbolic:
            fallback = plan.fallback()
            tiles = {fallback, *tuned.values()}
            if not tuned:  # the tiles the packaging run launched
                tiles |= {t for t in plan.candidates() if _keys(plan.launches(t)) <= seen.keys()}
            if ranges:
                tiles |= plan.sampled(ranges)
            launches = [rec for t in sorted(tiles) for rec in plan.launches(t)]
        else:
            launches = [rec for t in tuned.values() for rec in plan.launches(t)] if tuned else plan.launches()
    except Exception as e:
        raise PackagingError(f"kernel {name}: its launcher does not run at packaging ({type(e).__name__}: {e})") from e
    configs: dict[tuple[str, tuple], tuple] = {}
    for kernel, options, args in launches:
        configs.setdefault((kernel, options), args)
    types_ = _cached_types(jits)
    jobs = []
    for (kernel, options), args in configs.items():
        if kernel not in jits:
            raise PackagingError(f"kernel {name}: its launcher launches {kernel}, which its module does not define")
        arg_dtypes = _arg_dtypes(name, jits[kernel], args, dtypes, types_)
        pointers = tuple(d is not None for d in arg_dtypes)
        patterns = {(True,) * len(args), pointers, (False,) * len(args)}
        patterns |= {p for p in seen.get((kernel, options), ()) if len(p) == len(args)}
        for pattern in sorted(patterns, key=lambda p: (-sum(p), p)):
            jobs.append((kernel, options, arg_dtypes, pattern))
    built = _compile(name, jobs, jits, device)
    files: dict[str, bytes] = {}
    sites: dict[tuple[str, tuple], dict] = {}
    for (kernel, options, arg_dtypes, pattern), (binary, cubin) in zip(jobs, built):
        file = hashlib.sha256(cubin).hexdigest()[:24] + ".cubin"
        files[file] = cubin
        site = sites.setdefault((kernel, options), {
            "kernel": kernel, "options": [list(o) for o in options],
            "dtypes": [None if d is None else str(d).removeprefix("torch.") for d in arg_dtypes], "binaries": []})
        site["binaries"].append({"pattern": list(pattern), "file": file, **binary})
    meta = {
        "format": FORMAT, "name": name, "target": target_of(device), "launcher": text,
        "symbolic": plan.symbolic, "tiles": [list(t) for t in sorted(tiles)],
        "fallback": None if fallback is None else list(fallback),
        "tuned": [[x, r, list(t)] for (x, r), t in sorted(tuned.items())], "sites": list(sites.values()),
    }
    return meta, files


def _keys(launches: list[tuple[str, tuple, tuple]]) -> set[tuple[str, tuple]]:
    return {(k, o) for k, o, _ in launches} or {("", ())}  # a tile that launches nothing matches nothing


def _jit_functions(module: Any) -> dict[str, Any]:
    """The module's @triton.jit kernels by name (behind its DirectLaunchers and CallSites)."""
    from strata.codegen.triton_launch import CallSite, DirectLauncher, _jit_function_type

    jit = _jit_function_type()
    out = {}
    for value in vars(module).values():
        fn = value.fn if isinstance(value, DirectLauncher | CallSite) else value
        if jit is not None and isinstance(fn, jit):
            out[fn.__name__] = fn
    return out


def _seen(module: Any) -> dict[tuple[str, tuple], set[tuple[bool, ...]]]:
    """The configurations the module launched, each with the argument patterns it
    launched (from its CallSites' specialization keys, codegen/triton_launch.py)."""
    from strata.codegen.triton_launch import CallSite, DirectLauncher

    out: dict[tuple[str, tuple], set[tuple[bool, ...]]] = {}
    for value in vars(module).values():
        if isinstance(value, DirectLauncher):
            sites = [((value.fn.__name__, key), site) for key, site in value.sites.items()]
        elif isinstance(value, CallSite):
            # the options as the launcher's text gives them: a packaged kernel launches
            # without PDL (triton_pdl), through torch's static launcher
            sites = [((value.fn.__name__, tuple(value.given_options.items())), value)]
        else:
            continue
        for key, site in sites:
            if site.entries:
                out.setdefault(key, set()).update(
                    tuple(k if isinstance(k, bool) else bool(k[1]) for k in spec) for spec in site.entries)
    return out


def _cached_types(jits: Mapping[str, Any]) -> dict[str, str]:
    """Pointer parameter → element type (Triton's name), from the kernels Triton compiled."""
    out: dict[str, str] = {}
    for fn in jits.values():
        for caches in getattr(fn, "device_caches", {}).values():
            cache = caches[0] if isinstance(caches, tuple) and caches and isinstance(caches[0], dict) else {}
            for kernel in list(cache.values()):
                signature = getattr(getattr(kernel, "src", None), "signature", None) or {}
                for param, ty in signature.items():
                    if isinstance(param, str) and isinstance(ty, str) and ty.startswith("*"):
                        out[param] = ty[1:]
    return out


def _arg_dtypes(name: str, jit: Any, args: tuple, dtypes: Sequence[torch.dtype] | None,
                types_: Mapping[str, str]) -> list[torch.dtype | None]:
    """Each argument's dtype (None: an int)."""
    params = [p.name for p in jit.params if not p.is_constexpr]
    out: list[torch.dtype | None] = []
    for param, arg in zip(params, args):
        if type(arg) is int:
            out.append(None)
        elif not isinstance(arg, _Slot):
            raise PackagingError(f"kernel {name}: its launcher passes {jit.__name__} a {type(arg).__name__}")
        elif arg.dtype is not None:
            out.append(arg.dtype)
        elif dtypes is not None:
            out.append(dtypes[arg.index])
        elif param in types_ and types_[param] in TRITON_DTYPES:
            out.append(getattr(torch, TRITON_DTYPES[types_[param]]))
        else:
            raise PackagingError(f"kernel {name}: the dtype of {jit.__name__}'s {param} is unknown: run the kernel "
                                 "before packaging it, or pass its buffers' dtypes")
    return out


def _compile(name: str, jobs: list[tuple], jits: Mapping[str, Any], device: torch.device) -> list[tuple[dict, bytes]]:
    """Each job's binary (metadata, cubin), compiled side by side."""
    from concurrent.futures import ThreadPoolExecutor

    from strata.codegen.triton_precompile import _process_state, threads

    _process_state()
    with ThreadPoolExecutor(max(1, min(threads(), len(jobs), 16)), thread_name_prefix="strata-package") as pool:
        return list(pool.map(lambda job: _compile_one(name, job, jits, device), jobs))


def _compile_one(name: str, job: tuple, jits: Mapping[str, Any], device: torch.device) -> tuple[dict, bytes]:
    kernel, options, arg_dtypes, pattern = job
    with torch.cuda.device(device):
        args = []
        for dtype, assumed in zip(arg_dtypes, pattern):
            if dtype is None:
                args.append(DIVISIBLE_INT if assumed else GENERIC_INT)
            else:
                t = torch.empty(64, dtype=dtype, device=device)
                args.append(t if assumed else t[1:])
                if (args[-1].data_ptr() % 16 == 0) != assumed:
                    raise PackagingError(f"kernel {name}: no {'' if assumed else 'un'}aligned {dtype} to compile for")
        try:
            compiled = jits[kernel].warmup(*args, grid=(1,), **dict(options))
        except Exception as e:
            raise PackagingError(f"kernel {name}: {kernel} {dict(options)} does not compile "
                                 f"({type(e).__name__}: {e})") from e
    return _binary(name, kernel, compiled, len(args))


def _binary(name: str, kernel: str, compiled: Any, nargs: int) -> tuple[dict, bytes]:
    """What torch's static launcher needs of a compiled kernel; PackagingError where it
    cannot launch it (as torch's StaticallyLaunchedCudaKernel refuses)."""
    md = compiled.metadata
    why = None
    if getattr(md, "launch_pdl", False) or getattr(md, "launch_cooperative_grid", False):
        why = "it needs launch attributes"
    elif getattr(md, "num_ctas", 1) != 1 or tuple(getattr(md, "cluster_dims", (1, 1, 1)) or (1,)) not in ((1, 1, 1), (1,)):
        why = "it runs in clusters of CTAs"
    elif getattr(md, "global_scratch_size", 0) or getattr(md, "profile_scratch_size", 0):
        why = "it needs scratch memory"
    codes = []
    for ty in compiled.src.signature.values():
        if ty == "constexpr":
            continue
        code = "O" if ty.startswith("*") else ARG_CODES.get(ty)
        if code is None:
            why = why or f"it takes an argument of type {ty}"
        codes.append(code or "?")
    if len(codes) != nargs:
        why = why or f"it takes {len(codes)} arguments where its launcher passes {nargs}"
    try:
        cubin = compiled.asm["cubin"]
    except (AttributeError, KeyError, TypeError):
        cubin = None
    if not cubin:
        why = why or "Triton made no cubin of it"
    if why:
        raise PackagingError(f"kernel {name}: {kernel} cannot be packaged: {why}")
    scratch = sum(hasattr(md, f) for f in ("global_scratch_size", "profile_scratch_size"))
    return {"function": md.name, "num_warps": md.num_warps, "shared": md.shared, "arg_types": "".join(codes),
            "scratch": scratch}, bytes(cubin)


# ---------------------------------------------------------------- loading
class _Binary:
    def __init__(self, entry: Mapping, function: int):
        self.pattern = tuple(bool(p) for p in entry["pattern"])
        self.function = function
        self.num_warps = int(entry["num_warps"])
        self.shared = int(entry["shared"])
        self.arg_types = str(entry["arg_types"]) + "O" * int(entry["scratch"])
        self.extra = (None,) * int(entry["scratch"])


class _Site:
    """One configuration of one kernel: `site(grid, *args)` launches the most
    specialized binary whose assumptions the arguments meet."""

    def __init__(self, kernel: str, entry: Mapping, binaries: list[_Binary], cuda: Any, index: int):
        self.kernel = kernel
        self.options = dict(tuple(o) for o in entry["options"])
        self.dtypes = [None if d is None else getattr(torch, d) for d in entry["dtypes"]]
        self.binaries = sorted(binaries, key=lambda b: -sum(b.pattern))
        self.chosen: dict[tuple, _Binary] = {}
        self.launch, self.stream, self.index = cuda.launch, cuda.stream, index

    def __call__(self, grid: tuple, *args: Any) -> None:
        try:
            pattern = tuple([(a % 16 == 0) if type(a) is int else (a.data_ptr() % 16 == 0) for a in args])
        except (AttributeError, TypeError):
            raise self._error(args, "takes tensors and ints") from None
        b = self.chosen.get(pattern)
        if b is None:
            b = self._choose(pattern, args)
        self.launch(b.function, grid[0], grid[1] if len(grid) > 1 else 1, grid[2] if len(grid) > 2 else 1, b.num_warps, b.shared, b.arg_types,
                    args + b.extra if b.extra else args, self.stream(self.index))

    def _choose(self, pattern: tuple, args: tuple) -> _Binary:
        if len(args) != len(self.dtypes):
            raise self._error(args, f"takes {len(self.dtypes)} arguments")
        for a, d in zip(args, self.dtypes):
            if (d is None) != (type(a) is int) or (d is not None and a.dtype != d):
                raise self._error(args, f"was packaged for {_describe(self.dtypes)}")
        for b in self.binaries:
            if all(q or not p for p, q in zip(b.pattern, pattern)):
                self.chosen[pattern] = b
                return b
        raise self._error(args, "has no binary for these arguments' alignment")

    def _error(self, args: tuple, why: str) -> LoadError:
        got = _describe([a.dtype if isinstance(a, torch.Tensor) else a for a in args])
        return LoadError(f"packaged kernel {self.kernel} {self.options} {why}; launched with {got}")


def _describe(values: list) -> str:
    return "(" + ", ".join("int" if v is None or type(v) is int else str(v).removeprefix("torch.") for v in values) + ")"


class _Missing:
    """A configuration the package does not hold: launching it raises."""

    def __init__(self, kernel: str, options: tuple):
        self.kernel, self.options = kernel, dict(options)

    def __call__(self, grid: tuple, *args: Any) -> None:
        raise LoadError(f"packaged kernel {self.kernel} has no binary for the configuration {self.options}")


class PackagedKernel:
    """A loaded kernel: `kernel(buffers, symbols)` as CompiledKernel.run."""

    def __init__(self, meta: Mapping, cuda: Any, index: int, functions: dict[str, int], modules: list):
        self.name = meta["name"]
        self.index = index
        self._modules = modules  # the loaded cubins, unloaded with this kernel
        self._cuda = cuda
        sites = {}
        for entry in meta["sites"]:
            binaries = [_Binary(b, functions[b["file"]]) for b in entry["binaries"]]
            options = tuple(tuple(o) for o in entry["options"])
            sites[(entry["kernel"], options)] = _Site(entry["kernel"], entry, binaries, cuda, index)
        self.tiles = {Tile(*t) for t in meta["tiles"]}
        self.fallback = None if meta["fallback"] is None else Tile(*meta["fallback"])
        self.tuned = {(int(x), int(r)): Tile(*t) for x, r, t in meta["tuned"]}
        heuristics = {h: self._choosing(fn) for h, fn in HEURISTICS.items()}
        ns = _launcher(meta["launcher"], lambda k, o: sites.get((k, o)) or _Missing(k, o), heuristics, cuda.alloc(index))
        self._launch, self._launch_tile, self._numels = ns["launch"], ns["launch_tile"], ns["numels"]

    def _choosing(self, heuristic: Callable) -> Callable:
        chosen: dict[Tile, Tile] = {}

        def choose(*args):
            tile = heuristic(*args)
            if tile in self.tiles:
                return tile
            instead = chosen.get(tile)
            if instead is None:
                if self.fallback is None:
                    raise LoadError(f"packaged kernel {self.name} holds no tile for sizes {args[:2]}")
                instead = chosen[tile] = nearest_tile(tile, self.tiles, self.fallback)
            return instead

        return choose

    def run(self, buffers: list[torch.Tensor], symbols: list[int]) -> None:
        """Launches on the current stream of the kernel's device (its cubins are loaded
        in that device's context)."""
        if self._cuda.device() != self.index:
            with self._cuda.on(self.index):
                return self._run(buffers, symbols)
        return self._run(buffers, symbols)

    __call__ = run

    def _run(self, buffers: list[torch.Tensor], symbols: list[int]) -> None:
        if self.tuned:
            tile = self.tuned.get(tuple(self._numels(symbols)))
            if tile is not None:
                return self._launch_tile(tile, buffers, symbols)
        return self._launch(buffers, symbols)

    def __del__(self) -> None:
        for module in getattr(self, "_modules", ()):
            try:
                self._cuda.unload(module)
            except Exception:  # noqa: BLE001 - at exit the driver may be gone
                pass

    def __repr__(self) -> str:
        return f"<PackagedKernel {self.name} (triton)>"


def nearest_tile(want: Tile, tiles: set[Tile], fallback: Tile) -> Tile:
    """The packaged tile closest to `want` that computes the same results at want's
    sizes: a persistent one only if its RBLOCK holds want's row (any pointwise, looped
    or split tile is right at any size: a symbolic kernel masks both axes)."""
    if want.persistent:
        pool = [t for t in tiles if t.persistent and t.rblock >= want.rblock]
    elif want.split > 1:
        pool = [t for t in tiles if t.split > 1]
    else:
        pool = [t for t in tiles if not t.persistent and t.split == 1]

    def distance(t: Tile) -> tuple:
        return tuple(abs(a.bit_length() - b.bit_length()) for a, b in
                     ((t.rblock, want.rblock), (t.xblock, want.xblock), (t.split, want.split),
                      (t.num_warps, want.num_warps))) + tuple(t)

    return min(pool, key=distance) if pool else fallback


class _Cuda:
    """What a loaded kernel asks of CUDA: torch's static launcher (loading a cubin's
    function, launching it), the current device and stream, workspace memory."""

    def __init__(self):
        launcher = getattr(torch._C, "_StaticCudaLauncher", None)
        if launcher is None:
            raise LoadError(f"this torch ({torch.__version__}) has no torch._C._StaticCudaLauncher, which runs a "
                            "package's GPU kernels")
        self._launcher = launcher
        self.launch = launcher._launch_kernel
        self.stream = torch._C._cuda_getCurrentRawStream
        self.device = torch._C._cuda_getDevice

    @staticmethod
    def on(index: int) -> Any:
        return torch.cuda.device(index)

    @staticmethod
    def alloc(index: int) -> Callable:
        return fast_empty_strided(torch.device("cuda", index))

    def load(self, cubin: bytes, function: str, shared: int, index: int) -> tuple[Any, int]:
        """(module or None, function) of a cubin; the launcher loads from a file."""
        fd, path = tempfile.mkstemp(suffix=".cubin", prefix="strata-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(cubin)
            loaded = self._launcher._load_kernel(path, function, shared, index)
        finally:
            os.unlink(path)
        # torch 2.13: (module, function, registers, spills); earlier: (function, registers, spills)
        return (loaded[0], loaded[1]) if len(loaded) == 4 else (None, loaded[0])

    def unload(self, module: Any) -> None:
        unload = getattr(self._launcher, "_unload_kernel", None)
        if module is not None and unload is not None:
            unload(module)


def _cuda_api() -> Any:  # tests replace it: CPU machines have no static launcher
    return _Cuda()


def load_kernel(meta: Mapping, files: Mapping[str, bytes], device: torch.device) -> PackagedKernel:
    """A callable with CompiledKernel.run's contract, `(buffers, symbols)`, launching on
    the current stream; it compiles nothing and imports no Triton. Raises LoadError for
    a package this GPU cannot run or that is damaged."""
    if meta.get("format") != FORMAT:
        raise LoadError(f"packaged kernel {meta.get('name')} is in format {meta.get('format')}; this strata reads {FORMAT}")
    device = torch.device(device)
    check_target(meta["target"], device)
    index = _index(device)
    cuda = _cuda_api()
    functions: dict[str, int] = {}
    modules: list = []
    with cuda.on(index):
        for entry in meta["sites"]:
            for b in entry["binaries"]:
                if b["file"] in functions:
                    continue
                if b["file"] not in files:
                    raise LoadError(f"packaged kernel {meta['name']} lacks its binary {b['file']}")
                try:
                    module, functions[b["file"]] = cuda.load(files[b["file"]], b["function"], int(b["shared"]), index)
                except Exception as e:
                    raise LoadError(f"packaged kernel {meta['name']}: its binary {b['file']} ({b['function']}) does "
                                    f"not load on this GPU ({type(e).__name__}: {e})") from e
                modules.append(module)
    try:
        return PackagedKernel(meta, cuda, index, functions, modules)
    except (ValueError, SyntaxError) as e:
        raise LoadError(f"packaged kernel {meta['name']}: its launcher is not one a package holds ({e})") from None
