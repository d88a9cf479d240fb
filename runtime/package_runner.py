"""Runs the program of an ahead-of-time package (program.json, runtime/package_plan.py).

The JIT runtime (runtime/compiled_graph.py) reads xDSL ops; this one reads the plan
those ops were written to, so that a serving process imports neither xDSL nor any pass
or code generator. Each step becomes a closure at load, and the closures run as one
generated straight-line function with the dead registers dropped after their last
reader (runtime/graph_runner.py), as in the JIT runtime. Shape arithmetic is the plan's
Python integer code, compiled once here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from strata.runtime.allocation import as_sequence_major, relayout
from strata.runtime.graph_runner import generate_runner
from strata.runtime.package_format import PackageError

Kernel = Callable[[list, list], None]  # kernel(buffers, symbol values)


def _floordiv(a: int, b: int) -> int:
    return a // b if b else 0  # a size of 0 makes the domain empty (index_values)


def _mod(a: int, b: int) -> int:
    return a % b if b else 0


_NAMES = {"_floordiv": _floordiv, "_mod": _mod, "__builtins__": {"abs": abs, "max": max, "min": min}}


def int_function(code: str) -> Callable[[dict], int]:
    """The plan's integer expression `code` as a function of the symbol bindings."""
    return eval(compile(f"lambda env: {code}", "<strata package size>", "eval"), dict(_NAMES))  # noqa: S307 (the package's own checked code)


def ints_function(codes: list[str]) -> Callable[[dict], list[int]]:
    if all(c.lstrip("-").isdigit() for c in codes):
        fixed = [int(c) for c in codes]
        return lambda env: fixed
    return eval(compile(f"lambda env: [{', '.join(codes)}]", "<strata package sizes>", "eval"), dict(_NAMES))  # noqa: S307


def dtype_of(name: str) -> torch.dtype:
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        raise PackageError(f"the package names an unknown dtype {name!r}")
    return dtype


def value_of(enc: Any, env: dict) -> Any:
    """A non-tensor argument of an eager kernel, from package_plan.encode_value's JSON."""
    if not isinstance(enc, dict):
        return enc
    if "list" in enc:
        return [value_of(v, env) for v in enc["list"]]
    if "int" in enc:
        return int_function(enc["int"])(env)
    if "float" in enc:
        return float(enc["float"])
    if "dtype" in enc:
        return dtype_of(enc["dtype"])
    if "device" in enc:
        return torch.device(enc["device"])
    if "torch" in enc:
        return getattr(torch, enc["torch"])
    raise PackageError(f"the package holds an argument of no known form: {enc!r}")


class PackagedProgram:
    """The callable for program.json: a list of arguments (the program's block
    arguments: inputs, weights, constants) in, the list of results out."""

    def __init__(self, plan: dict, kernels: dict[str, Kernel], device: torch.device):
        self.device = device
        self._registers = plan["registers"]
        self._enter = [self._argument(a) for a in plan["arguments"]]
        steps = [(self._step(s, kernels), tuple(s["free"])) for s in plan["steps"]]
        self._run, self.runner_source = generate_runner(steps, f"{len(steps)} steps")
        self._results = plan["results"]
        self._relayouts = [(r["slot"], ints_function(r["sizes"]), ints_function(r["strides"])) for r in plan["relayouts"]]

    def __call__(self, args: list) -> list:
        regs: list[Any] = [None] * self._registers
        env: dict[str, int] = {}
        for enter, a in zip(self._enter, args):
            enter(a, env)
        for enter, a in zip(self._enter, args):
            regs[enter.slot] = enter.place(a, env)
        self._run(regs, env)
        for slot, sizes, strides in self._relayouts:
            regs[slot] = relayout(regs[slot], sizes(env), strides(env))
        return [regs[i] for i in self._results]

    # ------------------------------------------------------------ arguments
    def _argument(self, a: dict):
        slot = a["slot"]
        if "rank" not in a:  # an int argument: binds its symbol
            symbol = a["symbol"]

            def bind_int(x: Any, env: dict) -> None:
                if symbol:
                    env.setdefault(symbol, int(x))

            return _Entry(slot, bind_int, lambda x, env: x)
        binds = a["bind"]
        sizes, strides = ints_function(a["sizes"]), ints_function(a["strides"])

        def bind(x: torch.Tensor, env: dict) -> None:
            shape = x.shape
            for k, name in binds:
                env.setdefault(name, int(shape[k]))

        return _Entry(slot, bind, lambda x, env: relayout(x, sizes(env), strides(env)))

    # ------------------------------------------------------------ steps
    def _step(self, s: dict, kernels: dict[str, Kernel]):
        kind = s["op"]
        if kind == "launch":
            return self._launch(s, kernels)
        if kind == "eager":
            return self._eager(s)
        if kind == "library":
            return _library(s)
        raise PackageError(f"the package's program has a step of unknown kind {kind!r}")

    def _launch(self, s: dict, kernels: dict[str, Kernel]):
        kernel = kernels[s["kernel"]]
        ins, names, device = s["ins"], s["symbols"], self.device
        outs = [(o["slot"], ints_function(o["sizes"]), None if o["strides"] is None else ints_function(o["strides"]),
                 dtype_of(o["dtype"]), o.get("updates", -1)) for o in s["outs"]]

        def launch(regs: list, env: dict) -> None:
            buffers = [regs[i] for i in ins]
            for slot, sizes, strides, dtype, updates in outs:
                t = (torch.empty(sizes(env), dtype=dtype, device=device) if strides is None
                     else torch.empty_strided(sizes(env), strides(env), dtype=dtype, device=device))
                if updates != -1:  # an output that updates an operand starts as its elements
                    t.copy_(buffers[updates])
                regs[slot] = t
                buffers.append(t)
            kernel(buffers, [env[n] for n in names])

        return launch

    def _eager(self, s: dict):
        overload = _overload(s["overload"])
        ins, args, kwargs, results = s["ins"], s["args"], s["kwargs"], s["results"]
        contiguous = s["contiguous_operands"]

        def value(enc: Any, operands: list, env: dict) -> Any:
            if isinstance(enc, dict) and "tensor" in enc:
                return operands[enc["tensor"]]
            if isinstance(enc, dict) and "tensors" in enc:
                return [None if i is None else operands[i] for i in enc["tensors"]]
            return value_of(enc, env)

        def eager(regs: list, env: dict) -> None:
            operands = [regs[i] for i in ins]
            if contiguous:
                operands = [t.contiguous() if isinstance(t, torch.Tensor) else t for t in operands]
            out = overload(*[value(a, operands, env) for a in args],
                           **{k: value(a, operands, env) for k, a in kwargs.items()})
            outs = list(out) if isinstance(out, tuple | list) else [out]
            for r, t in zip(results, outs):
                if r["copy"] is not None:
                    regs[r["slot"]], regs[r["copy"]] = t, t.contiguous()
                else:
                    regs[r["slot"]] = t.contiguous() if isinstance(t, torch.Tensor) and not r["keep"] else t

        return eager


class _Entry:
    """One argument: `bind` checks nothing and binds its symbols; `place` puts it in
    the layout the kernels were compiled for."""

    __slots__ = ("slot", "bind", "place")

    def __init__(self, slot: int, bind, place):
        self.slot, self.bind, self.place = slot, bind, place

    def __call__(self, x: Any, env: dict) -> None:
        self.bind(x, env)


def _overload(qualified: str):
    ns, _, rest = qualified.partition("::")
    name, _, overload = rest.partition(".")
    try:
        return getattr(getattr(getattr(torch.ops, ns), name), overload or "default")
    except (AttributeError, RuntimeError):
        raise PackageError(f"the package calls {qualified}, which this torch does not have") from None


def _then(t: torch.Tensor, then: str) -> torch.Tensor:
    if then == "keep":
        return t
    if then == "channels_last":
        return t.contiguous(memory_format=torch.channels_last)
    if then == "sequence_major":
        return as_sequence_major(t)
    return t if t.is_contiguous() else t.contiguous()


def _library(s: dict):
    """A library call (matrix products, convolution, attention, cat) or a view."""
    call, ins, out = s["call"], s["ins"], s["out"]
    fn = _library_function(s)

    def step(regs: list, env: dict) -> None:
        regs[out] = fn(env, *[regs[i] for i in ins])

    step.__name__ = call
    return step


def _library_function(s: dict) -> Callable[..., torch.Tensor]:
    call = s["call"]
    if call in ("mm", "bmm", "addmm"):
        f = getattr(torch, call)
        return lambda env, *xs: f(*xs)
    if call in ("onednn_mm", "onednn_addmm"):
        from strata.runtime import cpu_linear

        f = cpu_linear.onednn_mm if call == "onednn_mm" else cpu_linear.onednn_addmm
        return lambda env, *xs: f(*xs)
    if call == "convolution":
        stride, padding, dilation, transposed, output_padding, groups = s["params"]
        nhwc, then = s["channels_last"], s["then"]

        def convolution(env, x, w, bias=None):
            if nhwc:
                x, w = x.contiguous(memory_format=torch.channels_last), w.contiguous(memory_format=torch.channels_last)
            out = torch.convolution(x, w, bias, stride, padding, dilation, transposed, output_padding, groups)
            return _then(out, then)

        return convolution
    if call == "sdpa":
        scale, causal, then = s["scale"], s["causal"], s["then"]
        sdpa = torch.nn.functional.scaled_dot_product_attention
        return lambda env, q, k, v, mask=None: _then(sdpa(q, k, v, attn_mask=mask, is_causal=causal, scale=scale), then)
    if call == "cat":
        dim, then = s["dim"], s["then"]
        return lambda env, *xs: _then(torch.cat(xs, dim), then)
    if call == "permute":
        dims = s["dims"]
        return lambda env, x: x.permute(dims)
    if call == "reshape":
        shape = ints_function(s["shape"])
        return lambda env, x: x.reshape(shape(env))
    if call == "slice":
        start, limit, step = ints_function(s["start"]), ints_function(s["limit"]), s["step"]

        def sliced(env, x):
            return x[tuple(slice(a, b, c) for a, b, c in zip(start(env), limit(env), step))]

        return sliced
    if call == "broadcast_in_dim":
        shape, kept = ints_function(s["shape"]), s["dims"]

        def broadcast(env, x):
            sizes = shape(env)
            view = [1] * len(sizes)
            for i, d in enumerate(kept):
                view[d] = x.shape[i]
            return x.reshape(view).expand(sizes)

        return broadcast
    raise PackageError(f"the package's program calls {call!r}, which this runtime does not know")
