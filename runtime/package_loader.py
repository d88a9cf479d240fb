"""Loading and calling a strata package (strata.aot.load_package).

Nothing here traces, decomposes, parses IR or compiles: the package is read and
checked (package_format), its target compared with this machine and torch, its
kernels' machine code loaded (package_llvm, package_triton), its weights read, and
its program (package_runner) called on each input. Inputs are checked against the
exported specs before any kernel runs: a wrong dtype, device or rank, or a size
outside the range torch.export proved, raises PackageError naming the input and dim.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import torch

from strata.runtime.package_format import Package, PackageError
from strata.runtime.allocation import relayout
from strata.runtime.package_runner import PackagedProgram, dtype_of, int_function, ints_function, value_of


def load_package(path: str | os.PathLike | bytes, device: str | torch.device | None = None) -> LoadedPackage:
    """The package at `path` (or its bytes), ready to call as the exported module is."""
    return LoadedPackage(Package(path), device)


class LoadedPackage:
    """A loaded package: call it with the exported program's inputs."""

    def __init__(self, package: Package, device: str | torch.device | None = None):
        from torch.utils._pytree import treespec_loads

        self.package = package
        self.manifest = m = package.manifest
        _check_torch(m.get("torch", ""))
        built_on = m["device"]
        self.device = torch.device(device) if device is not None else torch.device(built_on)
        if self.device.type != built_on:
            raise PackageError(f"the package was built for {built_on}; it cannot run on {self.device}")
        if self.device.type == "cuda" and self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())
        self._in_spec, self._out_spec = treespec_loads(m["in_spec"]), treespec_loads(m["out_spec"])
        kernels = self._load_kernels()
        plan = package.program
        self._program = PackagedProgram(plan, kernels, self.device)
        self._inputs = [_InputCheck(spec, m["symbols"]) for spec in m["inputs"]]
        self._arguments = m["arguments"]
        self._weights: dict[str, torch.Tensor] = {}
        self.load_constants({w["name"]: self._read_weight(w) for w in m["weights"]}, check_full=True)
        self._outputs = [_output(o) for o in m["outputs"]]

    # ------------------------------------------------------------ weights
    def constants(self) -> dict[str, torch.Tensor]:
        """The weights (parameters, buffers, constants) the package runs with, by name."""
        return dict(self._weights)

    def load_constants(self, weights: Mapping[str, torch.Tensor], check_full: bool = False) -> None:
        """Replaces weights by name (as AOTInductor's load_constants): each must have the
        packaged one's shape and dtype; `check_full` requires every weight."""
        specs = {w["name"]: w for w in self.manifest["weights"]}
        unknown = sorted(set(weights) - set(specs))
        if unknown:
            raise PackageError(f"the package has no weight named {', '.join(map(repr, unknown))}")
        if check_full:
            missing = sorted(set(specs) - set(weights))
            if missing:
                raise PackageError(f"weights missing: {', '.join(map(repr, missing))}")
        for name, t in weights.items():
            spec = specs[name]
            if not isinstance(t, torch.Tensor) or list(t.shape) != spec["shape"] or t.dtype != dtype_of(spec["dtype"]):
                got = f"{tuple(t.shape)} {t.dtype}" if isinstance(t, torch.Tensor) else type(t).__name__
                raise PackageError(f"weight {name!r} must be a tensor of shape {tuple(spec['shape'])} and dtype "
                                   f"{spec['dtype']}, not {got}")
            self._weights[name] = self._placed(name, t.detach().to(self.device))

    def _placed(self, name: str, t: torch.Tensor) -> torch.Tensor:
        """The weight in the layout the kernels read it in (once, here, not per call)."""
        for j, a in enumerate(self._arguments):
            if a.get("weight") == name:
                layout = self.package.program["arguments"][j]
                if "strides" in layout:
                    return relayout(t, ints_function(layout["sizes"])({}), ints_function(layout["strides"])({}))
        return t

    def _read_weight(self, spec: dict) -> torch.Tensor:
        data = self.package.read(spec["file"])
        dtype = dtype_of(spec["dtype"])
        if not data:
            return torch.empty(spec["shape"], dtype=dtype)
        return torch.frombuffer(bytearray(data), dtype=torch.uint8).view(dtype).reshape(spec["shape"])

    # ------------------------------------------------------------ kernels
    def _load_kernels(self) -> dict:
        metas = self.manifest["kernels"]
        if not metas:
            return {}
        if self.device.type == "cpu":
            from strata.runtime import package_llvm

            return package_llvm.load_kernels(self.package, metas)
        from strata.runtime import package_triton

        package_triton.check_target(self.manifest["target"]["gpu"], self.device)
        return {name: package_triton.load_kernel(meta["meta"], {k: self.package.read(f) for k, f in meta["files"].items()},
                                                 self.device)
                for name, meta in metas.items()}

    # ------------------------------------------------------------ calls
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from torch.utils._pytree import tree_flatten, tree_unflatten

        flat, spec = tree_flatten((args, kwargs))
        if spec != self._in_spec:
            raise PackageError(f"the package takes inputs structured as {self._in_spec}, not {spec}")
        env: dict[str, int] = {}
        for check in self._inputs:
            check(flat, env, self.device)
        program_args = [flat[a["input"]] if "input" in a else self._weights[a["weight"]] for a in self._arguments]
        results = self._program(program_args)
        outs = [o if not isinstance(o, _Output) else o(results, env) for o in self._outputs]
        return tree_unflatten(outs, self._out_spec)

    def __repr__(self) -> str:
        return f"<strata package {self.package.path} ({self.device}, {len(self.manifest['kernels'])} kernels)>"


class _InputCheck:
    """One user input checked against its exported spec, binding its shape symbols."""

    def __init__(self, spec: dict, ranges: dict[str, list]):
        self.spec = spec
        self.index, self.name = spec["index"], spec["name"]
        self.ranges = ranges
        if spec["kind"] == "tensor":
            self.dtype = dtype_of(spec["dtype"])
            self.sizes = [int_function(code) for code in spec["size_code"]]

    def __call__(self, flat: list, env: dict, device: torch.device) -> None:
        x, spec = flat[self.index], self.spec
        if spec["kind"] == "constant":
            if type(x) is not type(spec["value"]) or x != spec["value"]:
                raise PackageError(f"input {self.name!r} was exported as the constant {spec['value']!r}: the package "
                                   f"runs for that value only, not {x!r} (mark it dynamic to export it as a symbol)")
            return
        if spec["kind"] == "int":
            if not isinstance(x, int):
                raise PackageError(f"input {self.name!r} must be an int, not {type(x).__name__}")
            if spec["symbol"]:
                self._bind(spec["symbol"], int(x), env, "")
            return
        if not isinstance(x, torch.Tensor):
            raise PackageError(f"input {self.name!r} must be a tensor, not {type(x).__name__}")
        if x.dtype != self.dtype:
            raise PackageError(f"input {self.name!r} must have dtype {spec['dtype']}, not {str(x.dtype).removeprefix('torch.')}")
        if x.device.type != device.type:
            raise PackageError(f"input {self.name!r} must be on {device}, not {x.device}")
        if x.dim() != len(self.sizes):
            raise PackageError(f"input {self.name!r} must have {len(self.sizes)} dims ({', '.join(map(str, spec['shape']))}), "
                               f"not shape {tuple(x.shape)}")
        for k, symbol in spec["bind"]:
            self._bind(symbol, int(x.shape[k]), env, f" dim {k}")
        for k, size in enumerate(self.sizes):
            try:
                wanted = size(env)
            except KeyError:  # a symbol another input binds, later
                continue
            if x.shape[k] != wanted:
                raise PackageError(f"input {self.name!r} dim {k} must be {_shown(spec['shape'][k], wanted)}, "
                                   f"not {x.shape[k]} (shape {tuple(x.shape)})")

    def _bind(self, symbol: str, value: int, env: dict, where: str) -> None:
        lower, upper = self.ranges.get(symbol, [None, None])
        if lower is not None and value < lower or upper is not None and value > upper:
            raise PackageError(f"input {self.name!r}{where} is {value}, outside the range the package was exported "
                               f"for ({symbol} in [{lower}, {'inf' if upper is None else upper}])")
        if env.setdefault(symbol, value) != value:
            raise PackageError(f"input {self.name!r}{where} is {value}, but another input gave {symbol} = {env[symbol]}")


def _shown(dim: int | str, value: int) -> str:
    return str(value) if isinstance(dim, int) else f"{dim} = {value} here"


class _Output:
    """An output the program computes: one of its results, or a size from the inputs'."""

    def __init__(self, result: int | None = None, size: Any = None):
        self.result, self.size = result, size

    def __call__(self, results: list, env: dict) -> Any:
        return results[self.result] if self.result is not None else self.size(env)


def _output(spec: Any) -> Any:
    if spec is None:
        return None
    if "result" in spec:
        return _Output(result=spec["result"])
    if "int" in spec:
        return _Output(size=int_function(spec["int"]))
    return value_of(spec["constant"], {})


def _check_torch(built: str) -> None:
    """A package runs with the torch (major.minor) it was built with: its eager kernels
    and library calls are that torch's."""
    here = torch.__version__
    if built.split(".")[:2] != here.split(".")[:2]:
        raise PackageError(f"the package was built with torch {built}; this is torch {here}")
