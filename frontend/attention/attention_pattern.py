"""Attention written out by hand in a training graph, recognized: `softmax(q @ kᵀ · s
[causal mask]) @ v` becomes one `F.scaled_dot_product_attention` call in the graph
Dynamo captured.

An inference graph's attention is recognized at the aten level, by the pass
recognize-attention (passes/recognize_attention.py), where strata-opt and FileCheck see
it. A training graph's cannot be: AOTAutograd derives the backward from the program it
is given, and the gradient of a written-out attention is written out too; only an sdpa
call in that program gets the fused backward (attention_training.py). So this rewrite of
Dynamo's graph, before AOTAutograd, runs for training graphs only (frontend/backend.py).

Code that spells attention out (nanoGPT-style blocks, older model code) gives the graph
two matmuls and a softmax over an [L, S] matrix of scores that goes through memory
between them. As one sdpa call it runs torch's fused kernels (the blocked flash kernel
on the CPU, flash or memory-efficient attention on CUDA), which never build that matrix
and, for a causal mask, skip the masked half; from there frontend/attention/attention.py (or
attention_training.py) turns it into strata's attention ops like any other sdpa call.

What is recognized, and why it is the same function:

- `C = Q @ KT` with Q [..., L, E], KT [..., E, S] of equal batch dims (4-D: the rank
  torch's fused kernels take), and `V` [..., S, Ev] with the same batch dims;
- scores `A = C / s`, `C * s` or `C` itself (sdpa's `scale` = 1/s, s, 1.0);
- optionally `A.masked_fill(M, -inf)` where M is provably the complement of
  `ones(L, S).tril()` (`~T`, `T.logical_not()` or `T == 0` of that T): exactly sdpa's
  `is_causal=True` (whose mask is `ones(L, S).tril(diagonal=0)`); no row is fully
  masked, so no row's softmax is a NaN that sdpa would compute otherwise. Any other
  mask (a tensor input, another diagonal, an additive mask) is left alone;
- `softmax` over the last dim with no dtype, then (optionally) dropout with
  training=False, then `@ V`;
- each intermediate used only by the next step (attention weights returned or reused
  elsewhere keep the pattern whole);
- under autocast, only where the pattern's result has the dtype sdpa's would have.

The result differs from the written-out form only by rounding: the product is scaled
inside the kernel (q·k·(1/s) rather than q·k/s) and the softmax is computed blockwise
in f32 (closer to exact than bf16 scores rounded before a softmax).
"""

from __future__ import annotations

import math
import operator
from typing import Any

import torch
import torch.fx
from torch.fx.experimental.symbolic_shapes import statically_known_true
from torch.nn import functional as F

from strata.frontend.attention.attention import _autocast_dtypes, _example

# Call targets by what they compute: Dynamo records a method call, a torch function or
# an operator, as the user wrote it (and, by torch version, `a == b` as operator.eq or
# as the method __eq__).
_FUNCTIONS: dict[Any, str] = {
    operator.matmul: "matmul",
    torch.matmul: "matmul",
    operator.truediv: "div",
    torch.div: "div",
    torch.true_divide: "div",
    operator.mul: "mul",
    torch.mul: "mul",
    torch.softmax: "softmax",
    F.softmax: "softmax",
    torch.masked_fill: "masked_fill",
    torch.tril: "tril",
    torch.ones: "ones",
    operator.invert: "logical_not",
    torch.logical_not: "logical_not",
    torch.bitwise_not: "logical_not",
    operator.eq: "eq",
    torch.eq: "eq",
    F.dropout: "dropout",
}
_METHODS = {"matmul": "matmul", "div": "div", "true_divide": "div", "mul": "mul", "softmax": "softmax",
            "masked_fill": "masked_fill", "tril": "tril", "logical_not": "logical_not",
            "bitwise_not": "logical_not", "eq": "eq", "__invert__": "logical_not", "__eq__": "eq",
            "__matmul__": "matmul", "__truediv__": "div", "__mul__": "mul", "__rmul__": "mul"}
# Parameter names, in order, of each op as recognized (the first is the tensor).
_PARAMS = {
    "matmul": ("input", "other"), "div": ("input", "other", "rounding_mode"), "mul": ("input", "other"),
    "softmax": ("input", "dim", "_stacklevel", "dtype"), "masked_fill": ("input", "mask", "value"),
    "tril": ("input", "diagonal"), "logical_not": ("input",), "eq": ("input", "other"),
    "dropout": ("input", "p", "training", "inplace"),
}
_DEFAULTS = {"rounding_mode": None, "dtype": None, "diagonal": 0, "p": 0.5, "training": True, "inplace": False}


def _op(n: Any) -> tuple[str | None, dict[str, Any]]:
    """(what the node computes, its arguments by name), or (None, {}) for anything else."""
    if not isinstance(n, torch.fx.Node):
        return None, {}
    if n.op == "call_function":
        name = _FUNCTIONS.get(n.target)
    elif n.op == "call_method":
        name = _METHODS.get(n.target)
    else:
        name = None
    if name is None:
        return None, {}
    if name == "ones":
        return name, dict(n.kwargs)
    if name == "softmax" and n.target is not F.softmax:
        params = ("input", "dim", "dtype")  # only F.softmax has a _stacklevel
    else:
        params = _PARAMS[name]
    if len(n.args) > len(params) or any(k not in params for k in n.kwargs):
        return None, {}
    args = {**{p: _DEFAULTS[p] for p in params if p in _DEFAULTS}, **dict(zip(params, n.args)), **n.kwargs}
    if name == "mul" and not isinstance(args["input"], torch.fx.Node):
        args["input"], args["other"] = args["other"], args["input"]  # s * C
    return name, args


def _only_user(n: torch.fx.Node) -> torch.fx.Node | None:
    users = list(n.users)
    return users[0] if len(users) == 1 else None


def _same(a: Any, b: Any) -> bool:
    return a == b if isinstance(a, int) and isinstance(b, int) else statically_known_true(a == b)


def _same_sizes(a: torch.Size, b: torch.Size) -> bool:
    return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))


def _causal_mask_nodes(mask: Any, scores: torch.Tensor) -> list[torch.fx.Node] | None:
    """The nodes that build `mask` (last first) where it is True exactly above the
    diagonal of `scores`' last two dims, the complement of `ones(L, S).tril()` (any
    leading dims of size 1); None for any other mask."""
    name, args = _op(mask)
    if name == "logical_not":
        tri, want_bool = args["input"], True
    elif name == "eq" and isinstance(args["other"], int | float) and not isinstance(args["other"], bool) and args["other"] == 0:
        tri, want_bool = args["input"], False
    else:
        return None
    name, args = _op(tri)
    if name != "tril" or args["diagonal"] != 0:
        return None
    ones = args["input"]
    if _op(ones)[0] != "ones":
        return None
    value = _example(ones)
    if not isinstance(value, torch.Tensor) or value.dim() < 2 or value.device != scores.device:
        return None
    if want_bool and value.dtype != torch.bool:
        return None  # `~` of a number is a bitwise not, not a mask
    fits = (
        value.dim() <= scores.dim()
        and all(_same(d, 1) for d in value.shape[:-2])
        and _same_sizes(value.shape[-2:], scores.shape[-2:])
    )
    return [mask, tri, ones] if fits else None


def _scale(name: str | None, args: dict[str, Any]) -> float | None:
    """sdpa's scale for scores made by `name`, or None where they are not a scaling."""
    other = args.get("other")
    if isinstance(other, bool) or not isinstance(other, int | float) or not math.isfinite(other) or other == 0:
        return None
    if name == "div" and args["rounding_mode"] is None:
        return 1.0 / other
    if name == "mul":
        return float(other)
    return None


def _match(out: torch.fx.Node, autocast: dict) -> tuple[dict[str, Any], list[torch.fx.Node]] | None:
    """The sdpa call that computes `out` (q, k-transposed, v, is_causal, scale) and the
    nodes it replaces, or None."""
    name, args = _op(out)
    if name != "matmul":
        return None
    weights, v = args["input"], args["other"]
    chain = [out]
    name, args = _op(weights)
    if name == "dropout":
        if args["training"] is not False or args["inplace"] or _only_user(weights) is not out:
            return None
        chain.append(weights)
        weights = args["input"]
        name, args = _op(weights)
    if name != "softmax" or args["dtype"] is not None or _only_user(weights) is not chain[-1]:
        return None
    chain.append(weights)
    scores = args["input"]
    dim = args["dim"]
    name, args = _op(scores)
    causal = False
    if name == "masked_fill":
        if not (isinstance(args["value"], float) and args["value"] == -math.inf) or _only_user(scores) is not chain[-1]:
            return None
        chain.append(scores)
        mask, scores = args["mask"], args["input"]
        causal = True
        name, args = _op(scores)
    scale = 1.0
    if name in ("div", "mul"):
        scale = _scale(name, args)
        if scale is None or _only_user(scores) is not chain[-1]:
            return None
        chain.append(scores)
        product = args["input"]
    else:
        product = scores
    name, args = _op(product)
    if name != "matmul" or _only_user(product) is not chain[-1]:
        return None
    chain.append(product)
    q, kt = args["input"], args["other"]
    qv, ktv, vv, sv, ov = (_example(x) for x in (q, kt, v, scores, out))
    if not all(isinstance(t, torch.Tensor) for t in (qv, ktv, vv, sv, ov)):
        return None
    if not (qv.dim() == ktv.dim() == vv.dim() == 4) or not isinstance(dim, int) or dim not in (-1, 3):
        return None
    if not (qv.dtype == ktv.dtype == vv.dtype) or qv.dtype not in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
        return None
    if not (qv.device == ktv.device == vv.device):
        return None
    batch = qv.shape[:-2]
    if not (_same_sizes(ktv.shape[:-2], batch) and _same_sizes(vv.shape[:-2], batch)):
        return None
    if not (_same(qv.shape[-1], ktv.shape[-2]) and _same(ktv.shape[-1], vv.shape[-2])):
        return None
    made = _causal_mask_nodes(mask, sv) if causal else []
    if made is None:
        return None
    wanted = autocast.get(out, {}).get(qv.device.type) or qv.dtype
    if ov.dtype != wanted:
        return None  # autocast would give sdpa's result another dtype
    return {"q": q, "kt": kt, "v": v, "is_causal": causal, "scale": scale, "mask": made}, chain


def recognize_attention(gm: torch.fx.GraphModule) -> int:
    """Rewrites each written-out attention of a training graph to one sdpa call;
    returns how many it rewrote."""
    autocast = _autocast_dtypes(gm)
    rewritten = 0
    for n in list(gm.graph.nodes):
        found = _match(n, autocast)
        if found is None:
            continue
        call, chain = found
        with gm.graph.inserting_before(n):
            k = gm.graph.call_method("transpose", (call["kt"], -2, -1))
            k.meta["example_value"] = _example(call["kt"]).transpose(-2, -1)
            sdpa = gm.graph.call_function(
                F.scaled_dot_product_attention,
                (call["q"], k, call["v"]),
                {"attn_mask": None, "dropout_p": 0.0, "is_causal": call["is_causal"], "scale": call["scale"]},
            )
        sdpa.meta = dict(n.meta)
        n.replace_all_uses_with(sdpa)
        for old in chain + call["mask"]:  # each unused once the one before it is gone
            if not old.users:
                gm.graph.erase_node(old)
        rewritten += 1
    if rewritten:
        gm.recompile()
    return rewritten
