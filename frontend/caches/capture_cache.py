"""The on-disk cache of whole inference compiles, keyed by the graph Dynamo captured.

A warm compile (a second process compiling the same model) would otherwise run
AOTAutograd's trace of the graph (functionalization, decompositions: 2-3 s of a
GPT-2's warm compile) and strata's import and printing of its ATen graph, only to find
the lowered program in the graph cache (runtime/graph_cache.py). TorchInductor's
AOTAutograd cache skips the same work. Here the key is what AOTAutograd's result
depends on: the captured graph's code, each input's shape, strides, dtype, device and
requires_grad, the ranges the ShapeEnv gives its size symbols and its guards, the global state
AOTAutograd traces under (grad mode, autocast, default dtype, deterministic
algorithms), strata's options and a digest of its source. The value is the
kernel-level program with the declines its decompositions gave.

A compile whose AOTAutograd trace added guards (it specialized a float it could not
turn into a tensor: `-f` became -2.0) is never stored: a hit skips that trace, and the
guards would never be installed. Only a compile whose AOTAutograd wrapper would do
nothing is stored: an inference
graph, every input a plain tensor or size passed straight through (no parameter
lifted, no effect token), no input mutated, no output aliasing an input or another
output, no as_strided storage-offset guard, every output a tensor. Constant tensors
the graph makes (a torch.tensor([]) in its code) are stored beside the program when
small.
Anything else is compiled the usual way every time. `options={"graph_cache": False}`
turns this cache off with the graph cache.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx

from strata.runtime import cache

KIND = "captures"
SUFFIX = ".json"
log = logging.getLogger("strata.cache")


@dataclass
class Capture:
    """What the forward compile of a cacheable graph recorded (set by compile_graph)."""

    program: str | None = None  # the lowered module's program and kernels (dialects/kernel_text.py)
    kernels: list = field(default_factory=list)
    declines: list = field(default_factory=list)
    constants: list = field(default_factory=list)  # small constant tensors, as data (keep_constants)
    cacheable: bool = True
    why_not: str = ""

    def refuse(self, why: str) -> None:
        self.cacheable, self.why_not = False, why


_capture: contextvars.ContextVar[Capture | None] = contextvars.ContextVar("strata_capture", default=None)


def current() -> Capture | None:
    """The capture the forward compile running now records into, if any."""
    return _capture.get()


@contextlib.contextmanager
def capturing():
    token = _capture.set(Capture())
    try:
        yield _capture.get()
    finally:
        _capture.reset(token)


def key(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], options: dict[str, Any]) -> str | None:
    """The cache key of this captured graph, or None where the graph cannot be cached."""
    from strata.runtime.graph_cache import source_digest

    _guards_at_key.set(None)
    if any(n.op in ("get_attr", "call_module") for n in gm.graph.nodes):
        return None  # values the code does not show
    if not all(_known_target(n.target) for n in gm.graph.nodes if n.op == "call_function"):
        return None  # a user function left in the graph: its code is not in the key
    # The placeholders' fake values hold the sizes as Dynamo sees them (symbols where
    # dynamic); example_inputs are the call's real tensors.
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        return None
    if not _outputs_are_tensors(gm):
        return None  # a size or number out: AOTAutograd's wrapper returns it, a hit would not
    seen = [n.meta.get("example_value", n.meta.get("val")) for n in placeholders]
    if any(v is None and isinstance(x, torch.Tensor) for v, x in zip(seen, example_inputs)):
        return None
    inputs = []
    symbols: set = set()
    for x in (x if v is None else v for v, x in zip(seen, example_inputs)):
        if isinstance(x, torch.Tensor):
            if type(x) not in (torch.Tensor, torch.nn.Parameter) and not _is_fake(x):
                return None  # a tensor subclass
            inputs.append(("t", str(tuple(x.shape)), str(x.stride()), str(x.storage_offset()), str(x.dtype), x.device.type, x.requires_grad))
            for d in (*x.shape, *x.stride(), x.storage_offset()):
                if isinstance(d, torch.SymInt):
                    symbols |= d.node.expr.free_symbols
        elif isinstance(x, torch.SymInt):
            inputs.append(("s", str(x)))
            symbols |= x.node.expr.free_symbols
        elif isinstance(x, int | float | bool):
            inputs.append(("n", repr(x)))
        else:
            return None
    ranges = _ranges(seen, symbols)
    settings = cache.settings_key(options, ("dynamo_cache",))
    return cache.cache_key(KIND, gm.code, repr(inputs), ranges, cache.global_state_key(), settings, source_digest())


_KNOWN_MODULES = ("torch", "_operator", "operator", "builtins", "math")


def _outputs_are_tensors(gm: torch.fx.GraphModule) -> bool:
    """Whether every output of the captured graph is a tensor. The stored program
    returns its tensors only; a SymInt output (`abs(min(abs(k), -1))` of a dynamic int)
    comes from AOTAutograd's wrapper, which a hit skips: Dynamo's code would then index
    past the end of the results."""
    for node in gm.graph.nodes:
        if node.op != "output":
            continue
        outs = node.args[0] if isinstance(node.args[0], tuple | list) else (node.args[0],)
        for out in outs:
            value = out.meta.get("example_value", out.meta.get("val")) if isinstance(out, torch.fx.Node) else out
            if not isinstance(value, torch.Tensor):
                return False
    return True


def _known_target(target: Any) -> bool:
    if isinstance(target, torch._ops.OpOverload | torch._ops.OpOverloadPacket):
        return True
    module = getattr(target, "__module__", None) or ""
    return module.split(".")[0] in _KNOWN_MODULES


def _is_fake(x: torch.Tensor) -> bool:
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(x, FakeTensor)


def _ranges(values: Sequence[Any], symbols: set) -> str:
    """The ShapeEnv's value ranges of the size symbols (s0 >= 2, say) and its guards
    (`Min(3, k) < 0`), which the compiled program may have simplified with: two graphs
    of one code traced under other guards decompose otherwise (a narrow at min(k, 3)
    starts at s0 + Min(3, k) where the guards say it is negative)."""
    if not symbols:
        return ""
    env = None
    for x in values:
        for d in (x.shape if isinstance(x, torch.Tensor) else [x]):
            if isinstance(d, torch.SymInt):
                env = d.node.shape_env
                break
        if env is not None:
            break
    if env is None:
        return ""
    _guards_at_key.set((env, len(env.guards)))
    ranges = sorted((str(s), str(env.var_to_range.get(s))) for s in symbols)
    return repr((ranges, sorted(str(g.expr) for g in env.guards)))


# The ShapeEnv of the graph whose key was made last, and how many guards it had then.
_guards_at_key: contextvars.ContextVar[tuple[Any, int] | None] = contextvars.ContextVar("strata_guards_at_key", default=None)


def _guards_added_since_key() -> bool:
    """Whether AOTAutograd's trace added guards to the ShapeEnv the key was made from: a
    hit would skip that trace, and Dynamo would never install them."""
    at_key = _guards_at_key.get()
    if at_key is None:
        return False
    env, count = at_key
    return len(env.guards) != count


def check_wrapper(gm: torch.fx.GraphModule, example_inputs: Sequence[Any], capture: Capture) -> None:
    """Refuses the capture unless AOTAutograd's wrapper around this forward graph is the
    identity: every captured input passed straight through, nothing mutated or aliased."""
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_inputs):
        return capture.refuse("AOTAutograd added or removed inputs (lifted parameters, effect tokens)")
    try:
        from torch._functorch._aot_autograd.schemas import OutputType
        from torch._guards import TracingContext

        meta = TracingContext.try_get().fw_metadata
    except Exception:  # noqa: BLE001 - another torch: no way to tell
        meta = None
    if meta is None:
        return capture.refuse("no AOTAutograd metadata")
    if any(i.mutates_data or i.mutates_metadata for i in meta.input_info):
        return capture.refuse("an input is mutated")
    if any(o.output_type != OutputType.non_alias for o in meta.output_info):
        return capture.refuse("an output aliases an input or another output")
    if meta.num_intermediate_bases or getattr(meta, "tokens", None):
        return capture.refuse("intermediate bases or effect tokens")
    if any(type(m).__name__ == "SubclassCreationMeta" for m in getattr(meta, "subclass_inp_meta", None) or ()):
        return capture.refuse("a tensor subclass input")


def read(capture_key: str) -> tuple[str, list, list, list[torch.Tensor]] | None:
    """(program text, KernelTexts, declines, constant tensors) stored under the key, or None."""
    from strata.runtime.graph_cache import read_program

    hit = read_program(KIND, capture_key, with_constants=True)
    if hit is None:
        return None
    program, kernels, declines, constants = hit
    try:
        return program, kernels, declines, [_decode(c) for c in constants]
    except Exception as e:  # noqa: BLE001 - a foreign entry: compile afresh
        log.info("capture cache entry %s has unreadable constants (%s: %s)", capture_key, type(e).__name__, e)
        return None


def write(capture_key: str, capture: Capture) -> bool:
    """Stores the capture if it is cacheable; returns whether it was."""
    if capture.cacheable and _guards_added_since_key():
        capture.refuse("AOTAutograd's trace added shape guards, which a hit would not install")
    _guards_at_key.set(None)
    if not capture.cacheable or capture.program is None:
        log.info("capture not cached: %s", capture.why_not or "no forward graph was compiled")
        return False
    from strata.runtime.graph_cache import write_program

    write_program(KIND, capture_key, capture.program, capture.kernels, capture.declines, capture.constants)
    return True


# Constant tensors AOTAutograd lifted out of the graph (GPT-2's empty key/value caches,
# torch.tensor([]) in transformers' DynamicCache) are a function of the captured
# graph's code, which is in the key: small ones are stored with the program.
_CONSTANT_ELEMENTS = 4096
_CONSTANT_DTYPES = {str(d): d for d in (torch.float64, torch.float32, torch.float16, torch.bfloat16, torch.int64,
                                         torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool)}


def keep_constants(capture: Capture, constants: Sequence[torch.Tensor]) -> None:
    """Stores the graph's constant tensors with the capture, or refuses it."""
    for c in constants:
        if (type(c) is not torch.Tensor or str(c.dtype) not in _CONSTANT_DTYPES or c.numel() > _CONSTANT_ELEMENTS
                or not c.is_contiguous() or c.storage_offset() or c.requires_grad):
            return capture.refuse("a constant tensor that is large, strided, of a subclass or of another dtype")
    from torch.utils._mode_utils import no_dispatch

    with no_dispatch():  # the compile runs under AOTAutograd's fake mode; these are real
        capture.constants = [{"dtype": str(c.dtype), "shape": list(c.shape), "device": str(c.device),
                              "values": c.detach().cpu().flatten().tolist()} for c in constants]


def _decode(c: dict) -> torch.Tensor:
    values = torch.tensor(c["values"], dtype=_CONSTANT_DTYPES[c["dtype"]])
    return values.reshape(c["shape"]).to(c["device"])


def as_dynamo_callable(boxed: Callable[[list], list]) -> Callable:
    """What AOTAutograd's inference wrapper does around a compiled graph that needs no
    other help: the arguments as a list, autocast off while it runs (the program's
    dtypes were fixed when it was traced)."""

    def run(*args: Any) -> list:
        if torch._C._is_any_autocast_enabled():
            with torch._C._DisableAutocast():
                return boxed(list(args))
        return boxed(list(args))

    return run
