"""Attention kept whole: `F.scaled_dot_product_attention` in an inference graph becomes
one op, `strata::sdpa`, before AOTAutograd sees it.

AOTAutograd traces sdpa through its composite implementation, into a device-specific
op (flash, memory-efficient or cuDNN attention on CUDA, each with its own extra
outputs) or, with Core ATen decompositions, into bmm, softmax and bmm. strata lowers
attention to `prim.sdpa`, a library call that runs torch's fused kernels, so the graph
Dynamo captured is rewritten first: each call with no dropout becomes `strata::sdpa`, a
custom op AOTAutograd leaves alone, unless its mask would send torch to its math
backend anyway (a mask whose last dim is strided): then it becomes torch's math
implementation, ops strata compiles and fuses. A training graph's calls are rewritten
by frontend/attention/attention_training.py.
"""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.fx
from torch.nn import functional as F

from strata.dialects.strata_ops import sdpa  # noqa: F401  (registers strata::sdpa, which the rewrite calls)


# The torch-level calls a Dynamo graph holds, and the ATen op an exported program holds.
_SDPA_TARGETS = (torch._C._nn.scaled_dot_product_attention, F.scaled_dot_product_attention,
                 torch.ops.aten.scaled_dot_product_attention.default)
_KEYWORDS = ("attn_mask", "dropout_p", "is_causal", "scale")


def is_training(example_inputs: list[Any]) -> bool:
    """Whether AOTAutograd will build a backward graph for these inputs."""
    return torch.is_grad_enabled() and any(isinstance(x, torch.Tensor) and x.requires_grad for x in example_inputs)


def _calls(gm: torch.fx.GraphModule):
    """(node, its arguments by name) for each sdpa call."""
    for n in list(gm.graph.nodes):
        if n.op == "call_function" and n.target in _SDPA_TARGETS:
            args = dict(zip(("query", "key", "value", *_KEYWORDS), n.args))
            args.update(n.kwargs)
            yield n, args


def keep_attention_whole(gm: torch.fx.GraphModule) -> int:
    """Rewrites each dropout-free sdpa call of an inference graph to strata::sdpa, or
    to its math form where the mask rules torch's fused kernels out; returns how many
    it rewrote."""
    rewritten = 0
    additive: dict[tuple[torch.fx.Node, torch.dtype], torch.fx.Node] = {}
    autocast = _autocast_dtypes(gm)
    for n, args in _calls(gm):
        if args.get("dropout_p", 0.0) != 0.0 or args.get("enable_gqa", False):
            continue
        _cast_as_autocast_would(gm, n, args, autocast.get(n, {}))
        if not all(isinstance(args.get(k), bool | float | None) for k in ("is_causal", "scale")):
            continue  # a traced value where a constant goes: leave it to torch
        if _mask_sends_torch_to_math(args.get("attn_mask")):
            _rewrite_as_math(gm, n, args)
            rewritten += 1
            continue
        mask = _shared_additive_mask(gm, args.get("attn_mask"), args["query"], additive)
        with gm.graph.inserting_before(n):
            new = gm.graph.call_function(
                torch.ops.strata.sdpa.default,
                (args["query"], args["key"], args["value"]),
                {"attn_mask": mask, "is_causal": bool(args.get("is_causal", False)), "scale": args.get("scale")},
            )
        _replace(gm, n, new)
        rewritten += 1
    if rewritten:
        gm.recompile()
    return rewritten


def _autocast_dtypes(gm: torch.fx.GraphModule) -> dict[torch.fx.Node, dict[str, torch.dtype | None]]:
    """The autocast dtype (None: autocast off) of each device type at each node: the
    state the graph was compiled in, changed by the autocast regions Dynamo recorded
    (_enter_autocast/_exit_autocast nodes)."""
    state = {d: torch.get_autocast_dtype(d) if torch.is_autocast_enabled(d) else None for d in ("cpu", "cuda")}
    saved: dict[torch.fx.Node, dict] = {}
    at: dict[torch.fx.Node, dict] = {}
    for n in gm.graph.nodes:
        if n.op == "call_function" and n.target is torch.amp.autocast_mode._enter_autocast:
            device, dtype, enabled = (list(n.args) + [None, None, True])[:3]
            saved[n] = dict(state)
            state[str(device)] = (dtype or torch.get_autocast_dtype(str(device))) if enabled else None
        elif n.op == "call_function" and n.target is torch.amp.autocast_mode._exit_autocast:
            state = saved.get(n.args[0], state)
        at[n] = dict(state)
    return at


def _cast_as_autocast_would(gm: torch.fx.GraphModule, n: torch.fx.Node, args: dict[str, Any], dtypes: dict) -> None:
    """Under autocast, sdpa casts its floating inputs (the mask too) to the autocast
    dtype; strata's ops are not autocast ops, so the graph casts them first."""
    q = _example(args["query"])
    target = dtypes.get(q.device.type) if isinstance(q, torch.Tensor) else None
    if target is None:
        return
    for name in ("query", "key", "value", "attn_mask"):
        x = args.get(name)
        value = _example(x)
        if isinstance(value, torch.Tensor) and value.is_floating_point() and value.dtype != target:
            with gm.graph.inserting_before(n):
                cast = gm.graph.call_method("to", (x, target))
            cast.meta["example_value"] = value.to(target)
            args[name] = cast


def _shared_additive_mask(gm: torch.fx.GraphModule, mask: Any, query: Any, made: dict) -> Any:
    """A boolean mask as the additive one torch's sdpa would make of it, made once for
    all the calls that share it. torch converts a boolean mask on every call (a fill,
    a logical_not and a masked_fill: three launches a layer, 36 in GPT-2); in the graph
    the conversion is one kernel, fused with the ops that build the mask."""
    value, dtype = _example(mask), _example(query)
    if not isinstance(value, torch.Tensor) or value.dtype != torch.bool or not isinstance(dtype, torch.Tensor):
        return mask
    key = (mask, dtype.dtype)
    if key not in made:
        with gm.graph.inserting_after(mask):
            made[key] = gm.graph.call_function(additive_mask_of_dtype, (mask, dtype.dtype))
        made[key].meta["example_value"] = additive_mask_of_dtype(value, dtype.dtype)  # a fake tensor, as Dynamo's
    return made[key]


def _example(node: Any) -> Any:
    return node.meta.get("example_value", node.meta.get("val")) if isinstance(node, torch.fx.Node) else None


def _mask_sends_torch_to_math(mask: Any) -> bool:
    """Whether torch's sdpa would run this mask through its math backend: a mask
    whose last dim is not contiguous (a padding mask expanded over the queries, as
    transformers builds one under tracing: strides (0, S, 1, 0)) keeps every fused
    kernel out. Its math backend is then a dozen eager kernels (in f32 for bf16
    inputs); the same ops compiled by strata are two matmuls and one softmax kernel
    that takes the mask with it (H200, BERT-base bf16: attention was half the call)."""
    value = _example(mask) if isinstance(mask, torch.fx.Node) else mask
    if not isinstance(value, torch.Tensor) or value.dim() == 0:
        return False
    return value.stride(-1) != 1


def _rewrite_as_math(gm: torch.fx.GraphModule, n: torch.fx.Node, args: dict[str, Any]) -> None:
    kwargs = {k: args[k] for k in ("attn_mask", "dropout_p", "is_causal") if k in args}
    if args.get("scale") is not None:
        kwargs["scale"] = args["scale"]
    if args.get("enable_gqa"):
        kwargs["enable_gqa"] = True
    with gm.graph.inserting_before(n):
        if kwargs.get("attn_mask") is not None:
            kwargs["attn_mask"] = gm.graph.call_function(additive_mask, (kwargs["attn_mask"], args["query"]))
        math = gm.graph.call_function(
            torch.ops.aten._scaled_dot_product_attention_math.default, (args["query"], args["key"], args["value"]), kwargs
        )
        out = gm.graph.call_function(operator.getitem, (math, 0))
    _replace(gm, n, out)


def additive_mask(mask: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
    """A boolean mask (True: attend) as the additive one (0 or -inf, in the query's
    dtype) that the math implementation expects: sdpa converts it before choosing a
    kernel, and `_scaled_dot_product_attention_math` given a boolean mask computes
    something else. A float mask is already additive."""
    return additive_mask_of_dtype(mask, query.dtype)


def additive_mask_of_dtype(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    if mask.dtype != torch.bool:
        return mask
    return torch.zeros_like(mask, dtype=dtype).masked_fill(mask.logical_not(), float("-inf"))


def _replace(gm: torch.fx.GraphModule, old: torch.fx.Node, new: torch.fx.Node) -> None:
    new.meta = dict(old.meta)
    old.replace_all_uses_with(new)
    gm.graph.erase_node(old)
